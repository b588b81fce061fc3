"""A run's cost estimate counts every call the run will make (SQLite and PostgreSQL): the
probe conversations, each judge reading each transcript against the run's rubric, the summary
model writing each rationale — with registry prices, and a price it lacks said, not zeroed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

import valuerank
from valuerank.db import Database
from valuerank.db.tables import judgments, transcripts
from valuerank.definitions.service import import_definition
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.judging import JUDGE_MAX_TOKENS, SUMMARY_MAX_TOKENS, run_rubric
from valuerank.pipeline.launch import launch_run
from valuerank.pipeline.prompts import judge_messages, summary_messages
from valuerank.providers.costs import estimate_message_tokens
from valuerank.queue import QueueSettings, Worker
from valuerank.rubrics import import_rubric
from valuerank.runs.config import RunConfig
from valuerank.runs.hooks import RUN_HOOKS
from valuerank.runs.progress import read_report
from valuerank.runs.states import RunStatus

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
RUBRIC = Path(__file__).parents[2] / "examples" / "values_rubric.yaml"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)


async def test_judges_and_summaries_are_in_the_estimate(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(
            models=("scripted:utilitarian", "openai:gpt-4.1"),
            judge_models=("scripted:centrist", "openai:gpt-4.1-mini"),
            summary_model="scripted:agreeable",
            sample_percentage=30,
            sample_seed=3,
            samples_per_scenario=2,
            followup_turns=1,
            max_tokens=400,
        )
        launched = await launch_run(
            conn, org_id, stored.version.id, config, start=False,
            environ={"OPENAI_API_KEY": "sk-test-not-used"},
        )  # fmt: skip
        rubric = await run_rubric(conn, launched.created.run)
    assert rubric is not None and rubric.values
    estimate = launched.estimate
    conversations = launched.created.scenarios * 2
    by_role = {(m.role, m.model): m for m in estimate.models}
    assert list(by_role) == [
        ("probe", "scripted:utilitarian"),
        ("probe", "openai:gpt-4.1"),
        ("judge", "scripted:centrist"),
        ("judge", "openai:gpt-4.1-mini"),
        ("summary", "scripted:agreeable"),
    ]
    probe = by_role[("probe", "openai:gpt-4.1")]
    assert probe.calls == conversations * 2 and probe.output_tokens == conversations * 2 * 400
    # Each judge reads every transcript: one per conversation of each of the 2 target models
    # (it once counted one per conversation, half the calls the run makes).
    transcripts = conversations * 2
    judge = by_role[("judge", "openai:gpt-4.1-mini")]
    assert judge.calls == transcripts
    assert judge.output_tokens == transcripts * JUDGE_MAX_TOKENS
    # A judge reads its instructions with the run's rubric and the whole transcript, every
    # answer at max_tokens: more than the rubric-less instructions and both answers.
    per_call = judge.input_tokens // transcripts
    assert per_call > estimate_message_tokens(judge_messages("", rubric)) + 2 * 400
    summary = by_role[("summary", "scripted:agreeable")]
    assert summary.calls == transcripts
    assert summary.output_tokens == transcripts * SUMMARY_MAX_TOKENS
    assert summary.input_tokens // transcripts > estimate_message_tokens(summary_messages("", None))
    assert judge.cost_usd is not None and judge.cost_usd > 0  # priced in the registry
    assert summary.cost_usd == 0.0  # scripted models are free, not unknown
    assert estimate.cost_usd == pytest.approx(sum(m.cost_usd or 0 for m in estimate.models))
    assert estimate.calls == conversations * 2 * 2 + transcripts * (2 + 1)


async def _work_until_idle(db: Database) -> None:
    """A real worker runs every queued job of the pipeline, then stops."""
    worker = Worker(db, settings=FAST, concurrency=4, hooks=RUN_HOOKS)
    ctx = PipelineContext(db, providers=ProviderPool(environ={}))
    register_pipeline_handlers(worker, ctx)
    try:
        await worker.run_until_idle()
    finally:
        await ctx.aclose()


async def test_the_estimate_counts_the_calls_a_run_makes(db: Database, org_id: str) -> None:
    """Run it: every probe turn, every judge's reading of every transcript and every summary
    the estimate counted is a call the run made, no more and no fewer."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(
            models=("scripted:utilitarian", "scripted:contrarian", "scripted:centrist"),
            judge_models=("scripted:centrist", "scripted:agreeable"),
            summary_model="scripted:agreeable",
            sample_percentage=20,
            sample_seed=5,
            samples_per_scenario=2,
            followup_turns=1,
        )
        launched = await launch_run(conn, org_id, stored.version.id, config)
    run_id = launched.created.run.id
    await _work_until_idle(db)
    report = await read_report(db, org_id, run_id)
    assert report.run.status is RunStatus.COMPLETED

    made: Counter[tuple[str, str]] = Counter()
    async with db.transaction() as conn:
        stored_transcripts = (
            await conn.execute(
                select(
                    transcripts.c.id,
                    transcripts.c.model,
                    transcripts.c.turns,
                    transcripts.c.rationale,
                ).where(transcripts.c.run_id == run_id)
            )
        ).all()
        readings = (
            await conn.execute(
                select(judgments.c.judge_model).where(
                    judgments.c.transcript_id.in_([t.id for t in stored_transcripts])
                )
            )
        ).scalars()
        for judge in readings:
            made["judge", judge] += 1
    for t in stored_transcripts:
        made["probe", t.model] += len(t.turns)  # one call per turn
        made["summary", "scripted:agreeable"] += t.rationale is not None
    estimated = Counter({(m.role, m.model): m.calls for m in launched.estimate.models})
    assert len(stored_transcripts) == launched.created.scenarios * 2 * 3
    assert made == estimated, (made, estimated)


async def test_a_second_run_is_sized_by_the_first_runs_answers(db: Database, org_id: str) -> None:
    """After a run of a definition version, the next run's estimate sizes each model's answers
    as they were (the mean output tokens of a turn, over its transcripts), says so, and is no
    longer an upper bound; a model never run there stays at max tokens."""
    config = RunConfig(
        models=("scripted:utilitarian",),
        sample_percentage=20,
        sample_seed=5,
        followup_turns=1,
        max_tokens=900,
    )
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        first = await launch_run(conn, org_id, stored.version.id, config)
    assert first.estimate.upper_bound and first.estimate.to_dict()["upper_bound"] is True
    await _work_until_idle(db)
    async with db.transaction() as conn:
        answered = (
            await conn.execute(
                select(transcripts.c.output_tokens).where(
                    transcripts.c.run_id == first.created.run.id
                )
            )
        ).scalars()
        per_turn = [tokens / 2 for tokens in answered]  # two turns each
        second = await launch_run(
            conn,
            org_id,
            stored.version.id,
            config.model_copy(update={"models": ("scripted:utilitarian", "scripted:contrarian")}),
        )
    learned_mean = round(sum(per_turn) / len(per_turn))
    assert 0 < learned_mean < config.max_tokens
    sized, unknown = second.estimate.models
    assert (sized.model, sized.learned_from) == ("scripted:utilitarian", len(per_turn))
    assert (unknown.model, unknown.learned_from) == ("scripted:contrarian", 0)
    conversations = second.created.scenarios
    assert sized.output_tokens == conversations * 2 * learned_mean
    assert unknown.output_tokens == conversations * 2 * config.max_tokens
    assert not second.estimate.upper_bound
    shown = second.estimate.to_dict()
    assert shown["upper_bound"] is False
    assert [m["learned_from"] for m in shown["models"]] == [len(per_turn), 0]
