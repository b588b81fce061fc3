"""/api/runs on SQLite and PostgreSQL: list, report + results, events (cursor and SSE, live and
resumed), /metrics; another organisation's run is 404 like an unknown one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from tests.waiting import WAIT_SECONDS, wait_until_async

from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.orgs import ensure_org
from valuerank.queue.dialect import to_db
from valuerank.runs import service


async def test_runs_report_results_events_and_metrics(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    done = await make_run(
        org_id,
        models=("scripted:utilitarian", "scripted:deontologist"),
        name="with results",
        decisions={"scripted:utilitarian": [4, 5, 4], "scripted:deontologist": [1, None]},
        summary="Utilitarian favours reporting.",
    )
    pending = await make_run(org_id, name="pending one")
    async with db.transaction() as conn:
        other_org = await ensure_org(conn, "other")
    foreign = await make_run(other_org, name="not yours")
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, pending.id)
        await service.pause_run(conn, org_id, pending.id)
        await service.resume_run(conn, org_id, pending.id)

    async with live.client() as client:
        listed = (await client.get("/api/runs")).json()["data"]
        assert listed["count"] == 2
        assert {r["name"] for r in listed["runs"]} == {"with results", "pending one"}
        item = next(r for r in listed["runs"] if r["id"] == pending.id)
        assert item["status"] == "running" and item["synthetic"] is True
        assert item["progress"]["total"] == item["progress"]["queued"] > 0
        assert item["models"] == ["scripted:utilitarian"]
        for key in ("created_at", "started_at"):  # with their offset on both databases
            assert datetime.fromisoformat(item[key]).utcoffset() == timedelta(0)
        assert (await client.get("/api/runs", params={"limit": 1})).json()["data"]["count"] == 1

        detail = (await client.get(f"/api/runs/{done.id}")).json()["data"]
        assert detail["id"] == done.id and detail["status"] == "pending"
        assert detail["summary"] == "Utilitarian favours reporting."
        assert detail["transcripts"] == 5
        by_model = {r["model"]: r for r in detail["results"]}
        assert by_model["scripted:utilitarian"]["mean_decision"] == 4.333
        assert by_model["scripted:utilitarian"]["decision_counts"] == {"4": 2, "5": 1}
        assert by_model["scripted:deontologist"]["refusals"] == 1
        assert all(r["synthetic"] for r in detail["results"])

        for ref in ("no-such-run", foreign.id):
            assert_error(await client.get(f"/api/runs/{ref}"), 404, "NOT_FOUND")
            assert_error(await client.get(f"/api/runs/{ref}/events"), 404, "NOT_FOUND")
            assert_error(await client.get(f"/api/runs/{ref}/events/stream"), 404, "NOT_FOUND")

        page = (await client.get(f"/api/runs/{pending.id}/events")).json()["data"]
        assert [e["type"] for e in page["events"]] == ["run_paused", "run_resumed"]
        assert [e["seq"] for e in page["events"]] == [1, 2]
        assert page["next_after"] == 2 and page["has_more"] is False
        assert page["status"] == "running" and page["terminal"] is False
        one = (
            await client.get(f"/api/runs/{pending.id}/events", params={"after": 0, "limit": 1})
        ).json()["data"]
        assert [e["seq"] for e in one["events"]] == [1] and one["has_more"] is True
        rest = (
            await client.get(f"/api/runs/{pending.id}/events", params={"after": one["next_after"]})
        ).json()["data"]
        assert [e["seq"] for e in rest["events"]] == [2] and rest["next_after"] == 2

        metrics = await client.get("/metrics")
        assert metrics.status_code == 200
        assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert "# TYPE valuerank_queue_jobs gauge" in metrics.text
        queued = item["progress"]["queued"]
        assert f'valuerank_queue_jobs{{status="queued"}} {float(queued)}' in metrics.text


async def _collect(
    client: Any, url: str, sse_messages: Any, headers: dict[str, str] | None = None
) -> Any:
    """Open the stream; yields its messages as they come."""
    async with client.stream("GET", url, headers=headers or {}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for message in sse_messages(response):
            yield message


async def test_event_stream_live_then_resumed(
    live: Any, db: Database, org_id: str, make_run: Any, sse_messages: Any
) -> None:
    run = await make_run(org_id)
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, run.id)
    url = f"/api/runs/{run.id}/events/stream"

    async def act() -> None:
        """Write events through the services while the stream is open, each once the stream
        has delivered the one before (live, not read back at the end)."""
        for n, step in enumerate((service.pause_run, service.resume_run, service.cancel_run)):

            def delivered(n: int = n) -> bool:
                return bool(sum(m["event"] == "message" for m in seen) >= n)

            await wait_until_async(delivered, what=f"event {n} delivered live")
            async with db.transaction() as conn:
                await step(conn, org_id, run.id)

    async with live.client() as client:
        seen: list[dict[str, Any]] = []
        actor: asyncio.Task[None] | None = None
        async with asyncio.timeout(WAIT_SECONDS):  # a bound for a hang
            async for message in _collect(client, url, sse_messages):
                seen.append(message)
                if actor is None:  # the first message proves the stream is open
                    assert message == {"event": "status", "data": {"status": "running"}}
                    actor = asyncio.create_task(act())
                if message["event"] == "end":
                    break
        assert actor is not None
        await actor
        events = [m for m in seen if m["event"] == "message"]
        types = [m["data"]["type"] for m in events]
        assert types[:3] == ["run_paused", "run_resumed", "run_cancelled"]
        assert [int(m["id"]) for m in events] == [m["data"]["seq"] for m in events]
        assert [m["data"]["seq"] for m in events] == list(range(1, len(events) + 1))
        statuses = [m["data"]["status"] for m in seen if m["event"] == "status"]
        assert statuses[0] == "running" and statuses[-1] == "cancelled"
        end = seen[-1]
        assert end["event"] == "end"
        assert end["data"]["status"] == "cancelled" and end["data"]["last_seq"] == len(events)

        # A reconnecting browser sends Last-Event-ID: the stream resumes after it, then ends.
        async with asyncio.timeout(WAIT_SECONDS):
            resumed = [
                m async for m in _collect(client, url, sse_messages, headers={"Last-Event-ID": "1"})
            ]
        resumed_events = [m for m in resumed if m["event"] == "message"]
        assert [m["data"]["seq"] for m in resumed_events] == list(range(2, len(events) + 1))
        assert resumed[-1]["event"] == "end"
        # `?after=` does the same for a first connection.
        async with asyncio.timeout(WAIT_SECONDS):
            tail = [m async for m in _collect(client, f"{url}?after={len(events)}", sse_messages)]
        assert [m["event"] for m in tail] == ["status", "end"]


async def test_list_filters_and_pages(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    from valuerank.api.pagination import encode_cursor

    made = [
        await make_run(org_id, name="a"),
        await make_run(org_id, name="b", models=("scripted:deontologist",)),
        await make_run(org_id, name="c", models=("scripted:utilitarian", "scripted:centrist")),
    ]
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, made[1].id)
        other = await ensure_org(conn, "other")
        for month, run in enumerate(made, start=1):  # distinct times (SQLite keeps seconds)
            when = datetime(2024, month, 1, tzinfo=UTC)
            await conn.execute(
                update(runs).where(runs.c.id == run.id).values(created_at=to_db(db.dialect, when))
            )
    await make_run(other, name="not yours")

    async with live.client_for("default", "viewer") as client:

        async def names(**params: Any) -> list[str]:
            response = await client.get("/api/runs", params=params)
            assert response.status_code == 200, response.text
            return [r["name"] for r in response.json()["data"]["runs"]]

        assert await names() == ["c", "b", "a"]  # newest first
        assert await names(status="running") == ["b"]
        assert await names(status="pending") == ["c", "a"]
        assert await names(model="scripted:utilitarian") == ["c", "a"]
        assert await names(model="scripted:centrist") == ["c"]
        assert await names(model="scripted:nobody") == []
        assert await names(definition=made[0].definition_id, status="running") == ["b"]
        # A definition the organisation does not have is 404, as in a path (not an empty page).
        unknown = await client.get("/api/runs", params={"definition": "no-such-definition"})
        assert unknown.status_code == 404 and unknown.json()["code"] == "DEFINITION_NOT_FOUND"
        b_time = "2024-02-01T00:00:00Z"
        assert await names(created_since=b_time, created_until=b_time) == ["b"]
        assert await names(created_since="2024-01-15T00:00:00") == ["c", "b"]  # naive: UTC
        assert await names(created_until="2024-02-01T00:59:00+01:00") == ["a"]
        assert await names(created_since="2000-01-01T00:00:00Z") == ["c", "b", "a"]

        seen: list[str] = []
        params: dict[str, Any] = {"limit": 1, "model": "scripted:utilitarian"}
        while True:
            data = (await client.get("/api/runs", params=params)).json()["data"]
            seen += [r["name"] for r in data["runs"]]
            if data["next_cursor"] is None:
                break
            params["cursor"] = data["next_cursor"]
        assert seen == ["c", "a"]

        bad_time = encode_cursor(["not a time", "x"])
        for query, status, code in (
            ({"status": "sleeping"}, 422, "VALIDATION_ERROR"),
            ({"created_since": "yesterday"}, 422, "VALIDATION_ERROR"),
            ({"limit": 0}, 422, "VALIDATION_ERROR"),
            ({"model": "a\x00b"}, 422, "VALIDATION_ERROR"),  # refused before any lookup
            ({"cursor": "garbage!"}, 400, "INVALID_CURSOR"),
            ({"cursor": bad_time}, 400, "INVALID_CURSOR"),
        ):
            assert_error(await client.get("/api/runs", params=query), status, code)


async def test_expand_and_rerun_failed(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    from sqlalchemy import func, select

    from valuerank.db.tables import jobs, run_scenarios

    run = await make_run(org_id)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other)
    async with db.transaction() as conn:
        before = await conn.execute(select(func.count()).where(run_scenarios.c.run_id == run.id))
        scenarios = before.scalar_one()

    async with live.client_for("default", "member") as client:
        url = f"/api/runs/{run.id}"
        expanded = await client.post(f"{url}/expand", json={"sample_percentage": 30})
        assert expanded.status_code == 200, expanded.text
        data = expanded.json()["data"]
        assert data["sample_percentage"] == 30 and data["scenarios_added"] > 0
        assert data["status"] == "pending"  # a pending run just gets the scenarios
        # Not larger than 30: a well-formed request the run's state refuses (issue 21).
        assert_error(
            await client.post(f"{url}/expand", json={"sample_percentage": 20}), 409, "CONFLICT"
        )
        for bad, code in (
            ({"sample_percentage": 101}, "VALIDATION_ERROR"),
            ({"sample_percentage": "50"}, "VALIDATION_ERROR"),
            ({"sample_percentage": 50, "extra": 1}, "VALIDATION_ERROR"),
            ({}, "VALIDATION_ERROR"),
        ):
            assert_error(await client.post(f"{url}/expand", json=bad), 422, code)
        async with db.transaction() as conn:
            after = await conn.execute(select(func.count()).where(run_scenarios.c.run_id == run.id))
            assert after.scalar_one() == scenarios + data["scenarios_added"]

        assert_error(await client.post(f"{url}/rerun-failed"), 409, "CONFLICT")  # never started
        async with db.transaction() as conn:
            started = await service.start_run(conn, org_id, run.id)
            await conn.execute(
                update(jobs).where(jobs.c.partition == run.id).values(status="failed")
            )
        rerun = (await client.post(f"{url}/rerun-failed")).json()["data"]
        assert rerun["requeued"] == started.enqueued and rerun["status"] == "running"
        again = (await client.post(f"{url}/rerun-failed")).json()["data"]
        assert again["requeued"] == 0

        for ref in (foreign.id, "no-such-run"):
            assert_error(
                await client.post(f"/api/runs/{ref}/expand", json={"sample_percentage": 50}),
                404,
                "NOT_FOUND",
            )
            assert_error(await client.post(f"/api/runs/{ref}/rerun-failed"), 404, "NOT_FOUND")
    async with live.client_for("default", "viewer") as viewer:
        assert_error(await viewer.post(f"/api/runs/{run.id}/rerun-failed"), 403, "FORBIDDEN")
