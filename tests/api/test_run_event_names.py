"""A run's events under one family of names, on SQLite and PostgreSQL: `run_paused`,
`run_resumed`, `run_cancelled`, `run_reaped`, `run_complete` are written (rows under the old
`partition_*` names still read the same, and webhooks subscribed to an old name still get
them); `task_*` only for probes (a step's job events are `job_*` to webhooks and in the event
log); and every progress fraction counts probes only."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from valuerank.db import Database
from valuerank.db.tables import outbox
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.queue import QueueSettings, Worker
from valuerank.queue.events import EventType, append_event
from valuerank.queue.hooks import using as using_hooks
from valuerank.queue.outbox import register_webhook
from valuerank.runs import service
from valuerank.runs.config import RunConfig
from valuerank.runs.hooks import RUN_HOOKS

from .conftest import Live, import_demo

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05)
HOOK = "https://hooks.example.com/"  # never called: the outbox rows are what is checked


async def _topics(db: Database, webhook_id: str) -> list[tuple[str, dict[str, Any]]]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(outbox.c.topic, outbox.c.payload)
            .where(outbox.c.webhook_id == webhook_id)
            .order_by(outbox.c.created_at, outbox.c.id)
        )
        return [(r.topic, r.payload) for r in rows]


async def test_run_life_names_and_old_rows_and_old_subscriptions(
    live: Live, db: Database, make_run: Any
) -> None:
    run = await make_run(live.org_id)
    # The runs' hooks, as the API and the CLI run these services with.
    with using_hooks(RUN_HOOKS):
        async with db.transaction() as conn:
            old_hook = await register_webhook(
                conn, live.org_id, HOOK, event_types=["partition_paused"]
            )
            new_hook = await register_webhook(
                conn, live.org_id, HOOK, event_types=["run_cancelled"]
            )
            await service.start_run(conn, live.org_id, run.id)
            # A row under the old name, as a run paused before the rename wrote it.
            await append_event(
                conn, org_id=live.org_id, partition=run.id, type=EventType.PARTITION_PAUSED
            )
            await service.pause_run(conn, live.org_id, run.id)
            await service.resume_run(conn, live.org_id, run.id)
            await service.cancel_run(conn, live.org_id, run.id)

    async with live.client() as client:
        page = (await client.get(f"/api/runs/{run.id}/events")).json()["data"]
        types = [e["type"] for e in page["events"]]
        assert types[:4] == ["run_paused", "run_paused", "run_resumed", "run_cancelled"]
        assert not [t for t in types if t.startswith("partition_")]
    # Subscribed under the old name: both pauses (the old row's and the new one's), by name.
    assert [t for t, _ in await _topics(db, old_hook.id)] == ["partition_paused", "run_paused"]
    assert [t for t, _ in await _topics(db, new_hook.id)] == ["run_cancelled"]


async def test_task_events_are_probes_and_progress_counts_probes(live: Live, db: Database) -> None:
    definition = await import_demo(db, live.org_id)
    config = RunConfig(models=("scripted:utilitarian",), sample_percentage=10)
    async with db.transaction(immediate=True) as conn:
        tasks = await register_webhook(conn, live.org_id, HOOK, event_types=["task_complete"])
        steps = await register_webhook(conn, live.org_id, HOOK, event_types=["job_complete"])
        ends = await register_webhook(conn, live.org_id, HOOK, event_types=["partition_complete"])
        run_id = (await launch_run(conn, live.org_id, definition, config, name="n")).created.run.id
    worker = Worker(db, settings=FAST)
    context = PipelineContext(db, providers=ProviderPool(environ={}))
    register_pipeline_handlers(worker, context)
    try:
        await worker.run_until_idle()
    finally:
        await context.aclose()

    probe_hooks = await _topics(db, tasks.id)
    total = len(probe_hooks)
    assert total >= 1
    assert {p["data"]["kind"] for _, p in probe_hooks} == {"probe"}
    assert sorted(p["data"]["done"] for _, p in probe_hooks) == list(range(1, total + 1))
    assert {p["data"]["progress"] for _, p in probe_hooks} >= {f"{total}/{total}"}
    assert all(p["data"]["total"] == total for _, p in probe_hooks)
    assert all(sum(p["data"]["counts"].values()) == total for _, p in probe_hooks)
    step_hooks = await _topics(db, steps.id)
    assert step_hooks and {p["data"]["kind"] for _, p in step_hooks} <= {
        "finalize", "judge", "summarize", "analyze:basic"
    }  # fmt: skip
    assert all("progress" not in p["data"] for _, p in step_hooks)
    # Subscribed under the old name (the analysis partition, no run, still says that one).
    ended = [(t, p) for t, p in await _topics(db, ends.id) if p["partition"] == run_id]
    [(end_topic, end)] = ended
    assert end_topic == "run_complete" and end["data"]["progress"] == f"{total}/{total}"

    async with live.client() as client:
        page = (await client.get(f"/api/runs/{run_id}/events", params={"limit": 500})).json()
    log = page["data"]["events"]
    probes = [e for e in log if e["type"] == "task_complete"]
    assert len(probes) == total and {e["data"]["kind"] for e in probes} == {"probe"}
    assert [e["data"]["progress"] for e in probes] == [f"{i}/{total}" for i in range(1, total + 1)]
    finals = [e for e in log if e["data"].get("kind") == "finalize"]
    assert finals and all(e["type"].startswith("job_") for e in finals)
    assert log[-1]["type"] == "run_complete"
    assert log[-1]["data"]["progress"] == f"{total}/{total}"
