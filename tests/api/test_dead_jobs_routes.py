"""Dead jobs over HTTP on SQLite and PostgreSQL — `GET /api/queue/jobs/failed` and
`POST /api/queue/jobs/{id}/retry` — with jobs failed by real workers: a run's probes against a
scripted model that always errs (through the pipeline), and poison jobs of the built-in `fail`
kind in a run's analysis partition and in a partition of no run. Also the whole queue's pause
(`POST /api/system/queue/pause|resume`), for admins of the default organisation only."""

from __future__ import annotations

from typing import Any

from valuerank.accounts import Role
from valuerank.db import Database
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.queue import JobSpec, QueueSettings, Worker, enqueue_many, get_job, queue_status
from valuerank.queue.builtin import FAIL, register_builtin_handlers
from valuerank.runs.config import RunConfig
from valuerank.runs.partitions import analysis_partition
from valuerank.runs.service import get_run

from .conftest import Live, import_demo

FAST = QueueSettings(
    poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0, retry_cap_seconds=0.0
)


async def broken_run(db: Database, org_id: str, name: str) -> str:
    """A run whose probes all died (the scripted model errs on every call), and a poison job
    in its analysis partition and one in a partition of no run, all run by a real worker."""
    definition = await import_demo(db, org_id)
    config = RunConfig(models=("scripted:utilitarian?error_rate=1",), sample_percentage=10)
    async with db.transaction(immediate=True) as conn:
        run_id = (await launch_run(conn, org_id, definition, config, name=name)).created.run.id
        await enqueue_many(
            conn,
            [
                JobSpec(kind=FAIL, org_id=org_id, partition=analysis_partition(run_id),
                        payload={"message": "poison analysis"}, max_attempts=1),
                JobSpec(kind=FAIL, org_id=org_id, partition=f"ops-{name}",
                        payload={"message": "poison chore"}, max_attempts=1),
            ],
        )  # fmt: skip
    worker = register_builtin_handlers(Worker(db, settings=FAST))
    context = PipelineContext(db, providers=ProviderPool(environ={}))
    register_pipeline_handlers(worker, context)
    try:
        await worker.run_until_idle()
    finally:
        await context.aclose()
    return run_id


async def test_list_and_retry_dead_jobs(live: Live, db: Database, assert_error: Any) -> None:
    other = await live.account("other", Role.ADMIN)
    run_id = await broken_run(db, live.org_id, "broken")
    foreign_run = await broken_run(db, other.org_id, "foreign")

    async with live.client_for("default", Role.VIEWER) as viewer:
        listed = await viewer.get("/api/queue/jobs/failed")
        assert listed.status_code == 200, listed.text
        jobs = listed.json()["data"]["jobs"]
        by_part = {job["part"]: job for job in jobs}
        assert set(by_part) == {"run", "analysis", None}
        probes = [job for job in jobs if job["part"] == "run"]
        assert probes and all(
            job["kind"] == "probe" and job["run_name"] == "broken" for job in probes
        )
        probe = probes[0]
        assert probe["run_id"] == run_id and probe["provider"] == "scripted"
        assert probe["attempts"] == probe["max_attempts"] == len(probe["errors"])
        assert [e["attempt"] for e in probe["errors"]] == list(range(1, probe["attempts"] + 1))
        assert all(e["category"] == "transient" for e in probe["errors"])
        assert "synthetic transient error" in probe["last_error"]
        analysis = by_part["analysis"]
        assert analysis["run_id"] == run_id and analysis["partition"] == f"analysis:{run_id}"
        assert analysis["errors"][0]["message"] == "poison analysis"
        chore = by_part[None]
        assert chore["run_id"] is None and chore["partition"] == "ops-broken"
        ids = [job["id"] for job in jobs]
        assert ids == sorted(ids, reverse=True)  # newest first
        assert foreign_run not in listed.text and "poison" in listed.text

        # One run's (its own partition and its analyses'); pages follow the cursor.
        only = (await viewer.get("/api/queue/jobs/failed", params={"run": run_id})).json()
        assert {job["part"] for job in only["data"]["jobs"]} == {"run", "analysis"}
        first = (await viewer.get("/api/queue/jobs/failed", params={"limit": 1})).json()["data"]
        assert first["count"] == 1 and first["next_cursor"]
        second = await viewer.get(
            "/api/queue/jobs/failed", params={"limit": 1, "cursor": first["next_cursor"]}
        )
        assert second.json()["data"]["jobs"][0]["id"] == ids[1]
        assert_error(
            await viewer.get("/api/queue/jobs/failed", params={"run": foreign_run}),
            404,
            "NOT_FOUND",
        )
        # Retrying needs the member role.
        assert_error(await viewer.post(f"/api/queue/jobs/{probe['id']}/retry"), 403, "FORBIDDEN")

    async with db.transaction() as conn:
        assert (await get_run(conn, live.org_id, run_id)).status.value == "failed"
    async with live.client_for("default", Role.MEMBER) as member:
        retried = await member.post(f"/api/queue/jobs/{probe['id']}/retry")
        assert retried.status_code == 200, retried.text
        data = retried.json()["data"]
        assert data["status"] == "queued" and data["run"]["id"] == run_id
        assert data["run"]["status"] == "running"  # the failed run reopened
        again = await member.post(f"/api/queue/jobs/{probe['id']}/retry")
        assert_error(again, 409, "INVALID_TRANSITION")
        alone = (await member.post(f"/api/queue/jobs/{chore['id']}/retry")).json()["data"]
        assert alone["run"] is None  # a job of no run: only requeued
        async with live.client(token=other.token) as foreign_admin:
            foreign = (await foreign_admin.get("/api/queue/jobs/failed")).json()
        foreign_job = foreign["data"]["jobs"][0]["id"]
        for missing in (foreign_job, "no-such-job"):
            assert_error(await member.post(f"/api/queue/jobs/{missing}/retry"), 404, "NOT_FOUND")
    async with db.transaction() as conn:
        assert (await get_job(conn, probe["id"])).status.value == "queued"
        assert (await get_job(conn, chore["id"])).attempts == 0
        assert (await get_job(conn, foreign_job)).status.value == "failed"


