"""Judging a finished run again (issue 31, section 3), on both backends with a real worker and
scripted models: the judges read the stored transcripts and the target models are never
asked again (the probe handler counts its calls); the analysis recomputes with the new
judges; `replace` removes the judgments of judges no longer listed; the organisation's
default judges serve a run created without any."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import judgments, transcripts
from valuerank.errors import ConflictError, InvalidInputError
from valuerank.findings.analyses import run_analysis
from valuerank.org_defaults import OrgDefaults, get_org_defaults, set_org_defaults
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.pipeline.probe import run_probe
from valuerank.pipeline.rejudge import judge_run, new_judges
from valuerank.queue import Job, Worker
from valuerank.registry.service import UnknownModelError
from valuerank.runs.config import RunConfig
from valuerank.runs.kinds import PROBE
from valuerank.runs.service import get_run

from .analysis_support import FAST, JUDGES, set_up, wait_completed

TARGETS = ("scripted:utilitarian", "scripted:contrarian")


def run_config(judges: tuple[str, ...] = ()) -> RunConfig:
    return RunConfig(
        models=TARGETS, sample_percentage=30, sample_seed=0, followup_turns=0, judge_models=judges
    )


@contextlib.asynccontextmanager
async def counting_worker(db: Database, probes: list[str]) -> AsyncIterator[None]:
    """A real worker whose probe handler notes every call to a target model."""
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)

    async def counted_probe(job: Job) -> Any:
        probes.append(str(job.payload["model"]))
        return await run_probe(ctx, job)

    worker = Worker(db, settings=FAST, concurrency=4)
    register_pipeline_handlers(worker, ctx)
    worker.register(PROBE, counted_probe)
    task = asyncio.create_task(worker.run_forever())
    try:
        yield
    finally:
        worker.stop()
        await task
        await ctx.aclose()


async def _launch(db: Database, org_id: str, judges: tuple[str, ...] = ()) -> str:
    definition_id = await set_up(db, org_id)
    async with db.transaction() as conn:
        launched = await launch_run(conn, org_id, definition_id, run_config(judges), environ={})
    return launched.created.run.id


async def _judgments_by_judge(db: Database, run_id: str) -> dict[str, int]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(judgments.c.judge_model, func.count())
            .join(transcripts, transcripts.c.id == judgments.c.transcript_id)
            .where(transcripts.c.run_id == run_id)
            .group_by(judgments.c.judge_model)
        )
        return {judge: int(n) for judge, n in rows}


async def test_a_run_without_judges_is_judged_without_asking_its_targets_again(
    db: Database, org_id: str
) -> None:
    run_id = await _launch(db, org_id)
    probes: list[str] = []
    async with counting_worker(db, probes):
        await wait_completed(db, org_id, run_id)
        asked = len(probes)
        before = (await run_analysis(db, org_id, run_id)).analysis
        assert before["meta"]["judged"] == 0 and before["meta"]["values"] == []
        async with db.transaction(immediate=True) as conn:
            done = await judge_run(conn, org_id, run_id, JUDGES, environ={})
        assert done.added == JUDGES and done.removed == () and done.enqueued > 0
        await wait_completed(db, org_id, run_id)
    assert asked > 0 and len(probes) == asked  # no target model was asked again
    n = before["meta"]["transcripts"]
    assert await _judgments_by_judge(db, run_id) == {judge: n for judge in JUDGES}
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
    assert run.config.judge_models == JUDGES and run.rubric_id is not None
    after = (await run_analysis(db, org_id, run_id)).analysis
    assert after["meta"]["judged"] == n and after["meta"]["values"]  # value win rates now
    assert "NO_VALUE_JUDGMENTS" not in {w["code"] for w in after["warnings"]}


async def test_replace_keeps_listed_judges_and_removes_the_others(
    db: Database, org_id: str
) -> None:
    run_id = await _launch(db, org_id, JUDGES)
    probes: list[str] = []
    async with counting_worker(db, probes):
        await wait_completed(db, org_id, run_id)
        n = len(probes)
        kept, gone = JUDGES
        async with db.transaction() as conn:
            kept_ids = set(
                (
                    await conn.execute(
                        select(judgments.c.id).where(judgments.c.judge_model == kept)
                    )
                ).scalars()
            )
        async with db.transaction(immediate=True) as conn:
            done = await judge_run(
                conn, org_id, run_id, [kept, "scripted:deontologist"], replace=True, environ={}
            )
        assert done.removed == (gone,) and done.added == ("scripted:deontologist",)
        assert done.judgments_removed == n
        await wait_completed(db, org_id, run_id)
    assert len(probes) == n
    assert await _judgments_by_judge(db, run_id) == {kept: n, "scripted:deontologist": n}
    async with db.transaction() as conn:
        still = set(
            (
                await conn.execute(select(judgments.c.id).where(judgments.c.judge_model == kept))
            ).scalars()
        )
        consensus = (
            await conn.execute(
                select(transcripts.c.consensus).where(transcripts.c.run_id == run_id)
            )
        ).scalars()
        judges_read = {v["model"] for c in consensus for v in c["consensus"]["votes"]}
    assert still == kept_ids  # a judge still listed keeps its readings
    assert judges_read == {kept, "scripted:deontologist"}


def test_new_judges_adds_or_replaces() -> None:
    assert new_judges(("a:x",), ("b:y", "a:x"), replace=False) == (("a:x", "b:y"), ("b:y",), ())
    assert new_judges(("a:x", "c:z"), ("b:y",), replace=True) == (
        ("b:y",),
        ("b:y",),
        ("a:x", "c:z"),
    )


async def test_bad_judges_and_open_runs_are_refused_with_nothing_written(
    db: Database, org_id: str
) -> None:
    run_id = await _launch(db, org_id)
    async with db.transaction(immediate=True) as conn:
        with pytest.raises(ConflictError, match="judge it again"):
            await judge_run(conn, org_id, run_id, JUDGES, environ={})
    async with counting_worker(db, []):
        await wait_completed(db, org_id, run_id)
    for judges, error in (
        ([], InvalidInputError),
        (["nonsense"], InvalidInputError),
        (["scripted:centrist", "scripted:centrist"], InvalidInputError),
        (["openai:no-such-model"], UnknownModelError),
    ):
        async with db.transaction(immediate=True) as conn:
            with pytest.raises(error):
                await judge_run(conn, org_id, run_id, judges, environ={})
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
    assert run.config.judge_models == () and run.status.value == "completed"


async def test_a_run_created_without_judges_gets_the_organisation_defaults(
    db: Database, org_id: str
) -> None:
    async with db.transaction(immediate=True) as conn:
        assert await get_org_defaults(conn, org_id) == OrgDefaults()
        await set_org_defaults(conn, org_id, OrgDefaults(JUDGES, "scripted:deontologist"))
        with pytest.raises(UnknownModelError):
            await set_org_defaults(conn, org_id, OrgDefaults(("openai:no-such-model",)))
        assert (await get_org_defaults(conn, org_id)).judge_models == JUDGES
    definition_id = await set_up(db, org_id)
    async with db.transaction() as conn:
        defaulted = await launch_run(conn, org_id, definition_id, run_config(), environ={})
        named = await launch_run(conn, org_id, definition_id, run_config(JUDGES), environ={})
        opted_out = await launch_run(
            conn,
            org_id,
            definition_id,
            run_config(),
            environ={},
            use_org_defaults=False,
        )
    data = defaulted.to_dict()
    assert data["judge_models"] == list(JUDGES)
    assert data["summary_model"] == "scripted:deontologist"
    assert data["defaults_used"] == ["judges", "summary_model"]
    assert defaulted.created.run.config.default_judges and defaulted.rubric is not None
    assert named.to_dict()["defaults_used"] == ["summary_model"]
    assert not named.created.run.config.default_judges
    assert opted_out.to_dict()["judge_models"] == [] and opted_out.to_dict()["defaults_used"] == []
