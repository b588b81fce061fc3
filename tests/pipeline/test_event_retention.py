"""A finished run whose events maintenance pruned still replays to its end: its feed (the
API's SSE and WebSocket read it) keeps the run's last message with the same progress, and
the run's report does not change."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from tests.pipeline.test_end_to_end import FAST, _launch, _report, _worker
from tests.waiting import run_report_when

from valuerank.db import Database
from valuerank.db.tables import events
from valuerank.queue import events_after
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.maintenance import run_maintenance
from valuerank.runs import service
from valuerank.runs.config import RunConfig
from valuerank.runs.events import RunEventReader
from valuerank.runs.states import RunStatus

DAY = 86400.0


async def _messages(db: Database, org_id: str, run_id: str) -> list[dict[str, Any]]:
    async with db.transaction() as conn:
        run = await service.get_run(conn, org_id, run_id)
        reader = await RunEventReader.open(conn, run, 0)
        messages, _ = await reader.read(conn, 10_000)
    return messages


async def test_a_finished_run_replays_to_its_end_after_its_events_are_pruned(
    db: Database, org_id: str
) -> None:
    config = RunConfig(
        models=("scripted:utilitarian",), sample_percentage=20, sample_seed=0, followup_turns=0
    )
    run_id = await _launch(db, org_id, config)
    async with _worker(db):
        done = await run_report_when(
            db, org_id, run_id, lambda r: r.run.status.terminal and not r.progress.active
        )
    assert done.run.status is RunStatus.COMPLETED and done.progress.completed == 5
    before = await _messages(db, org_id, run_id)
    assert before[-1]["type"] == "run_complete" and before[-1]["progress"] == "5/5"
    async with db.transaction(immediate=True) as conn:
        stored = len(await events_after(conn, run_id, 0, limit=10_000))
        ago = db_now_plus(conn.dialect.name, -10 * DAY)
        await conn.execute(
            update(events).where(events.c.partition == run_id).values(created_at=ago)
        )

    record = await run_maintenance(db, FAST.model_copy(update={"event_retention_days": 7}))
    assert record is not None and record.actions["pruned_events"] == stored - 1

    (end,) = await _messages(db, org_id, run_id)
    end.pop("timestamp"), before[-1].pop("timestamp")  # aged above
    assert end == before[-1]
    after = await _report(db, org_id, run_id)
    assert after.progress == done.progress and after.run.status is RunStatus.COMPLETED
