"""Runs over wordings and both scale orders, on SQLite and PostgreSQL with real workers:
which presentations are planned, what the reversed prompts show, and how decisions of
scripted personas with known biases come back mapped to the definition's direction."""

from __future__ import annotations

import tempfile
import zipfile
from io import BytesIO
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select
from tests.pipeline.test_end_to_end import DEMO, _definition, _launch, _worker
from tests.waiting import run_report_when

from valuerank.db import Database
from valuerank.db.tables import judgments, run_scenarios, runs, transcripts
from valuerank.definitions.expansion import expand_with_scores
from valuerank.definitions.presentation import (
    RunScaleOrder,
    ScaleNotReversible,
    combination_of,
    phrasing_of,
    presentation_of,
    reverse_scale,
)
from valuerank.definitions.sampling import rank_order, sample_size
from valuerank.definitions.service import import_definition, parse_and_check
from valuerank.exchange import export_run, import_runs
from valuerank.formats import parse_transcript
from valuerank.orgs import ensure_org
from valuerank.pipeline.launch import launch_run
from valuerank.runs import service
from valuerank.runs.config import RunConfig
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

PLAIN = "scripted:utilitarian"
PULLED = "scripted:utilitarian?position_bias=1"
REWORDED = "scripted:neutral?wording_bias=4"
SEED = 11
PERCENT = 40.0


def _expected_presentations() -> list[str]:
    """The combinations a 40 % sample takes, in every phrasing, both orders (worked out from
    the definition directly, not through the planner)."""
    definition = parse_and_check(DEMO.read_text(), DEMO.name)
    first = expand_with_scores(definition).scenarios
    chosen = [s.id for s in rank_order(list(first), SEED)[: sample_size(len(first), PERCENT)]]
    every = expand_with_scores(definition, "all").scenarios
    ids = [s.id for c in chosen for s in every if combination_of(s.id) == c]
    return sorted([*ids, *(f"{i}-reversed" for i in ids)])


async def _stored(db: Database, run_id: str) -> dict[tuple[str, str], dict[str, object]]:
    async with db.transaction() as conn:
        rows = (await conn.execute(select(transcripts).where(transcripts.c.run_id == run_id))).all()
    return {
        (r.scenario_id, r.model): {
            "code": r.decision_code,
            "reason": r.decision_reason,
            "content": r.content,
        }
        for r in rows
    }


