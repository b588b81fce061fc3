"""Every page's answer time in a big organisation: `python -m bench.pages --json`.

The goal (issue 22): every page's first byte in under 300 ms with 100 runs and 100,000
transcripts in the organisation. A fresh PostgreSQL database gets the scale benchmark's
definition (1,000 scenarios) and a fork of it, then `--runs` runs spread over the two versions
holding `--transcripts` transcripts in all, each with two judges' readings and their consensus,
written by the real write path (bench/analysis_memory.fill_run), and marked completed as a
worker would leave them. The first run's analyses are computed and stored (as the finalize job
does). The server is `valuerank serve --no-work` in a child process on 127.0.0.1; the client
signs in as a person does (`/?token=`) and loads each page once cold and `--warm` times; only
the time to the first byte of the answer is measured (headers and the first body chunk), not
the browser's rendering. Every answer must be 200 and HTML.

    python -m bench.pages --json [--runs 100 --transcripts 100000 --warm 10]

Seeding takes about 15 minutes; `--keep NAME` keeps the seeded database under that name and
reuses it on the next run with the same name (its description is stored in a `bench_seed`
table inside it), so a change to a page can be measured again in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg

from bench.analysis_memory import BASE_URL, fill_run
from bench.analysis_page import SERVE, TOKEN, latency_summary
from bench.pg import libpq
from bench.scale import definition_md, fresh_database
from bench.server import start_server

BUDGET_MS = 300.0


async def seed(url: str, n_runs: int, n_transcripts: int) -> dict[str, Any]:
    """The organisation: two versions, `n_runs` completed runs, the first one analysed."""
    from sqlalchemy import select, update

    from valuerank.accounts import Role, add_member, create_token
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.db.tables import runs, transcripts
    from valuerank.definitions.service import fork_definition, import_definition
    from valuerank.findings.analyses import run_analysis
    from valuerank.orgs import ensure_org

    db = create_database(url)
    started = time.perf_counter()
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org_id = await ensure_org(conn, "default")
            admin = await add_member(conn, org_id, "bench@example.test", Role.ADMIN)
            await create_token(conn, org_id, admin.user.id, name="bench", token=TOKEN)
            root, _ = await import_definition(conn, org_id, definition_md())
            fork = await fork_definition(conn, org_id, root.version.id)  # a copy: v1.1
        versions = (root.version.id, fork.version.id)
        per_run = max(1, n_transcripts // n_runs)
        run_ids = []
        for i in range(n_runs):
            filled = await fill_run(db, org_id, versions[i % 2], per_run, 2, name=f"run {i + 1}")
            run_ids.append(filled["run_id"])
        async with db.transaction() as conn:
            # What a worker leaves behind; the jobs themselves do not matter to the pages.
            await conn.execute(
                update(runs).where(runs.c.id.in_(run_ids)).values(status="completed")
            )
        await run_analysis(db, org_id, run_ids[0], deep=False)
        async with db.transaction() as conn:
            first = (
                await conn.execute(
                    select(transcripts.c.id, transcripts.c.scenario_id)
                    .where(transcripts.c.run_id == run_ids[0])
                    .limit(1)
                )
            ).one()
        transcript_id, scenario_id = first.id, first.scenario_id
    finally:
        await db.dispose()
    return {
        "org_id": org_id,
        "runs": n_runs,
        "transcripts": per_run * n_runs,
        "root": versions[0],
        "fork": versions[1],
        "run": run_ids[0],
        "transcript": transcript_id,
        "scenario": scenario_id,
        "seed_seconds": round(time.perf_counter() - started, 1),
    }


@contextlib.contextmanager
def kept_database(base_url: str, name: str) -> Iterator[str]:
    """The database `name` on the server of `base_url`, created if missing and never dropped."""
    base = libpq(base_url)
    with psycopg.connect(base, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    head, _, tail = base_url.rpartition("/")
    query = "?" + tail.split("?", 1)[1] if "?" in tail else ""
    yield f"{head}/{name}{query}"


def stored_seed(url: str) -> tuple[dict[str, Any], str] | None:
    """The kept database's description and its API token (None: not seeded yet)."""
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_seed (seeded jsonb NOT NULL, token text NOT NULL)"
        )
        row = conn.execute("SELECT seeded, token FROM bench_seed").fetchone()
    return (row[0], row[1]) if row else None


