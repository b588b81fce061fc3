"""`valuerank runs create --judge` says which values rubric the judges will read (both
backends, and through a server): the packaged default, stored in the organisation, when it
has none of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

import valuerank
from valuerank.db import Database

from .conftest import Invoke
from .runs_both_ways import demo_definition

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")
EXAMPLE = str(Path(__file__).parents[2] / "examples" / "values_rubric.yaml")


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _create(cli: Invoke, definition: str, *extra: str) -> tuple[int, str]:
    out = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "10", "--no-start", *extra,
    )  # fmt: skip
    return out.exit_code, out.stdout + out.stderr


@pytest.fixture
async def definition(db: Database, org_id: str) -> str:
    return await demo_definition(db, org_id)


def test_runs_create_names_the_judges_rubric(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    code, text = _create(cli, definition, "--judge", "scripted:centrist")
    assert code == 0, text
    assert (
        "judges read the values rubric valuerank-default v1 (14 values; the default rubric, "
        "as the organisation has none) (import your own with `valuerank rubrics import "
        "FILE.yaml`)" in " ".join(text.split())
    )
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--judge", "scripted:centrist", "--sample-percentage", "10", "--no-start", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    rubric = created.json()["rubric"]
    assert rubric["name"] == "valuerank-default" and rubric["version_label"] == "v1"
    assert rubric["values"] == 14 and rubric["default"] is True
    status = cli("runs", "status", created.json()["id"], "--json").json()
    assert status["rubric"] == rubric  # the run records which version its judges read

    code, text = _create(cli, definition)  # no judges: no rubric to read
    assert code == 0 and "rubric" not in text, text


def test_the_organisations_own_rubric(cli: Invoke) -> None:
    definition = cli("definitions", "import", DEMO, "--json").json()["id"]
    code, text = _create(cli, definition, "--judge", "scripted:centrist")
    assert code == 0, text
    listed = cli("rubrics", "list", "--json").json()
    assert [r["name"] for r in listed] == ["valuerank-default"]  # the default, stored once
    assert _create(cli, definition, "--judge", "scripted:centrist")[0] == 0
    assert len(cli("rubrics", "list", "--json").json()) == 1  # and reused

    assert cli("rubrics", "import", EXAMPLE, "--name", "mine", "--json").exit_code == 0
    code, text = _create(cli, definition, "--judge", "scripted:centrist")
    assert code == 0 and "judges read the values rubric mine v1 (5 values)\n" in text, text
