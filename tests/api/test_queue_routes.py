"""/api/queue on SQLite and PostgreSQL: create a run through launch_run (models checked first,
nothing written on refusal), its status and progress, pause/resume/cancel, delete (refused
while under way), the organisation's queue status and pause — proven with a real worker that
runs another organisation's jobs while ours wait. Another organisation's run is 404."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from valuerank.cli.live import in_process_worker
from valuerank.db import Database
from valuerank.db.tables import events, jobs, queue_controls, runs
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.queue import QueueSettings, Worker
from valuerank.runs import service
from valuerank.runs.hooks import RUN_HOOKS
from valuerank.runs.partitions import run_partitions
from valuerank.runs.progress import read_report

from .conftest import import_demo

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
MODEL = "scripted:utilitarian"


def worker(db: Database) -> Any:
    return in_process_worker(db, settings=FAST, providers=ProviderPool(environ={}))


async def count(db: Database, table: Any) -> int:
    async with db.transaction() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


def body(definition_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "definition_id": definition_id,
        "models": [MODEL],
        "sample_percentage": 10,
        "sample_seed": 0,
        **extra,
    }


async def test_create_watch_steer_and_delete_a_run(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    definition = await import_demo(db, org_id)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other)
    async with live.client_for("default", "member") as member:
        made = await member.post("/api/queue/runs", json=body(definition, priority="high"))
        assert made.status_code == 201, made.text
        run = made.json()["data"]
        assert run["status"] == "running" and run["models"] == [MODEL]
        assert run["jobs"] == run["enqueued"] == run["scenarios"] > 0
        assert run["sample_seed"] == 0 and run["sample_percentage"] == 10
        assert "cost_usd" in run["estimate"]
        url = f"/api/queue/runs/{run['id']}"

        status = (await member.get(url)).json()["data"]
        assert status["status"] == "running"
        assert status["progress"]["total"] == status["progress"]["queued"] == run["jobs"]
        async with db.transaction() as conn:
            assert (await service.get_run(conn, org_id, run["id"])).priority == 10

        assert (await member.post(f"{url}/pause")).json()["data"]["status"] == "paused"
        assert (await member.post(f"{url}/pause")).json()["data"]["status"] == "paused"
        assert (await member.post(f"{url}/resume")).json()["data"]["status"] == "running"
        # Under way: deleting is refused until the run is cancelled.
        assert_error(await member.delete(url), 409, "RUN_ACTIVE")
        assert (await member.post(f"{url}/cancel")).json()["data"]["status"] == "cancelled"
        cancelled = (await member.get(url)).json()["data"]["progress"]
        assert cancelled["cancelled"] == run["jobs"] and cancelled["queued"] == 0
        assert_error(await member.post(f"{url}/resume"), 409, "CONFLICT")
        assert_error(await member.post(f"{url}/pause"), 409, "CONFLICT")
        deleted = await member.delete(url)
        assert deleted.json()["data"] == {"id": run["id"], "deleted": True}
        assert_error(await member.get(url), 404, "NOT_FOUND")
        assert await count(db, jobs) == 0  # the foreign run was never started

        for ref in (foreign.id, "no-such-run"):
            foreign_url = f"/api/queue/runs/{ref}"
            assert_error(await member.get(foreign_url), 404, "NOT_FOUND")
            for action in ("pause", "resume", "cancel"):
                assert_error(await member.post(f"{foreign_url}/{action}"), 404, "NOT_FOUND")
            assert_error(await member.delete(foreign_url), 404, "NOT_FOUND")
        async with db.transaction() as conn:
            assert (await service.get_run(conn, other, foreign.id)).status.value == "pending"

    async with live.client_for("default", "viewer") as viewer:
        pending = await make_run(org_id)
        assert (await viewer.get(f"/api/queue/runs/{pending.id}")).status_code == 200
        for response in (
            await viewer.post("/api/queue/runs", json=body(definition)),
            await viewer.post(f"/api/queue/runs/{pending.id}/cancel"),
            await viewer.delete(f"/api/queue/runs/{pending.id}"),
        ):
            assert_error(response, 403, "FORBIDDEN")
    async with live.client() as admin:  # a pending run is not under way: it may be deleted
        assert (await admin.delete(f"/api/queue/runs/{pending.id}")).status_code == 200


async def _queue_rows(db: Database, run_id: str) -> dict[str, int]:
    """Rows of the queue's tables in the run's partitions (its own and its analyses')."""
    names = list(run_partitions(run_id))
    async with db.transaction() as conn:
        return {
            "jobs": int(await conn.scalar(select(func.count()).where(jobs.c.partition.in_(names)))),
            "events": int(
                await conn.scalar(select(func.count()).where(events.c.partition.in_(names)))
            ),
            "queue_controls": int(
                await conn.scalar(select(func.count()).where(queue_controls.c.key.in_(names)))
            ),
        }


async def test_deleting_a_finished_run_leaves_nothing_of_it_in_the_queue(
    live: Any, db: Database, org_id: str
) -> None:
    definition = await import_demo(db, org_id)
    async with live.client_for("default", "member") as member:
        made = await member.post("/api/queue/runs", json=body(definition))
        assert made.status_code == 201, made.text
        run_id = made.json()["data"]["id"]
        burst = Worker(db, settings=FAST, concurrency=2, hooks=RUN_HOOKS)
        ctx = PipelineContext(db, providers=ProviderPool(environ={}))
        register_pipeline_handlers(burst, ctx)
        try:
            await burst.run_until_idle()  # the run, then its analysis
        finally:
            await ctx.aclose()
        url = f"/api/queue/runs/{run_id}"
        assert (await member.get(url)).json()["data"]["status"] == "completed"
        before = await _queue_rows(db, run_id)
        assert before["jobs"] > 0 and before["events"] > 0 and before["queue_controls"] == 2
        deleted = await member.delete(url)
        assert deleted.json()["data"] == {"id": run_id, "deleted": True}
    assert await _queue_rows(db, run_id) == {"jobs": 0, "events": 0, "queue_controls": 0}


async def test_refused_bodies_and_models_write_nothing(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    definition = await import_demo(db, org_id)
    unregistered = "ollama:qwen3:0.6b"
    async with live.client() as client:
        post = client.post
        refused = await post("/api/queue/runs", json=body(definition, models=[unregistered]))
        error = assert_error(refused, 422, "UNKNOWN_MODEL")
        assert unregistered in error["error"]
        judge = await post("/api/queue/runs", json=body(definition, judges=["scripted:nobody"]))
        assert "scripted:nobody" in assert_error(judge, 422, "UNKNOWN_MODEL")["error"]
        for bad, code in (
            (body(definition, extra=1), "VALIDATION_ERROR"),
            (body(definition, models=[]), "VALIDATION_ERROR"),
            (body(definition, models="scripted:utilitarian"), "VALIDATION_ERROR"),
            (body(definition, name="nul\x00"), "VALIDATION_ERROR"),
            (body(definition, sample_seed="1"), "VALIDATION_ERROR"),
            (body(definition, priority=True), "VALIDATION_ERROR"),
            (body(definition, sample_percentage=0), "INVALID_INPUT"),
            (body(definition, samples_per_scenario=0), "INVALID_INPUT"),
            (body(definition, models=["no-provider"]), "VALIDATION_ERROR"),  # the id pattern
            (body(definition, priority="urgent"), "INVALID_INPUT"),
            ({"models": [MODEL]}, "VALIDATION_ERROR"),
        ):
            assert_error(await post("/api/queue/runs", json=bad), 422, code)
        assert_error(await post("/api/queue/runs", content=b"{not json"), 422, "VALIDATION_ERROR")
        missing = await post("/api/queue/runs", json=body("no-such-definition"))
        assert_error(missing, 404, "DEFINITION_NOT_FOUND")
        assert await count(db, runs) == 0 and await count(db, jobs) == 0

        allowed = await post(
            "/api/queue/runs",
            json=body(definition, models=[unregistered], allow_unknown_models=True, start=False),
        )
        assert allowed.status_code == 201, allowed.text
        data = allowed.json()["data"]
        assert data["status"] == "pending" and data["enqueued"] == 0
        assert data["models"] == [unregistered]
        assert await count(db, runs) == 1 and await count(db, jobs) == 0


async def test_status_and_pause_are_the_organisations(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    ours, theirs = await make_run(org_id), await make_run(other)
    async with db.transaction() as conn:
        mine = (await service.start_run(conn, org_id, ours.id)).enqueued
        await service.start_run(conn, other, theirs.id)

    async with live.client() as admin, live.client_for("default", "member") as member:
        status = (await member.get("/api/queue/status")).json()["data"]
        assert status["counts"]["queued"] == mine
        assert list(status["partitions"]) == [ours.id]  # the other organisation's is not shown
        assert status["paused"] is False and status["org_paused"] is False

        assert_error(await member.post("/api/queue/pause"), 403, "FORBIDDEN")
        assert_error(await member.post("/api/queue/resume"), 403, "FORBIDDEN")
        assert (await admin.post("/api/queue/pause")).json()["data"] == {
            "paused": True,
            "changed": True,
        }
        assert (await admin.post("/api/queue/pause")).json()["data"]["changed"] is False
        status = (await member.get("/api/queue/status")).json()["data"]
        assert status["org_paused"] is True and status["paused"] is False

        # A real worker runs the other organisation's run to the end; ours is not touched.
        async with worker(db):
            done = await live.run_ended(other, theirs.id)
            assert done.run.status.value == "completed"
            report = await read_report(db, org_id, ours.id)
            assert report.progress.queued == mine and report.progress.running == 0
            resumed = (await admin.post("/api/queue/resume")).json()["data"]
            assert resumed == {"paused": False, "changed": True}
            finished = await live.run_ended(org_id, ours.id)
        assert finished.run.status.value == "completed"
        assert finished.progress.completed == mine
        final = (await member.get("/api/queue/status")).json()["data"]
        assert final["org_paused"] is False and final["counts"]["queued"] == 0
