"""/api/system (the async-eval-worker seed's operations) and /api/ready on a real server, both
backends: admins only; the outbox is the caller's organisation's (another's id is 404); the
queue's maintenance is install-wide (the default organisation's admins only)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import func, insert, select, text, update

from valuerank.db import Database, create_database
from valuerank.db.tables import jobs, maintenance_runs, outbox, response_cache
from valuerank.orgs import ensure_org
from valuerank.queue import JobSpec, QueueSettings, claim, enqueue_many
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.ids import new_id
from valuerank.queue.outbox import enqueue_notifications, register_webhook

from .conftest import Live, api_settings

SYSTEM_POSTS = [
    "/api/system/queue/jobs/reap-stale",
    "/api/system/queue/jobs/prune",
    "/api/system/queue/maintenance/run",
    "/api/system/queue/maintenance/reap-stale-runs",
    "/api/system/queue/maintenance/schedule-trigger",
    "/api/system/queue/maintenance/schedule-summary/notify",
]
SYSTEM_GETS = [
    "/api/system/queue/maintenance/schedule-summary",
    "/api/system/queue/maintenance/schedule-alert-delivery",
    "/api/system/queue/maintenance/runs",
    "/api/system/queue/maintenance/runs/any-id",
    "/api/system/queue/maintenance/metrics",
]
OUTBOX = "/api/system/notifications/outbox"


def _data(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is True
    return body["data"]


async def _hook(db: Database, org_id: str, url: str, *types: str) -> str:
    async with db.transaction() as conn:
        return (await register_webhook(conn, org_id, url, event_types=list(types))).id


async def _notify(db: Database, org_id: str, topic: str, *, max_attempts: int = 8) -> list[str]:
    async with db.transaction() as conn:
        return await enqueue_notifications(
            conn, org_id, topic, {"t": topic}, max_attempts=max_attempts
        )


async def test_only_admins_and_install_wide_only_for_the_default_org(
    live: Live, assert_error: Any
) -> None:
    async with live.client(token=None) as anonymous:
        assert_error(await anonymous.get(OUTBOX), 401, "UNAUTHORIZED")
    for role in ("viewer", "member"):
        async with live.client_for("default", role) as weak:
            assert_error(await weak.get(OUTBOX), 403, "FORBIDDEN")
            assert_error(await weak.post(SYSTEM_POSTS[0]), 403, "FORBIDDEN")
    async with live.client_for("tenant", "admin") as tenant:
        for path in SYSTEM_POSTS:
            body = assert_error(await tenant.post(path), 403, "FORBIDDEN")
            assert "default organisation" in body["error"]
        for path in SYSTEM_GETS:
            assert_error(await tenant.get(path), 403, "FORBIDDEN")
        # The outbox routes are every organisation's own.
        assert _data(await tenant.get(OUTBOX))["notifications"] == []
    async with live.client() as admin:
        runs = _data(await admin.get("/api/system/queue/maintenance/runs"))
    assert runs["runs"] == [], "a refused call must not have run a pass"


async def test_outbox_list_filters_and_pages_the_callers_notifications(
    live: Live, receiver: Any
) -> None:
    await _hook(live.db, live.org_id, receiver.url)
    firsts = await _notify(live.db, live.org_id, "task_failed")
    seconds = await _notify(live.db, live.org_id, "run_complete")
    thirds = await _notify(live.db, live.org_id, "task_failed")
    async with live.db.transaction() as conn:
        other = await ensure_org(conn, "other")
    await _hook(live.db, other, receiver.url)
    theirs = await _notify(live.db, other, "task_failed")
    async with live.client() as admin:
        everything = _data(await admin.get(OUTBOX))
        assert [n["id"] for n in everything["notifications"]] == thirds + seconds + firsts
        assert theirs[0] not in {n["id"] for n in everything["notifications"]}
        failed = _data(await admin.get(OUTBOX, params={"event_type": "task_failed"}))
        assert [n["id"] for n in failed["notifications"]] == thirds + firsts
        first_page = _data(await admin.get(OUTBOX, params={"limit": 2}))
        assert first_page["count"] == 2 and first_page["next_cursor"]
        rest = _data(
            await admin.get(OUTBOX, params={"limit": 2, "cursor": first_page["next_cursor"]})
        )
        assert [n["id"] for n in rest["notifications"]] == firsts
        assert rest["next_cursor"] is None
        assert _data(await admin.get(OUTBOX, params={"status": "dead"}))["notifications"] == []
        assert (await admin.get(OUTBOX, params={"status": "lost"})).status_code == 422
        assert (await admin.get(OUTBOX, params={"cursor": "not-ours"})).status_code == 400


async def test_dead_letters_retry_and_drain(live: Live, receiver: Any, assert_error: Any) -> None:
    hook = await _hook(live.db, live.org_id, receiver.url)
    [dead_id] = await _notify(live.db, live.org_id, "task_failed", max_attempts=1)
    async with live.db.transaction() as conn:
        other = await ensure_org(conn, "other")
    await _hook(live.db, other, receiver.url)
    [theirs] = await _notify(live.db, other, "task_failed", max_attempts=1)
    receiver.default = 500
    async with live.client() as admin:
        drained = _data(await admin.post(f"{OUTBOX}/drain", json={"limit": 10}))
        assert (drained["claimed"], drained["dead"]) == (1, 1)  # theirs is not ours to send
        summary = _data(await admin.get(f"{OUTBOX}/dead-letter-summary"))
        assert summary["dead"] == 1
        [group] = summary["groups"]
        assert (group["topic"], group["webhook_id"], group["count"]) == ("task_failed", hook, 1)
        assert "HTTP 500" in group["last_error"]
        dead = _data(await admin.get(OUTBOX, params={"status": "dead"}))["notifications"]
        assert [n["id"] for n in dead] == [dead_id]

        for unknown in ("no-such-id", theirs):
            assert_error(
                await admin.post(f"{OUTBOX}/{unknown}/retry"), 404, "NOTIFICATION_NOT_FOUND"
            )
        retried = _data(await admin.post(f"{OUTBOX}/{dead_id}/retry"))
        assert retried["status"] == "pending" and retried["attempts"] == 0
        assert_error(await admin.post(f"{OUTBOX}/{dead_id}/retry"), 422, "INVALID_INPUT")
        receiver.default = 200
        drained = _data(await admin.post(f"{OUTBOX}/drain"))
        assert (drained["claimed"], drained["delivered"]) == (1, 1)
        assert _data(await admin.get(f"{OUTBOX}/dead-letter-summary"))["groups"] == []
        assert (await admin.post(f"{OUTBOX}/drain", json={"limit": 0})).status_code == 422
        assert (await admin.post(f"{OUTBOX}/drain", json={"extra": 1})).status_code == 422
    async with live.db.transaction() as conn:  # the other organisation's was never sent
        status = await conn.scalar(select(outbox.c.status).where(outbox.c.id == theirs))
    assert status == "pending"


async def test_reap_stale_jobs_and_prune(live: Live) -> None:
    specs = [
        JobSpec(kind="echo", org_id=live.org_id, partition="p", item_key=f"i{i}", payload={})
        for i in range(2)
    ]
    async with live.db.transaction(immediate=True) as conn:
        expired_id, old_id = [e.job_id for e in await enqueue_many(conn, specs)]
    await claim(live.db, worker_id="gone", limit=2, settings=QueueSettings())
    async with live.db.transaction(immediate=True) as conn:
        dialect = conn.dialect.name
        await conn.execute(
            update(jobs)
            .where(jobs.c.id == expired_id)
            .values(lease_expires_at=db_now_plus(dialect, -5))
        )
        await conn.execute(  # finished ten days ago
            update(jobs)
            .where(jobs.c.id == old_id)
            .values(
                status="succeeded",
                lease_token=None,
                lease_expires_at=None,
                finished_at=db_now_plus(dialect, -10 * 86400),
            )
        )
    async with live.client() as admin:
        reaped = _data(await admin.post("/api/system/queue/jobs/reap-stale"))
        assert (reaped["kind"], reaped["trigger"], reaped["status"]) == (
            "reap_jobs",
            "api",
            "succeeded",
        )
        assert reaped["actions"]["reaped"]["requeued"] == 1
        kept = _data(await admin.post("/api/system/queue/jobs/prune", json={"retention_days": 30}))
        assert kept["kind"] == "prune_jobs" and kept["actions"]["pruned_jobs"] == 0
        pruned = _data(await admin.post("/api/system/queue/jobs/prune", json={"retention_days": 5}))
        assert pruned["actions"] == {"retention_days": 5, "pruned_jobs": 1, "more": False}
        for bad in ({"retention_days": 0}, {"retention_days": "5"}, {"days": 5}):
            response = await admin.post("/api/system/queue/jobs/prune", json=bad)
            assert response.status_code == 422, bad
    async with live.db.transaction() as conn:
        left = {r.id: r.status for r in await conn.execute(select(jobs.c.id, jobs.c.status))}
    assert left == {expired_id: "queued"}


async def test_maintenance_run_reaps_stale_runs_and_is_in_the_history(
    live: Live, stale_run: Any, assert_error: Any
) -> None:
    completed = await stale_run(live.org_id, write=True)
    async with live.client() as admin:
        full = _data(await admin.post("/api/system/queue/maintenance/run"))
        assert (full["kind"], full["trigger"], full["status"]) == ("full", "api", "succeeded")
        assert full["actions"]["stale_runs"]["completed"] == 1
        run = _data(await admin.get(f"/api/runs/{completed}"))
        assert run["status"] == "completed"
        events = _data(await admin.get(f"/api/runs/{completed}/events", params={"limit": 1000}))
        assert [e["type"] for e in events["events"]].count("run_reaped") == 1

        failed = await stale_run(live.org_id, write=False)
        only = _data(await admin.post("/api/system/queue/maintenance/reap-stale-runs"))
        assert only["kind"] == "reap_stale_runs"
        assert only["actions"]["stale_runs"]["runs"] == [
            {"run_id": failed, "from": "running", "outcome": "failed"}
        ]
        assert _data(await admin.get(f"/api/runs/{failed}"))["status"] == "failed"

        history = _data(await admin.get("/api/system/queue/maintenance/runs"))
        assert [p["id"] for p in history["runs"]] == [only["id"], full["id"]]
        page = _data(await admin.get("/api/system/queue/maintenance/runs", params={"limit": 1}))
        assert [p["id"] for p in page["runs"]] == [only["id"]]
        more = await admin.get(
            "/api/system/queue/maintenance/runs", params={"limit": 1, "cursor": page["next_cursor"]}
        )
        assert [p["id"] for p in _data(more)["runs"]] == [full["id"]]
        fulls = _data(
            await admin.get("/api/system/queue/maintenance/runs", params={"kind": "full"})
        )
        assert [p["id"] for p in fulls["runs"]] == [full["id"]]
        assert _data(await admin.get(f"/api/system/queue/maintenance/runs/{full['id']}")) == full
        assert_error(
            await admin.get("/api/system/queue/maintenance/runs/nope"),
            404,
            "MAINTENANCE_RUN_NOT_FOUND",
        )
        figures = _data(await admin.get("/api/system/queue/maintenance/metrics"))
        assert figures["passes"] == 2 and figures["full_passes"] == 1
        assert figures["totals"]["stale_runs_reaped"] == 2
        assert figures["last_full_pass"]["id"] == full["id"]
        bad = await admin.get("/api/system/queue/maintenance/metrics", params={"window_hours": 0})
        assert bad.status_code == 422


async def test_schedule_trigger_runs_only_when_due_unless_forced(live: Live) -> None:
    live.context.queue_settings = QueueSettings(maintenance_interval_seconds=3600)
    path = "/api/system/queue/maintenance/schedule-trigger"
    async with live.client() as admin:
        first = _data(await admin.post(path))
        assert first["ran"] is True and first["pass"]["trigger"] == "schedule"
        assert first["next_due"] is not None
        again = _data(await admin.post(path))
        assert again["ran"] is False and again["pass"] is None
        assert again["next_due"] == first["next_due"]
        forced = _data(await admin.post(path, json={"force": True}))
        assert forced["ran"] is True and forced["pass"]["id"] != first["pass"]["id"]
        summary = _data(await admin.get("/api/system/queue/maintenance/schedule-summary"))
        assert summary["status"] == "ok" and summary["anomalies"] == []
        assert summary["last_pass"]["id"] == forced["pass"]["id"]
        assert (await admin.post(path, json={"force": "yes"})).status_code == 422


async def _past_pass(db: Database, minutes_ago: float, status: str) -> str:
    pass_id = new_id()
    async with db.transaction() as conn:
        started = db_now_plus(conn.dialect.name, -minutes_ago * 60)
        await conn.execute(
            insert(maintenance_runs).values(
                id=pass_id,
                org_id=None,
                worker_id="w",
                status=status,
                actions={},
                error="RuntimeError: disk full" if status == "failed" else None,
                started_at=started,
                finished_at=started,
                duration_ms=5,
                kind="full",
                trigger="worker",
            )
        )
    return pass_id


async def test_schedule_anomalies_are_announced_once_and_their_delivery_is_shown(
    live: Live, receiver: Any
) -> None:
    live.context.queue_settings = QueueSettings(maintenance_interval_seconds=60)
    failed = await _past_pass(live.db, 12, "failed")
    last = await _past_pass(live.db, 11, "succeeded")
    notify = "/api/system/queue/maintenance/schedule-summary/notify"
    delivery = "/api/system/queue/maintenance/schedule-alert-delivery"
    async with live.client() as admin:
        summary = _data(await admin.get("/api/system/queue/maintenance/schedule-summary"))
        assert summary["status"] == "overdue" and summary["last_pass"]["id"] == last
        keys = [a["key"] for a in summary["anomalies"]]
        assert keys == [f"failed_pass:{failed}", f"missed_schedule:{last}"]
        # Nobody subscribed yet: nothing recorded, so a webhook added later still hears.
        unsent = _data(await admin.post(notify))
        assert unsent["no_subscriber"] == keys and unsent["sent"] == []
        await _hook(live.db, live.org_id, receiver.url, "maintenance.anomaly")
        both = await asyncio.gather(admin.post(notify), admin.post(notify))
        reports = [_data(r) for r in both]
        assert sorted(k for r in reports for k in r["sent"]) == sorted(keys)
        assert sorted(k for r in reports for k in r["already_sent"]) == sorted(keys)
        assert sum(r["notifications"] for r in reports) == 2
        again = _data(await admin.post(notify))
        assert again["sent"] == [] and again["already_sent"] == keys

        alerts = _data(await admin.get(delivery))["alerts"]
        assert sorted(a["anomaly_key"] for a in alerts) == sorted(keys)
        assert {a["delivery"] for a in alerts} == {"pending"}
        _data(await admin.post(f"{OUTBOX}/drain"))
        alerts = _data(await admin.get(delivery, params={"limit": 1}))
        assert alerts["count"] == 1 and alerts["next_cursor"]
        [alert] = alerts["alerts"]
        assert alert["delivery"] == "delivered"
        assert alert["notifications"][0]["status"] == "delivered"
    bodies = [body for _, body in receiver.requests]
    assert len(bodies) == 2 and all(b'"maintenance.anomaly"' in b for b in bodies)


async def test_ready_checks_the_database_and_the_schema(
    live: Live, assert_error: Any, serve_app: Any
) -> None:
    async with live.client(token=None) as anonymous:
        ready = _data(await anonymous.get("/api/ready"))
        assert ready["status"] == "ready" and ready["revision"] == ready["head"]
        async with live.db.transaction() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = '0009_analysis'"))
        try:
            body = assert_error(await anonymous.get("/api/ready"), 503, "SCHEMA_NOT_READY")
            assert "valuerank db upgrade" in body["hint"]
            assert _data(await anonymous.get("/health"))["status"] == "ok"  # still alive
        finally:
            async with live.db.transaction() as conn:
                await conn.execute(
                    text("UPDATE alembic_version SET version_num = :head"),
                    {"head": ready["head"]},
                )
        assert _data(await anonymous.get("/api/ready"))["status"] == "ready"

    from valuerank.api import create_app

    down = create_database("postgresql://nobody@127.0.0.1:1/none")
    app = create_app(down, org_id="org", settings=api_settings())
    try:
        async with serve_app(app) as url, httpx.AsyncClient(base_url=url) as client:
            assert_error(await client.get("/api/ready"), 503, "DATABASE_UNAVAILABLE")
    finally:
        await down.dispose()


async def test_a_pass_started_by_the_api_keeps_what_the_apps_settings_say(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retention comes from the settings the app was made with, not the environment."""
    async with live.db.transaction() as conn:
        for n, age_days in enumerate((200, 1)):
            await conn.execute(
                insert(response_cache).values(
                    org_id=live.org_id,
                    key=f"{n:064d}",
                    model="scripted:utilitarian",
                    completion={"text": "kept?"},
                    created_at=db_now_plus(conn.dialect.name, -age_days * 86400.0),
                )
            )
    monkeypatch.setenv("VALUERANK_RESPONSE_CACHE_DAYS", "30")  # what the app was not given
    settings = live.context.settings
    async with live.client() as admin:
        live.context.settings = settings.model_copy(update={"response_cache_days": 0})
        kept = _data(await admin.post("/api/system/queue/maintenance/run"))
        assert kept["actions"]["response_cache"]["retention_days"] is None
        live.context.settings = settings.model_copy(update={"response_cache_days": 90.0})
        pruned = _data(await admin.post("/api/system/queue/maintenance/run"))
    assert pruned["actions"]["response_cache"] == {
        "pruned": 1,
        "more": False,
        "retention_days": 90.0,
    }
    async with live.db.transaction() as conn:
        assert await conn.scalar(select(func.count()).select_from(response_cache)) == 1
