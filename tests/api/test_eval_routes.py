"""/api/eval/runs on SQLite and PostgreSQL: the eval-run flow of async-eval-worker.md —
create (pending, nothing enqueued), start (`enqueued` true once, false after, also for
concurrent starts), a real worker runs it, events by sequence number, cancel, and the rerun
of a terminal run that reopens it. Another organisation's run is 404."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.orgs import ensure_org

from .conftest import import_demo
from .test_queue_routes import body, worker


async def probe_jobs(db: Database, run_id: str) -> int:
    async with db.transaction() as conn:
        query = select(func.count()).where(jobs.c.partition == run_id, jobs.c.kind == "probe")
        return int((await conn.execute(query)).scalar_one())


async def test_create_start_once_run_events_and_restart(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    definition = await import_demo(db, org_id)
    async with live.client_for("default", "member") as client:
        made = await client.post("/api/eval/runs", json=body(definition))
        assert made.status_code == 201, made.text
        run = made.json()["data"]
        assert run["status"] == "pending" and run["enqueued"] == 0 and run["jobs"] > 0
        assert await probe_jobs(db, run["id"]) == 0
        url = f"/api/eval/runs/{run['id']}"
        assert (await client.get(url)).json()["data"]["progress"]["total"] == 0

        # Concurrent starts: exactly one enqueues, the others find the jobs there.
        answers = await asyncio.gather(*(client.post(f"{url}/start") for _ in range(6)))
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        flags = sorted(a.json()["data"]["enqueued"] for a in answers)
        assert flags == [False] * 5 + [True]
        first = next(a.json()["data"] for a in answers if a.json()["data"]["enqueued"])
        assert first["jobs_enqueued"] == run["jobs"] and first["status"] == "running"
        assert await probe_jobs(db, run["id"]) == run["jobs"]
        again = (await client.post(f"{url}/start")).json()["data"]
        assert again["enqueued"] is False and again["jobs_enqueued"] == 0

        async with worker(db):
            done = await live.run_ended(org_id, run["id"])
        assert done.run.status.value == "completed"
        assert done.progress.completed == run["jobs"]

        page = (await client.get(f"{url}/events")).json()["data"]
        assert page["status"] == "completed" and page["terminal"] is True
        seqs = [e["seq"] for e in page["events"]]
        assert seqs == list(range(1, len(seqs) + 1))
        types = [e["type"] for e in page["events"]]
        assert types.count("task_started") >= run["jobs"]
        assert types.count("task_complete") >= run["jobs"]
        one = (await client.get(f"{url}/events", params={"after": 1, "limit": 2})).json()["data"]
        assert [e["seq"] for e in one["events"]] == [2, 3] and one["has_more"] is True
        assert one["next_after"] == 3
        assert_error(
            await client.get(f"{url}/events", params={"after": -1}), 422, "VALIDATION_ERROR"
        )

        # A completed run with nothing failed: starting it again enqueues nothing.
        rerun = (await client.post(f"{url}/start")).json()["data"]
        assert rerun["enqueued"] is False and rerun["status"] == "completed"
        assert rerun["reopened"] is False
        assert_error(await client.post(f"{url}/cancel"), 409, "CONFLICT")

        # Cancel a pending run; it stays cancelled, and its events say so.
        other = (await client.post("/api/eval/runs", json=body(definition))).json()["data"]
        cancelled = await client.post(f"/api/eval/runs/{other['id']}/cancel")
        assert cancelled.json()["data"]["status"] == "cancelled"
        events = (await client.get(f"/api/eval/runs/{other['id']}/events")).json()["data"]
        assert [e["type"] for e in events["events"]] == ["run_cancelled"]
        restart = (await client.post(f"/api/eval/runs/{other['id']}/start")).json()["data"]
        assert restart["enqueued"] is False and restart["status"] == "cancelled"


async def test_a_failed_run_is_rerun_and_reopened(live: Any, db: Database, org_id: str) -> None:
    definition = await import_demo(db, org_id)
    doomed = body(definition, models=["scripted:neutral?error_rate=1"], followup_turns=0)
    async with live.client() as client:
        run = (await client.post("/api/eval/runs", json=doomed)).json()["data"]
        url = f"/api/eval/runs/{run['id']}"
        assert (await client.post(f"{url}/start")).json()["data"]["enqueued"] is True
        async with worker(db):
            failed = await live.run_ended(org_id, run["id"])
            assert failed.run.status.value == "failed"
            assert failed.progress.failed == run["jobs"]
            rerun = (await client.post(f"{url}/start")).json()["data"]
            assert rerun["enqueued"] is True and rerun["reopened"] is True
            assert rerun["jobs_enqueued"] == run["jobs"]
            assert rerun["status"] == "running"
            again = await live.run_ended(org_id, run["id"])
        assert again.run.status.value == "failed"
        assert again.run.config.generation == 1
        assert await probe_jobs(db, run["id"]) == run["jobs"]  # the same jobs, requeued


async def test_refusals_roles_and_other_organisations(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    definition = await import_demo(db, org_id)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other)
    async with live.client() as client:
        unknown = await client.post("/api/eval/runs", json=body(definition, models=["ollama:x"]))
        assert "ollama:x" in assert_error(unknown, 422, "UNKNOWN_MODEL")["error"]
        extra = await client.post("/api/eval/runs", json=body(definition, start=True))
        assert_error(extra, 422, "VALIDATION_ERROR")  # eval runs are started by /start
        assert await probe_jobs(db, foreign.id) == 0
        for ref in (foreign.id, "no-such-run"):
            url = f"/api/eval/runs/{ref}"
            assert_error(await client.get(url), 404, "NOT_FOUND")
            assert_error(await client.post(f"{url}/start"), 404, "NOT_FOUND")
            assert_error(await client.post(f"{url}/cancel"), 404, "NOT_FOUND")
            assert_error(await client.get(f"{url}/events"), 404, "NOT_FOUND")
        assert await probe_jobs(db, foreign.id) == 0
    mine = await make_run(org_id)
    async with live.client_for("default", "viewer") as viewer:
        assert (await viewer.get(f"/api/eval/runs/{mine.id}/events")).status_code == 200
        assert_error(await viewer.post(f"/api/eval/runs/{mine.id}/start"), 403, "FORBIDDEN")
        assert_error(await viewer.post("/api/eval/runs", json=body(definition)), 403, "FORBIDDEN")
    assert await probe_jobs(db, mine.id) == 0