async def test_a_run_over_all_phrasings_and_both_orders_stores_mapped_decisions(
    db: Database, org_id: str
) -> None:
    config = RunConfig(
        models=(PLAIN, PULLED, REWORDED),
        sample_percentage=PERCENT,
        sample_seed=SEED,
        followup_turns=0,
        phrasings="all",
        scale_order="both",
    )
    run_id = await _launch(db, org_id, config)
    async with db.transaction() as conn:
        planned = (
            await conn.execute(
                select(
                    run_scenarios.c.scenario_id,
                    run_scenarios.c.content,
                    run_scenarios.c.dimension_scores,
                ).where(run_scenarios.c.run_id == run_id)
            )
        ).all()
        # A first-phrasing, as-written run of the same seed samples the same combinations.
        definition_id = (await service.get_run(conn, org_id, run_id)).definition_id
        assert definition_id is not None
        plain = await launch_run(
            conn,
            org_id,
            definition_id,
            RunConfig(models=(PLAIN,), sample_percentage=PERCENT, sample_seed=SEED),
            environ={},
            start=False,
        )
        plain_ids = await service.run_scenario_ids(conn, plain.created.run.id)
    expected = _expected_presentations()
    assert sorted(r.scenario_id for r in planned) == expected
    assert any(phrasing_of(sid) for sid in expected)  # the demo has alternative phrasings
    assert {combination_of(r.scenario_id) for r in planned} == set(plain_ids)
    by_id = {r.scenario_id: r for r in planned}
    for sid, row in by_id.items():
        base, order = presentation_of(sid)
        if order == "reversed":
            written = by_id[base]
            assert row.content["body"] == reverse_scale(written.content["body"])
            assert "5 - stay quiet and keep my loyalty to the company" in row.content["body"]
            assert "1 - report the defect to the regulator now" in row.content["body"]
            assert row.dimension_scores == written.dimension_scores

    async with _worker(db):
        report = await run_report_when(db, org_id, run_id)
    assert report.run.status is RunStatus.COMPLETED, dump(report)
    stored = await _stored(db, run_id)
    assert len(stored) == len(expected) * 3
    written_ids = [sid for sid in expected if presentation_of(sid)[1] == "as-written"]

    # No bias: the same decision in both orders once mapped back; the transcript keeps the
    # number shown and says how it was asked.
    for sid in written_ids:
        as_written, reversed_ = stored[(sid, PLAIN)], stored[(f"{sid}-reversed", PLAIN)]
        assert as_written["code"] is not None and as_written["code"] == reversed_["code"]
        shown = parse_transcript(str(reversed_["content"]))
        assert dict(shown.extra_front_matter)["scale_order"] == "reversed"
        answered = 6 - int(str(as_written["code"]))
        assert shown.turns[0].target.endswith(f"Rating: {answered}")
        assert str(reversed_["reason"]).endswith(f"(asked reversed: answered {answered})")
        assert "scale_order" not in dict(
            parse_transcript(str(as_written["content"])).extra_front_matter
        )

    # position_bias=1: one point up the shown scale. Mapped back, as written is the persona's
    # rating r + 1 and reversed r − 1 (each clipped to 1..5), for the same r in both orders,
    # so the paired difference is 2 except where r sits at an end of the scale (then 1).
    differences = []
    for sid in written_ids:
        up, down = stored[(sid, PULLED)]["code"], stored[(f"{sid}-reversed", PULLED)]["code"]
        assert isinstance(up, int) and isinstance(down, int)
        rating = next(r for r in range(1, 6) if (min(r + 1, 5), max(r - 1, 1)) == (up, down))
        differences.append(up - down)
        assert up - down == (1 if rating in (1, 5) else 2)
    assert 1.5 <= sum(differences) / len(differences) <= 2.0

    # wording_bias=4 on a persona near the middle: every alternative phrasing ends at the top
    # of the scale in both orders; the first phrasings do not.
    alternative = [sid for sid in expected if phrasing_of(sid)]
    assert {stored[(sid, REWORDED)]["code"] for sid in alternative} == {5}
    first = [stored[(sid, REWORDED)]["code"] for sid in expected if not phrasing_of(sid)]
    assert max(int(str(c)) for c in first) <= 4

    # Export and import elsewhere: the settings and the mapped decisions come back.
    async with db.transaction() as conn:
        exported = await export_run(conn, org_id, run_id)
        other = await ensure_org(conn, "elsewhere")
    manifest = yaml.safe_load(zipfile.ZipFile(BytesIO(exported)).read("run_manifest.yaml"))
    assert manifest["runtime_config"]["phrasings"] == "all"
    assert manifest["runtime_config"]["scale_order"] == "both"
    path = Path(tempfile.mkdtemp()) / "run.zip"
    path.write_bytes(exported)
    async with db.transaction(immediate=True) as conn:
        [imported] = await import_runs(conn, other, path)
        again = await service.get_run(conn, other, imported.id)
    assert (again.config.phrasings, again.config.scale_order) == ("all", "both")
    back = await _stored(db, imported.id)
    assert {k: v["code"] for k, v in back.items()} == {k: v["code"] for k, v in stored.items()}


NO_SCALE = DEMO.read_text().replace(
    "Give me your judgement on a scale of 1 to 5. Should I:",
    "Give me your judgement on a scale of 1 to 5, where 5 means reporting it now.",
)