def vacuum(url: str) -> None:
    """What autovacuum does on a server that runs it (CI's PostgreSQL runs without): the
    seeding leaves ~43,000 dead versions of the runs' rows (every transcript bumps its run's
    inputs_version) and no planner statistics."""
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def store_seed(url: str, seeded: dict[str, Any]) -> None:
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO bench_seed (seeded, token) VALUES (%s, %s)", (json.dumps(seeded), TOKEN)
        )


def pages(seeded: dict[str, Any]) -> dict[str, str]:
    """Every page a signed-in researcher opens, by name."""
    run, root, fork = seeded["run"], seeded["root"], seeded["fork"]
    return {
        "runs": "/",
        "run": f"/runs/{run}",
        "new run": "/runs/new",
        "transcripts": "/transcripts",
        "transcripts of a run": f"/transcripts?run={run}",
        "transcript search": "/transcripts?q=friendship",
        "transcript": f"/transcripts/{seeded['transcript']}",
        "analysis": f"/runs/{run}/analysis",
        "matrix": f"/runs/{run}/matrix",
        "scenario answers": f"/runs/{run}/scenarios/{seeded['scenario']}",
        "definitions": "/definitions",
        "definition": f"/definitions/{fork}",
        "diff": f"/definitions/{root}/diff?to={fork}",
        "compare": "/compare",
        "lineage": f"/compare/lineage/{fork}",
        "queue": "/queue",
        "validation": "/validation",
        "settings": "/settings",
    }


def first_byte_ms(client: httpx.Client, path: str) -> float:
    started = time.perf_counter()
    with client.stream("GET", path) as answer:
        body = answer.iter_raw()
        next(body, b"")
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status_code != 200 or "text/html" not in answer.headers.get("content-type", ""):
            raise RuntimeError(f"{path}: answered {answer.status_code}")
        for _ in body:  # the rest of the page, so the connection is reused
            pass
    return elapsed


def measure(base: str, seeded: dict[str, Any], warm: int, token: str) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with httpx.Client(base_url=base, headers={"Accept": "text/html"}, timeout=120) as client:
        login = client.get("/", params={"token": token})
        if login.status_code != 303:
            raise RuntimeError(f"signing in answered {login.status_code}")
        for name, path in pages(seeded).items():
            cold = first_byte_ms(client, path)
            summary = latency_summary([first_byte_ms(client, path) for _ in range(warm)])
            results[name] = {
                "path": path,
                "cold_ms": round(cold, 1),
                **summary,
                "ratio_to_budget": round(summary["p95_ms"] / BUDGET_MS, 3),
            }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--transcripts", type=int, default=100_000)
    parser.add_argument("--warm", type=int, default=10, help="warm loads measured per page")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--keep", metavar="NAME", help="keep the seeded database under NAME and reuse it"
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    database = kept_database(BASE_URL, args.keep) if args.keep else fresh_database(BASE_URL)
    with database as url:
        kept = stored_seed(url) if args.keep else None
        if kept is None:
            seeded, token = asyncio.run(seed(url, args.runs, args.transcripts)), TOKEN
            vacuum(url)
            if args.keep:
                store_seed(url, seeded)
        else:
            seeded, token = kept
        env = {
            **os.environ,
            "VALUERANK_DATABASE_URL": url,
            "VALUERANK_RATE_LIMITS_ENABLED": "false",
        }
        child, base = start_server(
            lambda port: [sys.executable, "-c", SERVE, str(port), seeded["org_id"]], env
        )
        try:
            figures = measure(base, seeded, args.warm, token)
        finally:
            child.terminate()
            child.wait(timeout=30)
    slowest = max(figures.items(), key=lambda item: item[1]["p95_ms"])
    report = {
        "benchmark": "pages",
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
        },
        "organisation": seeded,
        "budget_ms": BUDGET_MS,
        "pages": figures,
        "slowest": {"page": slowest[0], "p95_ms": slowest[1]["p95_ms"]},
        "over_budget": sorted(n for n, f in figures.items() if f["p95_ms"] > BUDGET_MS),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, f in figures.items():
            print(
                f"{name:22} p50 {f['p50_ms']:7.1f} ms  p95 {f['p95_ms']:7.1f} ms  "
                f"cold {f['cold_ms']:7.1f} ms  ×budget {f['ratio_to_budget']:.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
