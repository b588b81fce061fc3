"""WebSocket /api/runs/{id}/progress and the run's Server-Sent Events, with real clients
(`websockets`, httpx) against the real server, on SQLite and PostgreSQL, for runs driven by a
real in-process worker with scripted models: the seed's message shapes, probe-only progress,
`run_complete` then a normal close, resuming after a disconnect with nothing missed or
repeated, another organisation's run refused like an unknown one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from valuerank.accounts import Role
from valuerank.cli.live import in_process_worker
from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.queue import QueueSettings
from valuerank.runs import service
from valuerank.runs.config import RunConfig
from valuerank.runs.service import Run

from .conftest import TOKEN, import_demo

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
GOOD = "scripted:utilitarian?latency_ms=200"  # 27 of them, two at a time: ≥ 2.7 s of work
BAD = "scripted:contrarian?error_rate=1"  # every call fails: its probes end `task_failed`


def _worker(db: Database) -> Any:
    return in_process_worker(db, settings=FAST, concurrency=2, providers=ProviderPool(environ={}))


async def _full_run(db: Database, org_id: str, models: tuple[str, ...]) -> Run:
    """A pending run of all 27 scenarios of the demo definition."""
    definition_id = await import_demo(db, org_id)
    config = RunConfig(models=models, sample_percentage=100, sample_seed=0)
    async with db.transaction(immediate=True) as conn:
        return (await service.create_run(conn, org_id, definition_id, config)).run


def _ws_url(live: Any, run_id: str, query: str = "") -> str:
    base = live.url.replace("http://", "ws://")
    return f"{base}/api/runs/{run_id}/progress" + (f"?{query}" if query else "")


def _socket(live: Any, run_id: str, query: str = "", token: str | None = TOKEN) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(_ws_url(live, run_id, query), additional_headers=headers, open_timeout=10)


async def _recv(ws: ClientConnection, timeout: float = 60) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return message


async def _rest(ws: ClientConnection, timeout: float = 120) -> list[dict[str, Any]]:
    """Every message until the server closes the socket."""
    out = []
    async with asyncio.timeout(timeout):
        async for raw in ws:
            out.append(json.loads(raw))
    return out


async def _sse(
    client: Any, url: str, sse_messages: Any, headers: dict[str, str] | None = None
) -> AsyncIterator[dict[str, Any]]:
    async with client.stream("GET", url, headers=headers or {}) as response:
        assert response.status_code == 200
        async for message in sse_messages(response):
            yield message


@asynccontextmanager
async def _paused_at_start(db: Database, org_id: str, run_id: str) -> AsyncIterator[None]:
    """Start the run paused (no probe can be claimed yet); the block resumes it when ready."""
    async with db.transaction(immediate=True) as conn:
        await service.start_run(conn, org_id, run_id)
        await service.pause_run(conn, org_id, run_id)
    yield


async def _set_paused(db: Database, org_id: str, run_id: str, paused: bool) -> None:
    async with db.transaction(immediate=True) as conn:
        step = service.pause_run if paused else service.resume_run
        await step(conn, org_id, run_id)


def _check_sequence(messages: list[dict[str, Any]], total: int) -> None:
    """The seed's shapes, increasing seqs, probe-only progress that never goes back."""
    seqs = [m["seq"] for m in messages]
    assert seqs == sorted(set(seqs)), "seq must increase, without repeats"
    done = 0
    for m in messages:
        if m["type"] in ("task_complete", "task_failed"):
            assert m["scenario_id"] and m["model"] in (GOOD, BAD)
            assert m["progress"] == f"{m['done']}/{total}" and m["total"] == total
            assert m["done"] >= done
            done = m["done"]
        if m["type"] == "task_failed":
            assert m["model"] == BAD and m["error"]
    tasks = [m for m in messages if m["type"] in ("task_complete", "task_failed")]
    assert len(tasks) == total  # one per probe; judge/finalize jobs are not tasks
    assert {m["type"] for m in tasks if m["model"] == GOOD} == {"task_complete"}
    assert {m["type"] for m in tasks if m["model"] == BAD} == {"task_failed"}
    end = messages[-1]
    assert end["type"] == "run_complete" and end["status"] == "completed"
    assert end["progress"] == f"{total}/{total}"


