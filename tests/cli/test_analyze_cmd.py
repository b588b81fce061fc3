"""`valuerank analyze|compare|experiments|lineage` end to end on both backends, with scripted
models, judges and an in-process worker (`runs wait --work`), each command run both ways:
on the database and against a live server (the runs are made on the database first)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from tests.api.conftest import make_demo_run
from tests.conftest import TestDatabase

import valuerank
from valuerank.client import API_URL_ENV
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.orgs import ensure_org

from .conftest import Invoke, Outcome

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")
RUBRIC = str(Path(__file__).parents[2] / "examples" / "values_rubric.yaml")


@pytest.fixture(autouse=True)
def _fast_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


def judged_cli_run(cli: Invoke, definition: str, *models: str) -> str:
    """A completed run of `models` (20 % sample, seed 7) judged by a scripted judge."""
    # One seed for both runs: they sample the same 5 scenarios, so the comparison has pairs
    # (two drawn seeds share none a third of the time).
    args = ["runs", "create", "--definition", definition, "--sample-percentage", "20"]
    args += ["--sample-seed", "7"]
    for model in models:
        args += ["--model", model]
    created = cli(*args, "--judge", "scripted:centrist", "--followup-turns", "0", "--json")
    assert created.exit_code == 0, created.stdout + created.stderr
    run_id = str(created.json()["id"])
    waited = cli("runs", "wait", run_id, "--work", "--timeout", "120", "--json")
    assert waited.exit_code == 0 and waited.json()["status"] == "completed"
    return run_id


@pytest.fixture
def judged_pair(cli: Invoke) -> tuple[str, str, str]:
    """A definition and two completed judged runs of it (a, b), made on the database before
    `cli_both` (asked after this fixture) points the CLI at a server."""
    assert cli("rubrics", "import", RUBRIC, "--json").exit_code == 0
    definition = str(cli("definitions", "import", DEMO, "--json").json()["id"])
    a = judged_cli_run(
        cli, definition, "scripted:utilitarian", "scripted:contrarian", "scripted:refuser"
    )
    b = judged_cli_run(cli, definition, "scripted:utilitarian", "scripted:agreeable")
    return definition, a, b


@pytest.fixture
def unstarted_run(cli: Invoke) -> str:
    """A run that never started (no transcripts), made on the database."""
    definition = str(cli("definitions", "import", DEMO, "--json").json()["id"])
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "10", "--no-start", "--json",
    ).json()  # fmt: skip
    return str(created["id"])


def on_the_database(
    cli: Invoke, database_url: TestDatabase, monkeypatch: pytest.MonkeyPatch, *args: str
) -> Outcome:
    """`valuerank ARGS…` on the test's database, also while `cli_both` points the CLI at a
    server (e.g. `worker --burst`, or to compare what each prints)."""
    with monkeypatch.context() as local:
        local.delenv(API_URL_ENV, raising=False)
        local.setenv("VALUERANK_DATABASE_URL", database_url.url)
        get_settings.cache_clear()
        out = cli(*args)
    get_settings.cache_clear()
    return out


def wait_completed(cli: Invoke, run_id: str) -> None:
    """Wait for a run: worked here on the database, or by the server's worker."""
    if not os.environ.get(API_URL_ENV):
        waited = cli("runs", "wait", run_id, "--work", "--timeout", "120", "--json")
        assert waited.json()["status"] == "completed"
        return
    deadline = time.monotonic() + 120
    while (status := cli("runs", "status", run_id, "--json").json()["status"]) != "completed":
        assert status not in ("failed", "cancelled") and time.monotonic() < deadline, status
        time.sleep(0.2)


