"""`valuerank runs …` end to end on both backends, with scripted models and an in-process
worker (`runs wait --work`); the commands that create, watch and steer runs both ways: on the
database and through a live server (`cli_both`, whose workers run the jobs there)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.api.conftest import make_demo_run

import valuerank
from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.refs import short_id

from .conftest import Invoke
from .runs_both_ways import demo_definition, through_a_server, work_here

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


def _definition(cli: Invoke) -> str:
    out = cli("definitions", "import", DEMO, "--json")
    assert out.exit_code == 0, out.stderr
    return str(out.json()["id"])


@pytest.fixture
async def definition(db: Database, org_id: str) -> str:
    return await demo_definition(db, org_id)


@pytest.mark.server_worker
def test_create_wait_status_results(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    created = cli(
        "runs", "create", "--definition", definition,
        "--model", "scripted:utilitarian", "--model", "scripted:contrarian",
        "--sample-percentage", "15", "--followup-turns", "0", "--priority", "high", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    data = created.json()
    assert data["scenarios"] == 4 and data["total_scenarios"] == 27 and data["jobs"] == 8
    assert data["enqueued"] == 8 and data["status"] == "running"
    assert data["estimate"]["cost_usd"] == 0.0  # scripted models are free
    run_id = data["id"]

    waited = cli("runs", "wait", short_id(run_id), *work_here(), "--timeout", "60", "--json")
    assert waited.exit_code == 0, waited.stderr
    assert waited.json()["status"] == "completed"
    status = cli("runs", "status", run_id, "--json").json()
    # `wait` prints the run's report: what `status` prints, without its results and rubric.
    assert waited.json() == {k: v for k, v in status.items() if k in waited.json()}
    assert set(status) >= {"id", "status", "progress", "cost_usd"}
    assert status["progress"] == {
        "total": 8,
        "queued": 0,
        "running": 0,
        "completed": 8,
        "failed": 0,
        "cancelled": 0,
    }
    results = cli("runs", "results", run_id, "--json").json()["results"]
    assert [r["model"] for r in results] == ["scripted:contrarian", "scripted:utilitarian"]
    assert all(r["decided"] == 4 and r["synthetic"] for r in results)
    listed = cli("runs", "list", "--json").json()
    assert [r["id"] for r in listed] == [run_id]
    shown = cli("runs", "wait", run_id)
    assert shown.exit_code == 0 and f"run {short_id(run_id)} completed" in shown.stdout

    # An ended run is not started again (nor, through the server, rerun).
    again = cli("runs", "start", run_id, "--json")
    assert again.exit_code == 1 and again.json()["code"] == "CONFLICT"
    assert "is completed: cannot start" in again.json()["error"]
    assert cli("runs", "rerun-failed", run_id, "--json").json()["requeued"] == 0
    assert cli("runs", "delete", run_id, "--json").json() == {"id": run_id, "deleted": True}
    assert cli("runs", "list", "--json").json() == []


def test_steering(definition: str, cli_both: Invoke) -> None:
    cli = cli_both  # no worker: the jobs stay queued
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--model", "scripted:contrarian", "--sample-percentage", "15", "--json",
    ).json()  # fmt: skip
    run_id = created["id"]
    expanded = cli("runs", "expand", run_id, "--sample-percentage", "30", "--json")
    assert expanded.exit_code == 0, expanded.stdout + expanded.stderr
    assert expanded.json()["scenarios_added"] == 4
    same = cli("runs", "expand", run_id, "--sample-percentage", "30", "--json")
    assert same.exit_code == 1 and same.json()["code"] == "CONFLICT"
    assert cli("runs", "pause", run_id, "--json").json()["status"] == "paused"
    paused = cli("runs", "status", run_id, "--json").json()
    assert paused["progress"]["queued"] == 16 and paused["progress"]["completed"] == 0
    if through_a_server():  # the API deletes no run under way
        active = cli("runs", "delete", run_id, "--json")
        assert active.exit_code == 1 and active.json()["code"] == "RUN_ACTIVE"
        assert active.json()["hint"] == f"valuerank runs cancel {run_id}, then delete it"
    assert cli("runs", "resume", run_id).stdout == f"run {short_id(run_id)}: running\n"
    assert cli("runs", "rerun-failed", run_id).stdout == (
        f"run {short_id(run_id)}: 0 failed jobs requeued\n"
    )
    assert cli("runs", "cancel", run_id, "--json").json()["status"] == "cancelled"
    assert cli("runs", "status", run_id, "--json").json()["progress"]["cancelled"] == 16
    # A name is only what people call it: any state, one line, never empty.
    renamed = cli("runs", "rename", run_id, "  café\n pilot  ", "--json")
    assert renamed.exit_code == 0, renamed.stdout + renamed.stderr
    assert renamed.json()["name"] == "café pilot" and renamed.json()["status"] == "cancelled"
    assert [r["name"] for r in cli("runs", "list", "--json").json()] == ["café pilot"]
    said = cli("runs", "rename", run_id, "second pass")
    assert said.stdout == f"run {short_id(run_id)} is now named 'second pass'\n"
    empty = cli("runs", "rename", run_id, "   ", "--json")
    assert empty.exit_code == 1
    assert empty.json()["code"] == "INVALID_INPUT"  # the same both ways
    assert cli("runs", "delete", run_id, "--yes").stdout == f"run {short_id(run_id)} deleted\n"
    assert cli("runs", "list", "--json").json() == []


async def test_another_organisations_run_is_not_found(
    cli_both: Invoke, db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "elsewhere")
    theirs = (await make_demo_run(db, other)).id
    for args in (
        ("start",), ("pause",), ("resume",), ("cancel",), ("delete",), ("rerun-failed",),
        ("expand", "--sample-percentage", "50"), ("rename", "mine now"), ("wait", "--timeout", "0"),
        ("judge", "--judge", "scripted:centrist"),
    ):  # fmt: skip
        out = await asyncio.to_thread(cli_both, "runs", args[0], theirs, *args[1:], "--json")
        assert out.exit_code == 1, (args, out.stdout)
        assert out.json()["code"] == "NOT_FOUND", (args, out.stdout)


def test_wait_work_is_refused_through_a_server(definition: str, cli_both: Invoke) -> None:
    created = cli_both(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "10",
    )  # fmt: skip
    assert created.exit_code == 0, created.stdout + created.stderr
    run_id = cli_both("runs", "list", "--json").json()[0]["id"]
    # `--work` is offered only where this process may run the jobs.
    work = "" if through_a_server() else " [--work]"
    assert f"watch it: valuerank runs wait {short_id(run_id)}{work}\n" in created.stdout
    if not through_a_server():
        return
    refused = cli_both("runs", "wait", run_id, "--work", "--json")
    assert refused.exit_code == 1 and refused.json()["code"] == "LOCAL_ONLY_OPTION"
    assert "the server's own workers run the jobs" in refused.json()["hint"]
    words = cli_both("runs", "wait", run_id, "--work")
    assert words.exit_code == 1 and "--work runs the jobs in this process" in words.stderr


def test_errors_exit_1_with_a_code(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    missing_key = cli(
        "runs", "create", "--definition", definition, "--model", "openai:gpt-4.1", "--json"
    )
    assert missing_key.exit_code == 1
    assert missing_key.json()["code"] == "MISSING_CREDENTIAL"
    assert "OPENAI_API_KEY" in missing_key.json()["error"]
    assert cli("runs", "list", "--json").json() == []  # nothing half-written

    bad_model = cli("runs", "create", "--definition", definition, "--model", "gpt4", "--json")
    assert bad_model.exit_code == 1 and bad_model.json()["code"] == "INVALID_INPUT"
    assert "provider:model" in bad_model.json()["error"]

    unknown = cli("runs", "status", "ffffffff", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "NOT_FOUND"

    bad_share = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "0", "--json",
    )  # fmt: skip
    assert bad_share.exit_code == 1 and bad_share.json()["code"] == "INVALID_INPUT"


def test_no_start_then_start_and_timeout(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "10", "--no-start", "--json",
    ).json()  # fmt: skip
    assert created["status"] == "pending" and created["enqueued"] == 0
    waited = cli("runs", "wait", created["id"], "--timeout", "0.2", "--json")
    assert waited.exit_code == 2 and waited.json()["status"] == "pending"
    started = cli("runs", "start", created["id"], "--json").json()
    assert started["enqueued"] == 2 and started["status"] == "running"
    again = cli("runs", "start", created["id"], "--json").json()
    assert again["enqueued"] == 0


@pytest.mark.parametrize(
    ("flag", "model"),
    [("--model", "scripted:alpha"), ("--judge", "scripted:alpha"), ("--summary-model", "foo:x")],
)
def test_an_unknown_model_is_refused_and_nothing_is_written(
    cli: Invoke, flag: str, model: str
) -> None:
    definition = _definition(cli)
    args = ["runs", "create", "--definition", definition, "--sample-percentage", "15"]
    if flag != "--model":
        args += ["--model", "scripted:utilitarian"]
    refused = cli(*args, flag, model, "--json")
    assert refused.exit_code == 1
    error = refused.json()
    assert error["success"] is False and error["code"] == "UNKNOWN_MODEL"
    assert model in error["error"]
    assert cli("runs", "list", "--json").json() == []
    assert sum(cli("queue", "status", "--json").json()["counts"].values()) == 0


def test_an_unregistered_model_needs_allow_unknown_model(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    args = ["runs", "create", "--definition", definition, "--model", "ollama:qwen3:0.6b"]
    refused = cli(*args, "--no-start", "--json")
    assert refused.exit_code == 1 and refused.json()["code"] == "UNKNOWN_MODEL"
    assert "--allow-unknown-model" in refused.json()["hint"]
    allowed = cli(*args, "--no-start", "--allow-unknown-model", "--json")
    assert allowed.exit_code == 0, allowed.stderr
    assert allowed.json()["models"] == ["ollama:qwen3:0.6b"]


def test_a_run_without_a_seed_gets_a_drawn_one_shown_and_stored(cli: Invoke) -> None:
    definition = _definition(cli)
    args = ["runs", "create", "--definition", definition, "--model", "scripted:utilitarian"]
    first = cli(*args, "--sample-percentage", "30", "--no-start", "--json").json()
    second = cli(*args, "--sample-percentage", "30", "--no-start", "--json").json()
    seeds = {first["sample_seed"], second["sample_seed"]}
    assert len(seeds) == 2 and all(isinstance(s, int) and s >= 0 for s in seeds)
    stored = cli("runs", "status", first["id"], "--json").json()
    assert stored["sample_seed"] == first["sample_seed"]
    # The drawn seed redraws the same sample.
    again = cli(
        *args, "--sample-percentage", "30", "--sample-seed", str(first["sample_seed"]),
        "--no-start", "--json",
    ).json()  # fmt: skip
    scenarios = cli("scenarios", "expand", definition, "--sample-percentage", "30",
                    "--sample-seed", str(first["sample_seed"]), "--json").json()  # fmt: skip
    assert again["sample_seed"] == first["sample_seed"]
    assert scenarios["sample_seed"] == first["sample_seed"]
    human = cli(*args, "--sample-percentage", "30", "--no-start")
    assert "seed " in human.stdout


def test_one_burst_worker_finishes_the_runs_it_worked_on(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = _definition(cli)
    base = ["runs", "create", "--definition", definition, "--sample-percentage", "15"]
    done = cli(
        *base, "--model", "scripted:utilitarian", "--model", "scripted:contrarian",
        "--judge", "scripted:deontologist", "--json",
    ).json()  # fmt: skip
    # Every attempt fails (transient errors, retried after a short backoff, then dead).
    monkeypatch.setenv("VALUERANK_WORKER_RETRY_BASE_SECONDS", "0.05")
    doomed = cli(*base, "--model", "scripted:neutral?error_rate=1", "--json").json()
    burst = cli("worker", "--burst", "--json")
    assert burst.exit_code == 0, burst.stderr
    finished = cli("runs", "status", done["id"], "--json").json()
    assert finished["status"] == "completed", finished
    assert finished["judging"]["completed"] == finished["progress"]["completed"] == 8
    failed = cli("runs", "status", doomed["id"], "--json").json()
    assert failed["status"] == "failed", failed
    assert failed["progress"]["failed"] == 4
    assert failed["error"].startswith("every probe job failed (4): ")
    assert "synthetic transient error" in failed["error"]
    assert "(4×)" in failed["error"]
