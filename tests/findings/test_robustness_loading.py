"""A run asked in both scale orders and two phrasings, stored (SQLite and PostgreSQL) through
the run's own writers and analysed by the service the API uses: presentations of a scenario
are one unit, and `analysis.robustness` finds the order and phrasing effects written in."""

from __future__ import annotations

from tests.presented_seeding import DEMO, MODEL, presented_run

from valuerank.analysis import AnalysisInput, ScenarioInfo
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.findings.analyses import run_analysis
from valuerank.findings.loading import by_combination
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.config import RunConfig
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import create_run


def test_presentations_of_one_combination_are_one_scenario_unit() -> None:
    info = ScenarioInfo("Harm two", {"Harm": 2.0, "Cost": 1.0})
    ids = ["s_Harm2_Cost1", "s_Harm2_Cost1-reversed", "s_Harm2o2_Cost1", "t_Harm1"]
    asked = by_combination(
        ids,
        {
            "s_Harm2o2_Cost1": ScenarioInfo("Harm two, reworded", info.levels),
            "s_Harm2_Cost1-reversed": info,
            "s_Harm2_Cost1": info,
        },
    )
    assert asked.units == ["s_Harm2_Cost1"] * 3 + ["t_Harm1"]
    assert asked.orders == [0, 1, 0, 0]
    assert asked.phrasings == ["", "", "Harm2o2", ""]
    data = AnalysisInput.build(
        models=["m"] * 4,
        scenario_ids=asked.units,
        decisions=[4, 3, 5, 1],
        reasons=[None] * 4,
        scenarios=asked.scenarios,
        orders=asked.orders,
        phrasings=asked.phrasings,
    )
    assert data.scenarios == ("s_Harm2_Cost1", "t_Harm1")
    assert data.scenario_names == ("Harm two", "t_Harm1")  # the as-written first phrasing's
    assert data.scenario_idx.tolist() == [0, 0, 0, 1]
    assert data.orders.tolist() == [0, 1, 0, 0]
    assert data.phrasings == ("", "Harm2o2")
    assert data.phrasing_idx.tolist() == [0, 0, 1, 0]
    assert data.levels[0].tolist() == [1.0, 2.0]  # Cost, Harm
    kept = data.only_models({"m"})
    assert kept.orders.tolist() == [0, 1, 0, 0] and kept.phrasing_idx.tolist() == [0, 0, 1, 0]
    # Without presentations: the ids are the units, as before.
    plain = by_combination(["a", "b"], {"a": info})
    assert plain.units == ["a", "b"] and plain.orders == [0, 0] and plain.phrasings == ["", ""]


async def test_the_analysis_reports_the_order_and_phrasing_effects_of_a_stored_run(
    db: Database, org_id: str
) -> None:
    run, base = await presented_run(db, org_id)
    analysis = (await run_analysis(db, org_id, run.id)).analysis
    assert list(analysis)[:2] == ["valueSensitivity", "robustness"]
    assert analysis["meta"]["scenarios"] == len(base)  # combinations, not presentations
    assert analysis["sample"]["scenarios"] == len(base)
    entry = analysis["robustness"][MODEL]
    order = entry["orderEffect"]
    even = (len(base) + 1) // 2
    assert order["n"] == len(base)
    assert order["value"] == round(even / len(base), 6)
    assert order["ci95"][0] > 0  # a pull towards the higher number shown
    assert "ORDER_BIAS" in {w["code"] for w in analysis["warnings"]}
    shift = entry["phrasingEffect"]["shift"]
    # Asked as written only, the other phrasing is paired with the first's as-written 4.
    third = (len(base) + 2) // 3
    assert shift["n"] == len(base)
    assert shift["value"] == round(third / len(base), 6)
    assert "WORDING_SENSITIVE" in {w["code"] for w in analysis["warnings"]}
    consistency = entry["consistency"]
    assert consistency["scenarios"] == len(base)
    # Only scenarios j % 6 == 0 span 3..5 (two points); the others lie within one point.
    assert consistency["agreeing"] == len(base) - (len(base) + 5) // 6
    assert entry["consistency"]["mostInconsistent"][0]["scenarioId"] in base
    assert analysis["methodsUsed"]["robustness"]["orderEffect"].startswith("paired_t")
    # The judges always prefer Physical_Safety: first in every resample of the scenarios.
    ranked = entry["ranking"]["winRate"]
    assert [v["value"] for v in ranked["values"]] == ["Physical_Safety", "Economics", "Loyalty"]
    assert ranked["values"][0]["ci95"] == [1, 1]
    assert ranked["pAbove"]["Physical_Safety"]["Loyalty"] == 1.0
    assert ranked["scenarios"] == len(base)


async def test_a_run_asked_one_way_reports_why_there_is_no_order_effect(
    db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        run = (await create_run(conn, org_id, stored.version.id, RunConfig(models=(MODEL,)))).run
        record = TranscriptRecord(
            transcript=Transcript(
                run_id=run.cli_run_id,
                scenario_id="scenario_demo_001_Tenure1_Harm1_Cost1",
                target_model=MODEL,
                subject="one way",
                turns=(Turn(1, "scenario", "Decide.", "Rating: 2"),),
            ),
            model=MODEL,
            sample_index=0,
            decision_code=2,
            decision_reason=None,
        )
        await insert_transcript(conn, org_id, run.id, record)
    entry = (await run_analysis(db, org_id, run.id)).analysis["robustness"][MODEL]
    assert entry["orderEffect"] is None
    assert entry["reasons"]["orderEffect"] == "only one scale order was asked"
