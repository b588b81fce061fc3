"""`valuerank analyze` with the deep analysis on both backends: whether each result came from
the cache, the narrative asked for (also of a cached deep analysis, its model checked like a
run's), plots without --deep, and the Rich tables of the deep figures — each `analyze` run
both ways (on the database and against a live server; the run is made, and the narrative's
job worked, on the database)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import TestDatabase

import valuerank

from .conftest import Invoke
from .test_analyze_cmd import on_the_database

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")
RUBRIC = str(Path(__file__).parents[2] / "examples" / "values_rubric.yaml")
MODELS = ("scripted:utilitarian", "scripted:contrarian", "scripted:deontologist")


@pytest.fixture(autouse=True)
def _fast_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


def _names(directory: Path) -> set[str]:
    return {p.stem for p in directory.iterdir()}


@pytest.fixture
def judged_run(cli: Invoke) -> str:
    """A completed run of three models judged by a scripted judge, made on the database
    before `cli_both` (asked after this fixture) may point the CLI at a server."""
    assert cli("rubrics", "import", RUBRIC, "--json").exit_code == 0
    definition = str(cli("definitions", "import", DEMO, "--json").json()["id"])
    args = ["runs", "create", "--definition", definition, "--sample-percentage", "30"]
    for model in MODELS:
        args += ["--model", model]
    created = cli(*args, "--judge", "scripted:centrist", "--followup-turns", "0", "--json")
    assert created.exit_code == 0, created.stdout + created.stderr
    run_id = str(created.json()["id"])
    waited = cli("runs", "wait", run_id, "--work", "--timeout", "120", "--json")
    assert waited.json()["status"] == "completed"
    return run_id


def test_deep_cache_narrative_plots_and_tables(
    judged_run: str,
    cli_both: Invoke,
    database_url: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    cli, run_id = cli_both, judged_run
    # No deep analysis yet: the plots say the PCA needs one.
    basic = cli("analyze", run_id, "--plots", str(tmp_path / "a"), "--json").json()
    assert basic["deep_cached"] is None and "deep" not in basic["analysis"]
    assert "pca_scatter" not in _names(tmp_path / "a")
    assert basic["notes"] == [
        "pca_scatter not written: the PCA is part of the deep analysis and this run has no "
        "current one; add --deep"
    ]
    human = cli("analyze", run_id, "--plots", str(tmp_path / "h"))
    assert "the PCA is part of the deep analysis" in human.stdout

    computed = cli("analyze", run_id, "--deep", "--json").json()
    assert computed["deep_cached"] is False and computed["cached"] is True
    assert computed["analysis"]["meta"]["deepCached"] is False
    cached = cli("analyze", run_id, "--deep", "--json").json()
    assert cached["deep_cached"] is True and cached["analysis"]["meta"]["deepCached"] is True
    deep = cached["analysis"]["deep"]
    assert deep["sample"]["basis"] == cached["analysis"]["sample"]["basis"]
    assert deep["sample"]["basis"] == "based on 30 % sample: 8 of 27 scenarios"

    # With a current deep analysis, --plots draws the PCA without --deep.
    later = cli("analyze", run_id, "--plots", str(tmp_path / "b"), "--json").json()
    assert "pca_scatter" in _names(tmp_path / "b") and later["notes"] == []

    # The narrative: the model is checked first; then it is queued for the cached analysis.
    unknown = cli("analyze", run_id, "--narrative-model", "openai:no-such-model", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "UNKNOWN_MODEL"
    asked = cli("analyze", run_id, "--narrative-model", "scripted:centrist", "--json").json()
    assert asked["deep_cached"] is True  # --narrative-model implies --deep
    assert asked["narrative"]["status"] == "queued" and asked["narrative"]["job_id"]
    again = cli("analyze", run_id, "--narrative-model", "scripted:centrist", "--json").json()
    assert again["narrative"] == {**asked["narrative"], "status": "already queued"}
    # The narrative's job, worked on the database (the server's thread runs none).
    assert on_the_database(cli, database_url, monkeypatch, "worker", "--burst").exit_code == 0
    told = cli("analyze", run_id, "--deep", "--json").json()["analysis"]["deep"]
    assert "(synthetic answer from scripted:centrist)" in told["narrative"]
    done = cli("analyze", run_id, "--narrative-model", "scripted:centrist", "--json").json()
    assert done["narrative"]["status"] == "exists" and done["narrative"]["job_id"] is None

    # The Rich tables show every deep figure, and every value's win rate per model.
    shown = cli("analyze", run_id, "--deep").stdout
    for title in (
        "deep analysis (cached): based on 30 % sample: 8 of 27 scenarios",
        "PCA of models",
        "Outlier models",
        "quadratic-weighted Cohen's κ",
        "Krippendorff's α (ordinal)",
        "Bradley–Terry value strengths",
        "Dimension ↔ decision correlations",
        "Value win rates",
        "Narrative",
    ):
        assert title in shown, title
    analysis = cached["analysis"]
    for stats in analysis["perModel"].values():
        for value, entry in stats["values"].items():
            if entry["count"]["prioritized"] + entry["count"]["deprioritized"]:
                assert f"{value} " in shown
                assert f"{entry['winRate']:.2f}" in shown
    for dim in analysis["meta"]["dimensions"]:
        assert dim in shown
    for fit in deep["bradleyTerry"].values():
        for entry in (fit or {"values": {}})["values"].values():
            if entry["strength"] is None:  # separated: infinite or undetermined
                assert f"separated ({entry['direction'] or 'unordered'})" in shown
            else:
                assert f"{entry['strength']:.2f}" in shown
