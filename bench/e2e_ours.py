"""Our side of `bench.e2e`: a whole run through the `valuerank` CLI, as users run it.

`definitions import` (not timed), then timed `runs create … --followup-turns 0` (with
`--judge MODEL` in the judged configuration) and, on SQLite, `runs wait RUN --work` (one
process); on PostgreSQL (a fresh schema each time) `runs create` then `workers` processes of
`valuerank worker --burst -c K`. The durable result is the database: a run, one probe job
and one transcript per prompt (and one judgment per transcript when judged).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.e2e_proc import Measured, run_measured

PG_URL = os.environ.get("VALUERANK_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
INSTANT_MODEL = "scripted:utilitarian?latency_ms=0"
# A chat model name: Inspect sends unknown (frontier) names to the Responses API.
FAKE_MODEL = "gpt-4.1-mini"


def bin_path(name: str) -> list[str]:
    """A console script installed next to this interpreter (the `bench` extra's, ours)."""
    found = Path(sys.executable).parent / name
    if not found.exists():
        raise SystemExit(
            f"{name} is not installed next to {sys.executable}: "
            'pip install -e ".[bench]" into the interpreter that runs bench.e2e'
        )
    return [str(found)]


def check_exit(m: Measured) -> None:
    if m.returncode != 0:
        raise RuntimeError(
            f"{' '.join(m.argv[:4])} … exited {m.returncode}:\n{m.stderr[-3000:]}{m.stdout[-1000:]}"
        )


def _sqlite_has_row(path: Path, table: str) -> Callable[[], bool]:
    def probe() -> bool:
        if not path.exists():
            return False
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None

    return probe


def _pg_has_row(schema: str, table: str) -> Callable[[], bool]:
    import psycopg

    def probe() -> bool:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            row = conn.execute(f'SELECT 1 FROM "{schema}".{table} LIMIT 1').fetchone()
            return row is not None

    return probe


def _query(url: str, schema: str | None, sql: str) -> Any:
    """One value from our database (`{}` in `sql` stands for the schema prefix)."""
    if schema is None:
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute(sql.format("")).fetchone()[0]
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        row = conn.execute(sql.format(f'"{schema}".')).fetchone()
    return None if row is None else row[0]


def last_finished(url: str, schema: str | None, kind: str) -> float | None:
    """When our last job of `kind` finished (Unix time, the database's clock)."""
    value = _query(url, schema, f"SELECT max(finished_at) FROM {{}}jobs WHERE kind = '{kind}'")
    if value is None:
        return None
    if isinstance(value, str):  # SQLite stores naive UTC ISO text
        return datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp()
    return float(value.timestamp())


def run_ours(
    n: int,
    definition: Path,
    work: Path,
    env: dict[str, str],
    server_url: str | None,
    k: int | None,
    database: str,
    workers: int = 1,
    judged: bool = False,
) -> tuple[Measured, Measured, dict[str, Any]]:
    """Run it; (the `runs create` measure, the work's measure, what was stored and when)."""
    env = dict(env)
    schema = None
    table = "judgments" if judged else "transcripts"  # the first durable result
    if database == "sqlite":
        db_path = work / f"vr-{uuid.uuid4().hex[:8]}.db"
        env["VALUERANK_DATABASE_URL"] = f"sqlite:///{db_path}"
        first = _sqlite_has_row(db_path, table)
    else:
        import psycopg

        schema = f"vr_e2e_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_URL, autocommit=True) as c:
            c.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in PG_URL else "?"
        env["VALUERANK_DATABASE_URL"] = f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"
        first = _pg_has_row(schema, table)
    if k is not None:
        env["VALUERANK_WORKER_CONCURRENCY"] = str(k)
    if server_url is not None:
        env["VALUERANK_OPENAI_BASE_URL"] = server_url
    vr = bin_path("valuerank")

    def setup(*argv: str) -> Any:
        done = subprocess.run([*vr, *argv], env=env, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"valuerank {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
        return json.loads(done.stdout) if "--json" in argv else None

    try:
        if database != "sqlite":
            setup("db", "upgrade")  # PostgreSQL is migrated by its operator, SQLite on first use
        definition_id = setup("definitions", "import", str(definition), "--json")["id"]
        model = INSTANT_MODEL if server_url is None else f"openai:{FAKE_MODEL}"
        started, started_wall = time.monotonic(), time.time()
        create_argv = ["runs", "create", "-d", definition_id, "-m", model, "--json"]
        create_argv += ["--followup-turns", "0", "--sample-seed", "1", "--allow-unknown-model"]
        if judged:
            create_argv += ["--judge", model]
        create = run_measured([*vr, *create_argv], env=env, cwd=work)
        check_exit(create)
        run_id = json.loads(create.stdout)["id"]
        if database == "sqlite":
            argv = [*vr, "runs", "wait", run_id, "--work", "--json"]
        else:
            one = [*vr, "worker", "--burst", "--json"] + ([] if k is None else ["-c", str(k)])
            argv = ["sh", "-c", " & ".join([" ".join(one)] * workers) + " & wait"]
        work_m = run_measured(argv, env=env, cwd=work, first_result=first, started=started)
        check_exit(work_m)
        report = setup("runs", "status", run_id, "--json")
        progress = report["progress"]
        if report["status"] != "completed" or progress["completed"] != n:
            raise RuntimeError(f"our run ended {report['status']} with {progress}")
        url = env["VALUERANK_DATABASE_URL"]
        stored: dict[str, Any] = {"status": report["status"], "transcripts": progress["completed"]}
        if judged:
            stored["judgments"] = _query(url, schema, "SELECT count(*) FROM {}judgments")
            if stored["judgments"] != n:
                raise RuntimeError(f"our run stored {stored['judgments']} judgments, not {n}")
        last_at = last_finished(url, schema, "judge" if judged else "probe")
        stored["last_s"] = None if last_at is None else last_at - started_wall
        return create, work_m, stored
    finally:
        if schema is not None:
            import psycopg

            with psycopg.connect(PG_URL, autocommit=True) as c:
                c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
