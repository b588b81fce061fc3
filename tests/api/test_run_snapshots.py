"""The run page's one feed: `GET /api/runs/{id}/events/stream?snapshots=true` carries the
run's state as snapshots (the run as `GET /api/runs/{id}` gives it, its breakdown, and the key
of the page's sections), debounced, one first and one last before `end` — on a real server with
a real worker, on SQLite and PostgreSQL. Without `snapshots` the stream is as it was."""

from __future__ import annotations

import asyncio
from typing import Any

from valuerank.cli.live import in_process_worker
from valuerank.db import Database
from valuerank.pipeline.calls import ProviderPool
from valuerank.queue import QueueSettings
from valuerank.runs import service
from valuerank.runs.config import RunConfig

from .conftest import import_demo

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
MODELS = ("scripted:utilitarian?latency_ms=100", "scripted:contrarian?error_rate=1")


async def _messages(client: Any, url: str, sse_messages: Any) -> list[dict[str, Any]]:
    async with asyncio.timeout(90), client.stream("GET", url) as response:
        assert response.status_code == 200
        return [m async for m in sse_messages(response)]


async def test_snapshots_follow_the_run_and_the_last_one_is_its_end_state(
    live: Any, db: Database, org_id: str, sse_messages: Any
) -> None:
    definition_id = await import_demo(db, org_id)
    config = RunConfig(models=MODELS, sample_percentage=50, sample_seed=2)
    async with db.transaction(immediate=True) as conn:
        run = (await service.create_run(conn, org_id, definition_id, config)).run
        await service.start_run(conn, org_id, run.id)
    url = f"/api/runs/{run.id}/events/stream"
    workers = in_process_worker(
        db, settings=FAST, concurrency=2, providers=ProviderPool(environ={})
    )
    async with live.client() as client:
        async with workers:
            watched = await _messages(client, url + "?snapshots=true", sse_messages)
        plain = await _messages(client, url, sse_messages)
        detail = (await client.get(f"/api/runs/{run.id}")).json()["data"]
        breakdown = (await client.get(f"/api/runs/{run.id}/breakdown")).json()["data"]
        sections = await client.get(f"/runs/{run.id}/sections")
    kinds = [m["event"] for m in watched]
    snapshots = [m["data"] for m in watched if m["event"] == "snapshot"]
    events = [m for m in watched if m["event"] == "message"]
    # One at once, then debounced: far fewer than the run's events; one last before `end`.
    assert kinds[0] == "snapshot" and kinds[-2:] == ["snapshot", "end"]
    assert len(snapshots) < len(events)
    first, last = snapshots[0], snapshots[-1]
    assert first["run"]["id"] == run.id and first["run"]["status"] != "completed"
    # The last one is the finished run exactly as the JSON API answers it.
    assert last["run"] == detail and last["breakdown"] == breakdown
    assert detail["status"] == "completed" and detail["progress"]["failed"] > 0
    assert sum(r["transcripts"] for r in detail["results"]) == detail["transcripts"] > 0
    # The sections key is what the page's sections were drawn from.
    assert sections.headers["X-Sections-Key"] == last["sections"] != first["sections"]
    assert sections.headers["Cache-Control"] == "no-store"
    # The same run's stream without `snapshots`: the same events, and no snapshot.
    assert [m["event"] for m in plain if m["event"] != "message"] == ["status", "end"]
    assert [m["data"] for m in plain if m["event"] == "message"] == [m["data"] for m in events]

    # An ended run: its snapshot, then `end` (the page draws from it and stops listening).
    async with live.client() as client:
        ended = await _messages(client, url + "?snapshots=true", sse_messages)
    assert [m["event"] for m in ended if m["event"] != "message"] == [
        "snapshot",
        "status",
        "snapshot",
        "end",
    ]
    assert all(m["data"] == last for m in ended if m["event"] == "snapshot")
