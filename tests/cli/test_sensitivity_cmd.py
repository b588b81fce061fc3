"""Value sensitivities end to end, without judges: a run of scripted models on the bundled
definition, `valuerank analyze` (its table first, the JSON) on both backends. The scripted
personas' weights are known (providers/scripted.py), so the signs are checked against them.
`analyze` runs both ways: on the database and against a live server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import valuerank
from valuerank.providers.scripted import PERSONAS, dimension_weight

from .conftest import Invoke

DEMO = str(Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md")
MODELS = ("scripted:utilitarian", "scripted:contrarian")


@pytest.fixture(autouse=True)
def _fast_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


@pytest.fixture
def unjudged_run(cli: Invoke) -> str:
    """A completed run without judges, made on the database before `cli_both`."""
    definition = str(cli("definitions", "import", DEMO, "--json").json()["id"])
    args = ["runs", "create", "--definition", definition, "--samples-per-scenario", "2"]
    for model in MODELS:
        args += ["--model", model]
    created = cli(*args, "--followup-turns", "0", "--json")
    assert created.exit_code == 0, created.stdout + created.stderr
    run_id = str(created.json()["id"])
    waited = cli("runs", "wait", run_id, "--work", "--timeout", "120", "--json")
    assert waited.exit_code == 0 and waited.json()["status"] == "completed"
    return run_id


def test_analyze_shows_value_sensitivities_first_without_judges(
    unjudged_run: str, cli_both: Invoke
) -> None:
    cli, run_id = cli_both, unjudged_run
    analysis = cli("analyze", run_id, "--json").json()["analysis"]
    # (JSON key order is the backend's: PostgreSQL's jsonb reorders; the table comes first)
    assert analysis["scaleLabels"]["5"] == "report the defect to the regulator now"
    assert analysis["methodsUsed"]["valueSensitivity"].startswith("ols_cr2_by_scenario")
    section = analysis["valueSensitivity"]
    values = {dim: entry["value"] for dim, entry in section[MODELS[0]].items()}
    # The definition's explicit `dimension_values:` front matter names the stakes.
    assert values == {"Tenure": "Loyalty", "Harm": "Physical safety", "Cost": "Economics"}
    for model in MODELS:
        persona = PERSONAS[model.split(":")[1]]
        for dim, entry in section[model].items():
            assert entry["n"] == 54 and entry["scenarios"] == 27
            weight = dimension_weight(persona, dim, 3)
            lo, hi = entry["ci95"]
            assert lo <= entry["coefficient"] <= hi
            if abs(weight) > 0.4:  # clearly weighted: the interval sees its direction
                assert (lo > 0) if weight > 0 else (hi < 0), (model, dim, weight, entry)

    human = cli("analyze", run_id)
    assert human.exit_code == 0, human.stdout
    out = human.stdout
    assert out.index("Value sensitivity") < out.index("Models")
    first = section[MODELS[0]]["Harm"]
    assert f"{first['coefficient']:+.2f}" in out
    assert re.search(r"a stronger \w[\w ]* stake moves scripted:\w+ towards '", out)
