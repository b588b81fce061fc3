"""Analysis end to end on SQLite and PostgreSQL: scripted personas with judges run by a real
in-process worker; the completed run gets its basic analysis from the queue; the figures are
right; the cache serves, a new transcript invalidates it, force recomputes; deep analysis
with a narrative (also asked for when the deep analysis is cached); two runs compared; an
experiment with a variant; lineage over a fork."""

from __future__ import annotations

import json
from typing import Any

import pytest
import scipy.stats
from sqlalchemy import select
from tests.waiting import wait_until_async

from valuerank.db import Database
from valuerank.db.tables import analyses, jobs, transcripts
from valuerank.definitions.service import fork_definition, parse_and_check
from valuerank.findings.analyses import run_analysis, stored_analysis
from valuerank.findings.comparisons import create_comparison, get_comparison
from valuerank.findings.lineage import lineage_results
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.pipeline.analyze import NARRATE, enqueue_analysis, enqueue_comparison
from valuerank.pipeline.experiments import add_variant, create_experiment, experiment_report
from valuerank.registry.service import UnknownModelError
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import expand_run, get_run

from .analysis_support import (
    DEMO,
    PERSONAS,
    launch,
    run_config,
    running_worker,
    set_up,
    wait_completed,
    wait_stored,
)


async def test_a_completed_run_is_analysed_cached_invalidated_and_forced(
    db: Database, org_id: str
) -> None:
    definition_id = await set_up(db, org_id)
    run_id = await launch(db, org_id, definition_id, run_config())
    async with running_worker(db):
        await wait_completed(db, org_id, run_id)
        sampled = await wait_stored(db, org_id, run_id, "basic")  # by the queue, nobody asked
        assert sampled.result["sample"]["basis"] == "based on 30 % sample: 8 of 27 scenarios"
        fpc = sampled.result["sample"]["finitePopulationCorrection"]
        assert fpc == round((19 / 26) ** 0.5, 6)
        utilitarian_ci = sampled.result["perModel"]["scripted:utilitarian"]["overall"]
        # One sample per scenario: the samples' noise cannot be told from the scenarios'
        # spread, so the scenario-clustered interval goes uncorrected (clustered.py).
        assert utilitarian_ci["confidenceInterval"]["method"] == "t_scenario_clustered"
        # Expanding the run to every scenario updates the figures (a new generation).
        async with db.transaction(immediate=True) as conn:
            await expand_run(conn, org_id, run_id, 100)
        await wait_completed(db, org_id, run_id)

        async def expanded() -> Any:
            async with db.transaction() as conn:
                row = await stored_analysis(conn, org_id, run_id, "basic")
            return row if row is not None and row.input_hash != sampled.input_hash else None

        stored = await wait_until_async(expanded, what="the analysis of the expanded run")
    analysis = stored.result
    json.dumps(analysis, allow_nan=False)
    assert analysis["sample"]["basis"] == "based on all 27 scenarios"
    assert analysis["sample"]["finitePopulationCorrection"] is None
    per_model = analysis["perModel"]
    assert set(per_model) == set(PERSONAS)
    assert per_model["scripted:refuser"]["refusalRate"] == 1.0
    assert per_model["scripted:refuser"]["overall"]["mean"] is None
    for persona in PERSONAS[:3]:
        assert per_model[persona]["sampleSize"] == per_model[persona]["decided"] == 27
    pairwise = analysis["modelAgreement"]["pairwise"]
    pair = pairwise["scripted:contrarian:scripted:utilitarian"]
    assert pair["model1"] == "scripted:contrarian" and pair["model2"] == "scripted:utilitarian"
    # The personas' noise is seeded by the run id, so the figures differ from run to run:
    # each pair's ρ is checked against scipy over the stored decisions, and the mirror image
    # only for its sign (never ≥ 0 in 20 000 simulated runs; below −0.5 in 96 %).
    assert pair["spearmanRho"] < 0 and pair["n"] == 27
    async with db.transaction() as conn:
        decisions = (
            await conn.execute(
                select(
                    transcripts.c.model, transcripts.c.scenario_id, transcripts.c.decision_code
                ).where(transcripts.c.run_id == run_id)
            )
        ).all()
    for key, entry in pairwise.items():
        a, b = (by_scenario(decisions, entry[m]) for m in ("model1", "model2"))
        shared = sorted(set(a) & set(b))
        assert entry["n"] == len(shared)
        if entry["spearmanRho"] is not None:
            expected = scipy.stats.spearmanr([a[s] for s in shared], [b[s] for s in shared])
            assert entry["spearmanRho"] == pytest.approx(expected.statistic, abs=1e-6), key
            assert entry["pValue"] == pytest.approx(expected.pvalue, abs=1e-6), key
    codes = {w["code"] for w in analysis["warnings"]}
    assert "NO_DECISIONS" in codes and "SAMPLED_RUN" not in codes
    assert "NO_VALUE_JUDGMENTS" not in codes
    assert set(analysis["dimensionAnalysis"]["dimensions"]) == {"Cost", "Harm", "Tenure"}
    # Win rates come from the judges' consensus stored on each transcript.
    async with db.transaction() as conn:
        rows = (
            await conn.execute(
                select(transcripts.c.model, transcripts.c.consensus).where(
                    transcripts.c.run_id == run_id
                )
            )
        ).all()
    utilitarian = [c for m, c in rows if m == "scripted:utilitarian"]
    value, entry = next(iter(per_model["scripted:utilitarian"]["values"].items()))
    expected_p = sum(value in c["prioritized_values"] for c in utilitarian)
    expected_d = sum(value in c["deprioritized_values"] for c in utilitarian)
    assert entry["count"]["prioritized"] == expected_p
    assert entry["count"]["deprioritized"] == expected_d
    assert expected_p + expected_d > 0

    again = await run_analysis(db, org_id, run_id)
    assert again.cached and not again.computed
    assert again.analysis["computedAt"] == analysis["computedAt"]
    assert again.analysis["meta"]["inputHash"] == stored.input_hash

    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
        record = TranscriptRecord(
            transcript=Transcript(
                run_id=run.cli_run_id,
                scenario_id=analysis["mostContestedScenarios"][0]["scenarioId"],
                target_model="scripted:utilitarian",
                subject="extra",
                turns=(Turn(1, "scenario", "Decide.", "Rating: 5"),),
            ),
            model="scripted:utilitarian",
            sample_index=1,
            decision_code=5,
            synthetic=True,
        )
        assert await insert_transcript(conn, org_id, run_id, record)
    fresh = await run_analysis(db, org_id, run_id)
    assert not fresh.cached and fresh.computed == ["basic"]
    assert fresh.analysis["perModel"]["scripted:utilitarian"]["sampleSize"] == 28
    assert fresh.input_hash != stored.input_hash
    assert (await run_analysis(db, org_id, run_id)).cached
    forced = await run_analysis(db, org_id, run_id, force=True)
    assert not forced.cached and forced.computed == ["basic"]
    assert forced.input_hash == fresh.input_hash


