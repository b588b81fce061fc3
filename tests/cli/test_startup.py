"""Start-up: the CLI and the worker's pipeline load without the statistics and the web API
(numpy/scipy/scikit-learn/statsmodels/matplotlib/FastAPI cost seconds and ~150 MB), which
only `analyze`, `compare`, `serve` and the analysis jobs need to compute; and those still get
them. A cached `analyze` (the stored result, as JSON or tables) loads none of them.
`valuerank runs status` also starts without Alembic, the job handlers, the worker, the
launch of runs, the finalize step and the file formats."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import valuerank
from valuerank.db import create_database
from valuerank.db.migrate import upgrade

from .conftest import Invoke

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")
HEAVY = ("numpy", "scipy", "sklearn", "statsmodels", "matplotlib", "pandas", "fastapi")
# What a short command that reads a run does not need: Alembic (0.15–0.3 s; the schema check
# reads the version table), psycopg on SQLite (0.1 s), the job handlers (only `runs wait
# --work` runs jobs), the definitions' expansion and the launch's checks and estimate (only
# creating a run needs them), the finalize step (only a stalled run gets one), YAML and the
# file formats (only their errors are caught), the webhooks' outbox and signing, the
# maintenance schedule, and urllib (only a command asking a server sends requests).
NOT_FOR_STATUS = (
    *HEAVY,
    "alembic",
    "psycopg",
    "valuerank.pipeline.handlers",
    "valuerank.pipeline.probe",
    "valuerank.cli.worker_settings",
    "valuerank.definitions.expansion",
    "valuerank.definitions.service",
    "valuerank.pipeline.launch",
    "valuerank.pipeline.finalize",
    "valuerank.credentials.store",
    "valuerank.queue.outbox",
    "valuerank.queue.maintenance_schedule",
    "valuerank.crypto",
    "urllib.request",
    "yaml",
    "valuerank.formats.transcript_md",
)
# …nor, until it reads the settings, `limits` (~20 ms): their rates are validated with it,
# the defaults too (pydantic-settings validates defaults), so the command itself loads it.
NOT_AT_IMPORT = (*NOT_FOR_STATUS, "limits")


def _loaded(
    code: str, modules: tuple[str, ...] = HEAVY, env: Mapping[str, str] | None = None
) -> list[str]:
    report = f"print(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_the_cli_and_the_pipeline_start_without_the_statistics_or_the_api() -> None:
    assert _loaded("import valuerank.cli, valuerank.pipeline.handlers") == []


def test_the_commands_and_jobs_that_analyse_load_them_when_they_run() -> None:
    loaded = _loaded(
        "from valuerank.cli.analyze_cmd import _plots\n"
        "import tempfile, pathlib\n"
        "_plots({}, pathlib.Path(tempfile.mkdtemp()))\n"
        "from valuerank.pipeline import analyze\n"
        # What computing a run's analysis imports (a cached one does not: below).
        "from valuerank.analysis import analyze_basic"
    )
    assert {"numpy", "scipy", "matplotlib"} <= set(loaded)
    # scikit-learn only with the deep analysis (agreement, structure), which these do not run.
    assert "sklearn" not in loaded


def test_runs_status_starts_without_alembic_or_the_job_handlers(tmp_path: Path) -> None:
    # Its module, imported to show its help.
    help_ = (
        "from typer.testing import CliRunner\n"
        "from valuerank.cli import app\n"
        "assert CliRunner().invoke(app, ['runs', 'status', '--help']).exit_code == 0"
    )
    assert _loaded(help_, NOT_AT_IMPORT) == []
    # …nor loads them when it runs: the schema check on a database at the head, then the
    # run's lookup (an unknown run here: NOT_FOUND, after both).
    url = f"sqlite:///{tmp_path / 'valuerank.db'}"

    async def _migrate() -> None:
        db = create_database(url)
        try:
            await upgrade(db)
        finally:
            await db.dispose()

    asyncio.run(_migrate())
    status = (
        "from typer.testing import CliRunner\n"
        "from valuerank.cli import app\n"
        "out = CliRunner().invoke(app, ['runs', 'status', 'no-such-run', '--json']).output\n"
        "assert 'NOT_FOUND' in out, out"
    )
    env = {**os.environ, "VALUERANK_DATABASE_URL": url}
    assert _loaded(status, NOT_FOR_STATUS, env) == []


def test_a_cached_analysis_is_shown_without_the_statistics(
    cli: Invoke, database_url: Any, tmp_path: Path
) -> None:
    # A small run without judges, analysed once (basic and deep): the cache is then current.
    definition = str(cli("definitions", "import", DEMO, "--json").json()["id"])
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "20", "--followup-turns", "0", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.stdout
    run_id = str(created.json()["id"])
    assert cli("runs", "wait", run_id, "--work", "--timeout", "120", "--json").exit_code == 0
    computed = cli("analyze", run_id, "--deep", "--json")  # the basic one by the run's job
    assert computed.exit_code == 0 and computed.json()["deep_cached"] is False

    env = {**os.environ, "VALUERANK_DATABASE_URL": database_url.url}
    for args in ([run_id, "--json"], [run_id, "--deep", "--json"], [run_id, "--deep"]):
        shown = (
            "from typer.testing import CliRunner\n"
            "from valuerank.cli import app\n"
            f"out = CliRunner().invoke(app, ['analyze', *{args!r}]).output\n"
            "assert 'Value sensitivity' in out or '\"cached\": true' in out, out"
        )
        assert _loaded(shown, HEAVY, env) == [], args
    # A report draws its figures once and keeps them: the next one, in a new process, draws
    # nothing and needs no matplotlib.
    first = cli("report", run_id, "-o", str(tmp_path / "first.html"), "--json")
    assert first.exit_code == 0, first.stdout
    again = tmp_path / "again.html"
    reported = (
        "from typer.testing import CliRunner\n"
        "from valuerank.cli import app\n"
        f"result = CliRunner().invoke(app, ['report', {run_id!r}, '-o', {str(again)!r}])\n"
        "assert result.exit_code == 0, result.output"
    )
    assert _loaded(reported, HEAVY, env) == []
    figures = 'aria-label="Value sensitivity'
    assert figures in again.read_text() and figures in (tmp_path / "first.html").read_text()
    # …and computing still loads them (the same command, forced).
    forced = (
        "from typer.testing import CliRunner\n"
        "from valuerank.cli import app\n"
        f"out = CliRunner().invoke(app, ['analyze', {run_id!r}, '--force', '--json']).output\n"
        "assert '\"cached\": false' in out, out"
    )
    assert {"numpy", "scipy", "statsmodels"} <= set(_loaded(forced, HEAVY, env))