async def test_progress_socket_streams_a_run_and_resumes_after_a_disconnect(
    live: Any, db: Database, org_id: str, sse_messages: Any
) -> None:
    run = await _full_run(db, org_id, (GOOD, BAD))
    async with db.transaction() as conn:
        total_probes = len(await service.run_scenario_ids(conn, run.id)) * 2
    first: list[dict[str, Any]] = []
    async with _paused_at_start(db, org_id, run.id), _worker(db):
        async with _socket(live, run.id) as ws:
            assert await _recv(ws) == {"type": "subscribed", "run_id": run.id, "after": 0}
            first.append(await _recv(ws))
            assert first[0]["type"] == "run_paused" and first[0]["seq"] == 1
            await _set_paused(db, org_id, run.id, False)
            while len([m for m in first if m["type"].startswith("task_")]) < 2:
                first.append(await _recv(ws))
            await _set_paused(db, org_id, run.id, True)  # so that the rest comes live later
        # Disconnected mid-run; reconnect after the last seq seen, then let it finish.
        async with _socket(live, run.id, f"after={first[-1]['seq']}") as ws:
            assert await _recv(ws) == {
                "type": "subscribed",
                "run_id": run.id,
                "after": first[-1]["seq"],
            }
            await _set_paused(db, org_id, run.id, False)
            second = await _rest(ws)
            assert ws.close_code == 1000  # run_complete, then a normal close
    union = first + second
    assert [m["type"] for m in union].count("run_complete") == 1
    _check_sequence(union, total_probes)
    assert "run_resumed" in [m["type"] for m in second]  # the second part really was live

    # A fresh replay of the whole run: the very same messages (progress included).
    async with _socket(live, run.id) as ws:
        assert (await _recv(ws))["type"] == "subscribed"
        replay = await _rest(ws)
    assert replay == union
    # The SSE stream carries the same messages (`id:` = seq), then `end`.
    async with live.client() as client:
        async with asyncio.timeout(60):
            sse = [m async for m in _sse(client, f"/api/runs/{run.id}/events/stream", sse_messages)]
    assert [m["data"] for m in sse if m["event"] == "message"] == replay
    assert all(int(m["id"]) == m["data"]["seq"] for m in sse if m["event"] == "message")
    assert sse[-1]["event"] == "end" and sse[-1]["data"]["status"] == "completed"
    # The stored end event is named run_complete (the cursor API shows stored types).
    async with live.client() as client:
        page = (await client.get(f"/api/runs/{run.id}/events", params={"limit": 1000})).json()
    assert page["data"]["events"][-1]["type"] == "run_complete"
    assert page["data"]["events"][-1]["data"]["probes"] == {
        "done": total_probes,
        "total": total_probes,
    }


async def test_sse_resumes_with_last_event_id_after_a_disconnect(
    live: Any, db: Database, org_id: str, sse_messages: Any
) -> None:
    run = await _full_run(db, org_id, (GOOD,))
    url = f"/api/runs/{run.id}/events/stream"
    first: list[dict[str, Any]] = []
    async with _paused_at_start(db, org_id, run.id), _worker(db), live.client() as client:
        async with asyncio.timeout(60):
            async for message in _sse(client, url, sse_messages):
                if message["event"] == "status" and message["data"]["status"] == "paused":
                    await _set_paused(db, org_id, run.id, False)
                if message["event"] == "message":
                    first.append(message)
                if sum(m["data"]["type"] == "task_complete" for m in first) == 2:
                    await _set_paused(db, org_id, run.id, True)
                    break  # the client goes away mid-run
        async with asyncio.timeout(60):
            resumed = []
            headers = {"Last-Event-ID": first[-1]["id"]}
            async for message in _sse(client, url, sse_messages, headers=headers):
                if message["event"] == "status" and message["data"]["status"] == "paused":
                    await _set_paused(db, org_id, run.id, False)
                resumed.append(message)
        async with asyncio.timeout(60):
            whole = [m async for m in _sse(client, url, sse_messages)]
    second = [m for m in resumed if m["event"] == "message"]
    assert resumed[-1]["event"] == "end" and resumed[-1]["data"]["status"] == "completed"
    union = [m["data"] for m in first + second]
    assert union == [m["data"] for m in whole if m["event"] == "message"]
    assert union[-1]["type"] == "run_complete"
    assert [m["id"] for m in first + second] == [str(m["seq"]) for m in union]


async def test_progress_socket_refusals(
    live: Any, db: Database, org_id: str, make_run: Any
) -> None:
    mine = await make_run(org_id)
    async with db.transaction() as conn:
        other_org = await ensure_org(conn, "other")
    foreign = await make_run(other_org)
    for ref in (foreign.id, "no-such-run"):  # another organisation's run is unknown here
        async with _socket(live, ref) as ws:
            with pytest.raises(ConnectionClosed):
                await _recv(ws, 10)
        assert ws.close_code == 4404 and ws.close_reason
    async with _socket(live, mine.id, "after=-1") as ws:
        with pytest.raises(ConnectionClosed):
            await _recv(ws, 10)
    assert ws.close_code == 1008 and "after" in ws.close_reason
    with pytest.raises(InvalidStatus) as refused:
        async with _socket(live, mine.id, token=None):
            pass
    assert refused.value.response.status_code == 403
    viewer = await live.account("default", Role.VIEWER)
    async with db.transaction(immediate=True) as conn:
        await service.cancel_run(conn, org_id, mine.id)  # ended without a probe run
    async with _socket(live, mine.id, token=viewer.token) as ws:
        assert (await _recv(ws))["type"] == "subscribed"
        rest = await _rest(ws, 30)
    assert ws.close_code == 1000
    assert rest[-1]["type"] == "run_complete" and rest[-1]["status"] == "cancelled"
