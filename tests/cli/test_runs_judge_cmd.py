"""`valuerank runs judge` and `valuerank orgs defaults` end to end on both backends, with
scripted models and an in-process worker: a run created without judges says how to add them,
is judged afterwards, and `analyze` then reports judged transcripts and values; the
organisation's default judges serve a run created without --judge, which says so. `runs
judge` itself both ways: on the database and through a server."""

from __future__ import annotations

from pathlib import Path

import pytest

import valuerank
from valuerank.db import Database
from valuerank.refs import short_id

from .conftest import Invoke, Outcome
from .runs_both_ways import demo_definition, through_a_server, work_here

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")
RUBRIC = str(Path(__file__).parents[2] / "examples" / "values_rubric.yaml")


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


def _create(cli: Invoke, *extra: str) -> Outcome:
    definition = cli("definitions", "import", DEMO, "--json").json()["id"]
    return cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "15", "--followup-turns", "0", *extra,
    )  # fmt: skip


def test_a_run_without_judges_is_judged_later(cli: Invoke) -> None:
    assert cli("rubrics", "import", RUBRIC).exit_code == 0
    created = _create(cli)
    assert created.exit_code == 0, created.stderr
    assert "no judges: no value win rates; add them later with `valuerank runs judge" in (
        created.stdout
    )
    run_id = cli("runs", "list", "--json").json()[0]["id"]
    short = short_id(run_id)
    assert cli("runs", "wait", short, "--work", "--timeout", "60").exit_code == 0
    before = cli("analyze", short)
    assert "0 judged" in before.stdout
    assert f"valuerank runs judge {short} --judge MODEL" in " ".join(before.stdout.split())

    refused = cli("runs", "judge", short, "--judge", "openai:no-such-model")
    assert refused.exit_code == 1 and "is not in the registry" in refused.stderr

    judged = cli(
        "runs", "judge", short, "--judge", "scripted:centrist", "--judge", "scripted:utilitarian"
    )  # fmt: skip
    assert judged.exit_code == 0, judged.stderr
    assert "judges scripted:centrist, scripted:utilitarian" in judged.stdout
    assert "no model asked again" in judged.stdout
    assert cli("runs", "wait", short, "--work", "--timeout", "60").exit_code == 0
    after = cli("analyze", short, "--json").json()["analysis"]
    assert after["meta"]["judged"] == after["meta"]["transcripts"] > 0
    assert after["meta"]["values"]

    replaced = cli(
        "runs", "judge", short, "--judge", "scripted:deontologist", "--replace", "--json"
    ).json()  # fmt: skip
    assert replaced["judge_models"] == ["scripted:deontologist"]
    assert replaced["removed"] == ["scripted:centrist", "scripted:utilitarian"]
    assert replaced["judgments_removed"] == 2 * after["meta"]["transcripts"]


def test_organisation_default_judges(cli: Invoke) -> None:
    shown = cli("orgs", "defaults")
    assert shown.exit_code == 0, shown.stderr
    assert "default judges: none" in shown.stdout
    bad = cli("orgs", "defaults", "--judge", "nonsense")
    assert bad.exit_code == 1
    set_ = cli(
        "orgs", "defaults", "--judge", "scripted:centrist", "--judge", "scripted:deontologist",
        "--summary-model", "scripted:utilitarian", "--json",
    )  # fmt: skip
    assert set_.json() == {
        "judges": ["scripted:centrist", "scripted:deontologist"],
        "summary_model": "scripted:utilitarian",
    }
    created = _create(cli)
    assert created.exit_code == 0, created.stderr
    text = " ".join(created.stdout.split())
    assert (
        "judges: scripted:centrist, scripted:deontologist (the organisation's default judges"
        in text
    )
    assert "summary model: scripted:utilitarian (the organisation's default)" in text
    opted_out = _create(cli, "--no-default-judges", "--json").json()
    assert opted_out["judge_models"] == [] and opted_out["defaults_used"] == []
    cleared = cli("orgs", "defaults", "--clear-judges", "--json").json()
    assert cleared == {"judges": [], "summary_model": "scripted:utilitarian"}


@pytest.fixture
async def definition(db: Database, org_id: str) -> str:
    return await demo_definition(db, org_id)


@pytest.mark.server_worker
def test_runs_judge_both_ways(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "15", "--followup-turns", "0", "--json",
    ).json()  # fmt: skip
    short = short_id(created["id"])
    assert created["judge_models"] == []
    assert cli("runs", "wait", short, *work_here(), "--timeout", "60").exit_code == 0
    refused = cli("runs", "judge", short, "--judge", "openai:no-such-model")
    assert refused.exit_code == 1 and "is not in the registry" in refused.stderr

    judged = cli("runs", "judge", short, "--judge", "scripted:centrist")
    assert judged.exit_code == 0, judged.stdout + judged.stderr
    assert f"run {short} (running): judges scripted:centrist" in judged.stdout
    work = "" if through_a_server() else " [--work]"
    assert f"watch it: valuerank runs wait {short}{work}; then valuerank analyze {short}" in (
        " ".join(judged.stdout.split())
    )
    waited = cli("runs", "wait", short, *work_here(), "--timeout", "60", "--json")
    assert waited.exit_code == 0 and waited.json()["status"] == "completed", waited.stdout
    transcripts = waited.json()["transcripts"]
    replaced = cli(
        "runs", "judge", short, "--judge", "scripted:deontologist", "--replace", "--json"
    ).json()  # fmt: skip
    assert replaced["judge_models"] == ["scripted:deontologist"]
    assert replaced["added"] == ["scripted:deontologist"]
    assert replaced["removed"] == ["scripted:centrist"]
    assert replaced["judgments_removed"] == transcripts > 0
    assert replaced["enqueued"] == transcripts