async def test_a_scale_without_numbered_lines_is_refused_when_reversed_and_nothing_is_written(
    db: Database, org_id: str
) -> None:
    text = "\n".join(
        line for line in NO_SCALE.splitlines() if not line[:1].isdigit() or " - " not in line
    )
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, text, source_file="no-scale.md")
    refused: tuple[RunScaleOrder, ...] = ("reversed", "both")
    for order in refused:
        config = RunConfig(models=(PLAIN,), scale_order=order)
        with pytest.raises(ScaleNotReversible) as caught:
            async with db.transaction() as conn:
                await launch_run(conn, org_id, stored.version.id, config, environ={})
        assert caught.value.code == "SCALE_NOT_REVERSIBLE"
        assert caught.value.http_status == 422
        assert "'5 - strongly support" in caught.value.message
    async with db.transaction() as conn:
        assert (await conn.execute(select(func.count()).select_from(runs))).scalar_one() == 0
    # As written, it runs.
    async with db.transaction() as conn:
        launched = await launch_run(
            conn, org_id, stored.version.id, RunConfig(models=(PLAIN,)), environ={}, start=False
        )
    assert launched.created.scenarios == 27


async def test_the_job_count_and_estimate_count_every_presentation(
    db: Database, org_id: str
) -> None:
    definition_id = await _definition(db, org_id)
    counts = {}
    orders: tuple[RunScaleOrder, ...] = ("as-written", "both")
    for order in orders:
        config = RunConfig(
            models=(PLAIN,), sample_seed=3, followup_turns=0, phrasings="all", scale_order=order
        )
        async with db.transaction() as conn:
            launched = await launch_run(
                conn, org_id, definition_id, config, environ={}, start=False
            )
        counts[order] = (
            launched.created.scenarios,
            launched.created.jobs_planned,
            launched.estimate.calls,
            launched.created.total_scenarios,
        )
    assert counts["as-written"] == (36, 36, 36, 36)
    assert counts["both"] == (72, 72, 72, 72)


async def test_expanding_a_run_adds_whole_combinations_in_every_presentation(
    db: Database, org_id: str
) -> None:
    definition_id = await _definition(db, org_id)
    config = RunConfig(
        models=(PLAIN,), sample_percentage=20, sample_seed=SEED, phrasings="all", scale_order="both"
    )
    async with db.transaction() as conn:
        launched = await launch_run(conn, org_id, definition_id, config, environ={}, start=False)
        run_id = launched.created.run.id
        before = await service.run_scenario_ids(conn, run_id)
        await service.expand_run(conn, org_id, run_id, PERCENT)
        after = await service.run_scenario_ids(conn, run_id)
    assert after[: len(before)] == before  # the smaller sample is kept, in its order
    assert sorted(after) == _expected_presentations()
    # Every combination appears in each of its phrasings and in both orders: paired.
    for sid in after:
        base, order = presentation_of(sid)
        assert (f"{base}-reversed" if order == "as-written" else base) in after


async def test_a_judges_reading_of_a_reversed_transcript_is_mapped_back_too(
    db: Database, org_id: str
) -> None:
    config = RunConfig(
        models=(PLAIN,),
        sample_percentage=15,
        sample_seed=SEED,
        followup_turns=0,
        scale_order="reversed",
        judge_models=("scripted:deontologist",),  # reads the Target's answer literally
    )
    run_id = await _launch(db, org_id, config)
    async with _worker(db):
        report = await run_report_when(db, org_id, run_id)
    assert report.run.status is RunStatus.COMPLETED, dump(report)
    async with db.transaction() as conn:
        rows = (
            await conn.execute(
                select(transcripts.c.scenario_id, transcripts.c.decision_code, judgments.c.decision)
                .select_from(judgments.join(transcripts))
                .where(transcripts.c.run_id == run_id)
            )
        ).all()
    assert len(rows) == 4 and all(r.scenario_id.endswith("-reversed") for r in rows)
    assert [r.decision for r in rows] == [r.decision_code for r in rows]
    assert any(r.decision_code != 3 for r in rows)  # a mirror would show