async def test_deep_analysis_with_a_narrative_from_the_queue(db: Database, org_id: str) -> None:
    definition_id = await set_up(db, org_id)
    run_id = await launch(db, org_id, definition_id, run_config())
    async with running_worker(db):
        await wait_completed(db, org_id, run_id)
        async with db.transaction(immediate=True) as conn:
            run = await get_run(conn, org_id, run_id)
            await enqueue_analysis(conn, run, "deep", narrative_model="scripted:centrist")

        async def narrated() -> Any:
            async with db.transaction() as conn:
                row = await stored_analysis(conn, org_id, run_id, "deep")
            return row if row is not None and row.narrative else None

        row = await wait_until_async(narrated, what="the narrative")
    deep = row.result
    json.dumps(deep, allow_nan=False)
    assert "(synthetic answer from scripted:centrist)" in row.narrative
    assert deep["pca"]["available"] and set(deep["pca"]["coordinates"]) == set(PERSONAS[:3])
    assert deep["agreement"]["krippendorffAlpha"]["coders"] == 4
    assert deep["insights"]
    assert any("scripted:refuser refused 100%" in s for s in deep["insights"])
    served = await run_analysis(db, org_id, run_id, deep=True)
    assert served.cached and served.deep_cached
    assert served.analysis["deep"]["narrative"] == row.narrative


async def test_a_narrative_asked_for_a_cached_deep_analysis_is_written(
    db: Database, org_id: str
) -> None:
    definition_id = await set_up(db, org_id)
    run_id = await launch(db, org_id, definition_id, run_config(PERSONAS[:3]))

    async def narrated(computed_at: str) -> Any:
        async with db.transaction() as conn:
            row = await stored_analysis(conn, org_id, run_id, "deep")
        if row is None or row.result["computedAt"] != computed_at:
            return None
        return row if row.narrative else None

    async def ask(model: str) -> None:
        async with db.transaction(immediate=True) as conn:
            run = await get_run(conn, org_id, run_id)
            await enqueue_analysis(conn, run, "deep", narrative_model=model)

    async with running_worker(db):
        await wait_completed(db, org_id, run_id)
        first = await run_analysis(db, org_id, run_id, deep=True)  # no narrative asked
        assert first.deep_cached is False and first.analysis["meta"]["deepCached"] is False
        assert first.analysis["deep"]["narrative"] is None
        with pytest.raises(UnknownModelError, match="no-such-model"):
            await ask("openai:no-such-model")  # checked like a run's models, nothing queued
        await ask("scripted:centrist")  # the deep analysis is served from the cache ...
        computed_at = first.analysis["deep"]["computedAt"]
        row = await wait_until_async(  # ... and still narrated
            lambda: narrated(computed_at), what="the narrative"
        )
        assert "(synthetic answer from scripted:centrist)" in row.narrative
        served = await run_analysis(db, org_id, run_id, deep=True)
        assert served.to_dict()["deep_cached"] is True and served.to_dict()["cached"] is True
        assert served.analysis["meta"]["deepCached"] is True
        assert served.analysis["deep"]["narrative"] == row.narrative
        await ask("scripted:centrist")  # it has one: nothing more to write
        # A forced recomputation drops the narrative; asked again, a new one is written.
        forced = await run_analysis(db, org_id, run_id, deep=True, force=True)
        assert forced.deep_cached is False and forced.analysis["deep"]["narrative"] is None
        await ask("scripted:centrist")
        await wait_until_async(
            lambda: narrated(forced.analysis["deep"]["computedAt"]),
            what="the narrative of the forced analysis",
        )
    async with db.transaction() as conn:
        kinds = (
            await conn.execute(
                select(jobs.c.item_key).where(jobs.c.kind == NARRATE, jobs.c.org_id == org_id)
            )
        ).scalars()
        narratives = [k for k in kinds if k.startswith("narrative:")]
    assert len(narratives) == 2  # one per computed deep analysis, not one per request


