"""The response cache pays across runs (issue 32 §2): a second run identical to a first, with
`reuse_cache`, asks the provider nothing — its transcripts are marked cached and cost 0 —
and a run that changes one parameter asks every call again. Real workers, the OpenAI
adapter against a fake OpenAI server on loopback that counts what it is sent, on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from tests.pipeline.test_followup_ratelimit import DEMO, FAST, _fake_servers
from tests.waiting import run_report_when

from valuerank.db import Database
from valuerank.db.tables import transcripts
from valuerank.definitions.service import import_definition
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.queue import Worker
from valuerank.runs.config import RunConfig
from valuerank.runs.states import RunStatus

MODEL = "openai:gpt-4o-mini"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    fake = _fake_servers().OpenAIServer().start()
    yield fake
    fake.stop()


async def _run(
    db: Database, org_id: str, definition_id: str, environ: dict[str, str], **changes: Any
) -> tuple[str, list[Any]]:
    config = RunConfig(
        models=(MODEL,), sample_percentage=30, sample_seed=0, followup_turns=1, **changes
    )
    async with db.transaction() as conn:
        launched = await launch_run(
            conn, org_id, definition_id, config, environ=environ, allow_unknown_models=True
        )
    run_id = launched.created.run.id
    worker = Worker(db, settings=FAST, concurrency=4)
    ctx = PipelineContext(db, providers=ProviderPool(environ=environ), poll_seconds=0.1)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    try:
        report = await run_report_when(db, org_id, run_id)
    finally:
        worker.stop()
        await task
        await ctx.aclose()
    assert report.run.status is RunStatus.COMPLETED
    async with db.transaction() as conn:
        rows = list(await conn.execute(select(transcripts).where(transcripts.c.run_id == run_id)))
    return run_id, rows


def _texts(rows: list[Any]) -> dict[str, list[tuple[str, str]]]:
    return {r.scenario_id: [(t["probe"], t["target"]) for t in r.turns] for r in rows}


async def test_an_identical_run_asks_nothing_and_a_changed_one_asks_everything(
    db: Database, org_id: str, server: Any
) -> None:
    environ = {"OPENAI_API_KEY": "sk-test-0000000000", "VALUERANK_OPENAI_BASE_URL": server.base_url}
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    definition_id = stored.version.id

    _, first = await _run(db, org_id, definition_id, environ)
    asked = len(server.requests)
    assert asked == 2 * len(first) > 0  # turn 1 and the follow-up of each transcript
    assert not any(row.cached for row in first)

    _, second = await _run(db, org_id, definition_id, environ, reuse_cache=True)
    assert len(server.requests) == asked  # not one call
    assert len(second) == len(first)
    assert all(row.cached for row in second)
    assert all(row.cost_usd in (0, None) for row in second)
    assert _texts(second) == _texts(first)  # the same questions and answers, verbatim

    _, warmer = await _run(db, org_id, definition_id, environ, reuse_cache=True, temperature=0.5)
    assert len(server.requests) == 2 * asked  # every call again
    assert not any(row.cached for row in warmer)

    # Without `reuse_cache` the cache is written, never read: an identical run asks again.
    _, fresh = await _run(db, org_id, definition_id, environ)
    assert len(server.requests) == 3 * asked and not any(row.cached for row in fresh)