async def test_whole_queue_pause_is_for_admins_of_the_default_organisation(
    live: Live, db: Database, assert_error: Any
) -> None:
    async with live.client() as admin:
        paused = await admin.post("/api/system/queue/pause")
        assert paused.json()["data"] == {"paused": True, "changed": True}
        again = await admin.post("/api/system/queue/pause")
        assert again.json()["data"] == {"paused": True, "changed": False}
        async with db.transaction() as conn:
            assert (await queue_status(conn)).paused
        status = (await admin.get("/api/queue/status")).json()["data"]
        assert status["paused"] is True and status["org_paused"] is False
        for org, role in (("default", Role.MEMBER), ("other", Role.ADMIN)):
            async with live.client_for(org, role) as refused:
                assert_error(await refused.post("/api/system/queue/resume"), 403, "FORBIDDEN")
        resumed = await admin.post("/api/system/queue/resume")
        assert resumed.json()["data"] == {"paused": False, "changed": True}
    async with db.transaction() as conn:
        assert not (await queue_status(conn)).paused


async def test_dead_jobs_by_kind_under_our_name_or_the_seeds(live: Live, db: Database) -> None:
    """`kind` filters the dead jobs; the seed's `probe:scenario` is our `probe`."""
    await broken_run(db, live.org_id, "kinds")
    async with live.client_for("default", Role.VIEWER) as viewer:
        everything = (await viewer.get("/api/queue/jobs/failed")).json()["data"]["jobs"]
        probes = sorted(job["id"] for job in everything if job["kind"] == "probe")
        assert probes and len(probes) < len(everything)  # the poison jobs are `fail`
        for name in ("probe", "probe:scenario", " probe:scenario "):
            found = await viewer.get("/api/queue/jobs/failed", params={"kind": name})
            assert found.status_code == 200, found.text
            assert sorted(job["id"] for job in found.json()["data"]["jobs"]) == probes
        seed_summaries = await viewer.get(
            "/api/queue/jobs/failed", params={"kind": "summarize:run"}
        )
        assert seed_summaries.json()["data"]["jobs"] == []  # our `summarize`: none failed
        fails = await viewer.get("/api/queue/jobs/failed", params={"kind": FAIL})
        assert {job["kind"] for job in fails.json()["data"]["jobs"]} == {FAIL}