async def test_two_runs_compared_an_experiment_and_lineage_over_a_fork(
    db: Database, org_id: str
) -> None:
    definition_id = await set_up(db, org_id)
    baseline = await launch(db, org_id, definition_id, run_config(PERSONAS[:2]))
    other = await launch(
        db, org_id, definition_id, run_config(("scripted:utilitarian", "scripted:agreeable"))
    )
    fork_text = DEMO.read_text().replace("Give me your judgement", "Tell me your judgement")
    async with db.transaction() as conn:
        fork = await fork_definition(
            conn, org_id, definition_id, definition=parse_and_check(fork_text)
        )
    forked = await launch(db, org_id, fork.version.id, run_config(PERSONAS[:2]))
    async with running_worker(db):
        for run_id in (baseline, other, forked):
            await wait_completed(db, org_id, run_id)
        async with db.transaction(immediate=True) as conn:
            comparison = await create_comparison(conn, org_id, baseline, other, "fdr_bh")
            await enqueue_comparison(conn, org_id, comparison.id, baseline)
            experiment = await create_experiment(
                conn, org_id, name="temperature", hypothesis="none", baseline_run=baseline
            )
            variant = await add_variant(
                conn,
                org_id,
                experiment.id,
                {"models": ["scripted:utilitarian", "scripted:centrist"]},
            )

        async def compared() -> Any:
            async with db.transaction() as conn:
                found = await get_comparison(conn, org_id, comparison.id)
            return found if found.status != "queued" else None

        done = await wait_until_async(compared, what="the comparison computed")
        await wait_completed(db, org_id, variant.run.id)
        # The variant's basic analysis is queued when it completes: wait for it before the
        # worker stops, or the count below races the worker.
        await wait_stored(db, org_id, variant.run.id, "basic")
    assert done.status == "completed" and done.result is not None
    result = done.result
    assert result["models"] == {
        "shared": ["scripted:utilitarian"],
        "baselineOnly": ["scripted:contrarian"],
        "comparisonOnly": ["scripted:agreeable"],
    }
    same = result["perModel"]["scripted:utilitarian"]
    assert same["n"] == 8  # the same persona on the same scenarios: only its noise differs
    assert abs(same["delta"]) < 1 and same["wilcoxon"]["significant"] is False
    assert result["scenarios"]["shared"] == 8

    report = await experiment_report(db, org_id, experiment.id)
    [entry] = report["variants"]
    assert entry["changes"] == {"models": ["scripted:utilitarian", "scripted:centrist"]}
    assert entry["status"] == "completed"
    assert entry["comparison"]["result"]["models"]["comparisonOnly"] == ["scripted:centrist"]
    assert (await experiment_report(db, org_id, experiment.id))["variants"][0]["cached"]

    lineage = await lineage_results(db, org_id, definition_id)
    labels = {v["label"]: v for v in lineage["versions"]}
    assert set(labels) == {"v1", "v1.1"}
    assert {r["id"] for r in labels["v1"]["runs"]} == {baseline, other, variant.run.id}
    assert labels["v1.1"]["representative_run_id"] == forked
    [change] = lineage["changes"]
    assert (change["from_label"], change["to_label"]) == ("v1", "v1.1")
    assert change["diff"]["template"] is not None
    assert any("template changed" in line for line in change["diff_lines"])
    assert change["comparison"]["scenarios"]["shared"] > 0
    assert lineage["aligned"] and all(
        set(row["versions"]) <= {definition_id, fork.version.id} for row in lineage["aligned"]
    )
    async with db.transaction() as conn:
        count = len((await conn.execute(select(analyses.c.id))).all())
        kinds = set((await conn.execute(select(jobs.c.kind))).scalars())
    assert count >= 4  # every completed run got its basic analysis
    assert {"analyze:basic", "analyze:compare"} <= kinds


def by_scenario(rows: Any, model: str) -> dict[str, float]:
    """`model`'s mean decision per scenario it decided, from (model, scenario, code) rows."""
    codes: dict[str, list[int]] = {}
    for row_model, scenario, code in rows:
        if row_model == model and code is not None:
            codes.setdefault(scenario, []).append(code)
    return {scenario: sum(c) / len(c) for scenario, c in codes.items()}