@pytest.mark.server_worker
def test_analyze_compare_experiment_and_lineage(
    judged_pair: tuple[str, str, str], cli_both: Invoke, tmp_path: Path
) -> None:
    cli = cli_both
    definition, a, b = judged_pair

    first = cli("analyze", a, "--json")
    assert first.exit_code == 0, first.stdout
    data = first.json()
    assert data["success"] is True
    analysis = data["analysis"]
    assert {"perModel", "modelAgreement", "dimensionAnalysis", "mostContestedScenarios",
            "visualizationData", "methodsUsed", "warnings", "computedAt", "durationMs"} <= set(
        analysis
    )  # fmt: skip
    assert analysis["perModel"]["scripted:refuser"]["refusalRate"] == 1.0
    assert analysis["sample"]["basis"] == "based on 20 % sample: 5 of 27 scenarios"
    cached = cli("analyze", a[:-2], "--json").json()["analysis"]
    assert cached["meta"]["cached"] is True and cached["computedAt"] == analysis["computedAt"]
    forced = cli("analyze", a, "--force", "--json").json()["analysis"]
    assert forced["meta"]["cached"] is False

    plots = tmp_path / "plots"
    deep = cli("analyze", a, "--deep", "--plots", str(plots), "--json")
    assert deep.exit_code == 0, deep.stdout
    assert deep.json()["analysis"]["deep"]["insights"]
    names = sorted(p.name for p in plots.iterdir())
    assert names == sorted(
        f"{n}.{ext}"
        for n in (
            "value_sensitivity",
            "win_rates",
            "agreement_heatmap",
            "dimension_effects",
            "pca_scatter",
        )
        for ext in ("png", "svg")
    )
    human = cli("analyze", a, "--deep")
    assert human.exit_code == 0 and "Model agreement" in human.stdout
    assert "Insights" in human.stdout

    compared = cli("compare", a, b, "--plots", str(tmp_path / "cmp"), "--json")
    assert compared.exit_code == 0, compared.stdout
    result = compared.json()["comparison"]["result"]
    assert result["models"]["shared"] == ["scripted:utilitarian"]
    assert result["models"]["comparisonOnly"] == ["scripted:agreeable"]
    assert (tmp_path / "cmp" / "comparison_forest.svg").exists()
    assert cli("compare", a, b, "--json").json()["cached"] is True
    shown = cli("compare", a, b).stdout
    assert "Decision deltas" in shown
    assert "baseline: based on 20 % sample: 5 of 27 scenarios" in shown
    assert "SAMPLED_RUN" in shown
    assert result["samples"]["pairedPopulation"] == 27
    # The paired delta's unit is a scenario's mean difference: no finite-population correction.
    interval = result["perModel"]["scripted:utilitarian"]["interval"]
    assert interval["method"] == "paired_bootstrap_percentile"
    assert interval["finitePopulationCorrection"] is None

    made = cli("experiments", "create", "--name", "agreeable", "--baseline", a, "--json")
    assert made.exit_code == 0, made.stdout
    experiment = made.json()["id"]
    variant = cli(
        "experiments", "add-variant", experiment, "--model", "scripted:agreeable",
        "--temperature", "0.5", "--json",
    )  # fmt: skip
    assert variant.exit_code == 0, variant.stdout
    assert variant.json()["changes"] == {"models": ["scripted:agreeable"], "temperature": 0.5}
    wait_completed(cli, variant.json()["id"])
    report = cli("experiments", "report", experiment, "--json").json()
    assert report["variants"][0]["comparison"]["status"] == "completed"
    assert [e["id"] for e in cli("experiments", "list", "--json").json()] == [experiment]

    lineage = cli("lineage", "results", definition, "--json")
    assert lineage.exit_code == 0
    [version] = lineage.json()["versions"]
    assert (version["label"], version["chosen_by"]) == ("v1", "latest_completed")
    assert "Only v1 has a run" in cli("lineage", "results", definition).stdout
    chosen = cli("lineage", "results", definition, "--run", a, "--json").json()
    assert chosen["versions"][0]["representative_run_id"] == a
    assert "(chosen)" in cli("lineage", "results", definition, "--run", a).stdout


def test_errors_are_json_with_a_code(unstarted_run: str, cli_both: Invoke) -> None:
    cli = cli_both
    unknown = cli("analyze", "ffffffff", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "NOT_FOUND"
    created = {"id": unstarted_run}
    empty = cli("analyze", created["id"], "--json")
    assert empty.exit_code == 0
    assert "NO_TRANSCRIPTS" in {w["code"] for w in empty.json()["analysis"]["warnings"]}
    same = cli("compare", created["id"], created["id"], "--json")
    assert same.exit_code == 1 and same.json()["code"] == "INVALID_INPUT"
    bad_correction = cli("compare", created["id"], "ffffffff", "--correction", "x", "--json")
    assert bad_correction.json()["code"] == "INVALID_INPUT"
    narrator = cli("analyze", created["id"], "--narrative-model", "openai:no-such-model", "--json")
    assert narrator.exit_code == 1 and narrator.json()["code"] == "UNKNOWN_MODEL"
    experiment = cli(
        "experiments", "create", "--name", "e", "--baseline", created["id"], "--json"
    ).json()["id"]
    bad = cli("experiments", "add-variant", experiment, "--changes", "nope", "--json")
    assert bad.exit_code == 1 and bad.json()["code"] == "INVALID_INPUT"
    nothing = cli("experiments", "add-variant", experiment, "--json")
    assert nothing.json()["code"] == "INVALID_INPUT"
    held = cli("experiments", "add-variant", experiment, "--temperature", "0.5", "--no-start")
    assert held.exit_code == 0 and "(pending)" in held.stdout, held.stdout
    report = cli("experiments", "report", experiment, "--json").json()
    [variant] = report["variants"]
    assert variant["status"] == "pending" and variant["changes"] == {"temperature": 0.5}
    assert variant["comparison"] is None


async def test_another_organisations_run_is_not_found(
    db: Database, cli_both: Invoke, tmp_path: Path
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_demo_run(db, other, decisions={"scripted:utilitarian": [1, 2, 3]})
    for args, code in (
        (("analyze", foreign.id), "NOT_FOUND"),
        (("compare", foreign.id, foreign.id), "NOT_FOUND"),
        (("report", foreign.id, "-o", str(tmp_path / "r.html")), "NOT_FOUND"),
        (("experiments", "create", "--name", "x", "--baseline", foreign.id), "NOT_FOUND"),
        (("lineage", "results", str(foreign.definition_id)), "DEFINITION_NOT_FOUND"),
    ):
        out = await asyncio.to_thread(cli_both, *args, "--json")  # the CLI runs its own loop
        assert out.exit_code == 1 and out.json()["code"] == code, (args, out.stdout)
    assert not (tmp_path / "r.html").exists()


def test_the_server_prints_what_the_database_prints(
    unstarted_run: str,
    cli_server: Invoke,
    database_url: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    experiment = cli_server(
        "experiments", "create", "--name", "e", "--baseline", unstarted_run, "--json"
    ).json()["id"]
    cli_server("experiments", "add-variant", experiment, "--temperature", "0.5", "--no-start")
    cli_server("analyze", unstarted_run, "--json")  # computed once: both then read the cache
    for args in (
        ("analyze", unstarted_run),
        ("experiments", "list"),
        ("experiments", "report", experiment),
    ):
        for as_json in ((), ("--json",)):
            served = cli_server(*args, *as_json)
            local = on_the_database(cli_server, database_url, monkeypatch, *args, *as_json)
            assert served.exit_code == local.exit_code == 0, (args, served.stdout)
            assert served.stdout == local.stdout, args
