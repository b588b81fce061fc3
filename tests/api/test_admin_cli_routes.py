"""The routes the CLI's admin commands needed to work against a server (issue 33 §3), on
SQLite and PostgreSQL against the real server: `POST /api/models/seed` (`models seed`),
`GET /api/system/queue/status` (`queue status --all-orgs`) for admins of the default
organisation only, and `POST /api/queue/jobs/retry-failed` (`queue retry-failed
--partition`), which requeues the caller's organisation's jobs only."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.providers.catalog import CATALOG
from valuerank.queue import JobSpec, enqueue_many


async def _failed(db: Database, org_id: str, partition: str, count: int) -> list[str]:
    """`count` jobs of the organisation in `partition`, failed as a worker leaves them."""
    specs = [JobSpec(kind="fail", org_id=org_id, partition=partition) for _ in range(count)]
    async with db.transaction() as conn:
        ids = [r.job_id for r in await enqueue_many(conn, specs)]
        await conn.execute(update(jobs).where(jobs.c.id.in_(ids)).values(status="failed"))
    return ids


async def test_seed_adds_the_catalog_for_an_install_admin_only(
    live: Any, assert_error: Any
) -> None:
    async with live.client() as admin:
        first = await admin.post("/api/models/seed")
        assert first.status_code == 200, first.text
        assert first.json()["data"] == {"inserted": [m.id for m in CATALOG], "existing": 0}
        again = (await admin.post("/api/models/seed")).json()["data"]
        assert again == {"inserted": [], "existing": len(CATALOG)}
        # `seed` is no model id: other methods on it are refused, not a lookup.
        assert (await admin.get("/api/models/seed")).status_code == 405
    async with live.client_for("other", "admin") as elsewhere:
        assert_error(await elsewhere.post("/api/models/seed"), 403, "FORBIDDEN")
    async with live.client_for("default", "member") as member:
        assert_error(await member.post("/api/models/seed"), 403, "FORBIDDEN")


async def test_the_whole_queues_status_is_an_install_admins(
    live: Any, db: Database, assert_error: Any
) -> None:
    other = await live.account("other", "admin")
    await _failed(db, live.org_id, "mine", 1)
    await _failed(db, other.org_id, "theirs", 2)
    async with live.client() as admin:
        whole = (await admin.get("/api/system/queue/status")).json()["data"]
        assert whole["counts"]["failed"] == 3
        own = (await admin.get("/api/queue/status")).json()["data"]
        assert own["counts"]["failed"] == 1
        assert set(whole) == set(own)  # the same shape, as `queue status --json` prints
    async with live.client(token=other.token) as elsewhere:
        assert_error(await elsewhere.get("/api/system/queue/status"), 403, "FORBIDDEN")


async def test_retry_failed_requeues_a_partition_of_the_callers_organisation(
    live: Any, db: Database, assert_error: Any
) -> None:
    other = await live.account("other", "admin")
    mine = await _failed(db, live.org_id, "part", 2)
    theirs = await _failed(db, other.org_id, "their-part", 1)
    async with live.client_for("default", "member") as member:
        done = await member.post("/api/queue/jobs/retry-failed", json={"partition": "part"})
        assert done.status_code == 200, done.text
        data = done.json()["data"]
        assert data["requeued"] == 2 and sorted(data["job_ids"]) == sorted(mine)
        # Another organisation's partition: nothing of the caller's there.
        foreign = await member.post(
            "/api/queue/jobs/retry-failed", json={"partition": "their-part"}
        )
        assert foreign.json()["data"] == {"requeued": 0, "job_ids": []}
        bad = await member.post("/api/queue/jobs/retry-failed", json={"partition": ""})
        assert_error(bad, 422, "VALIDATION_ERROR")
    async with live.client_for("default", "viewer") as viewer:
        refused = await viewer.post("/api/queue/jobs/retry-failed", json={"partition": "part"})
        assert_error(refused, 403, "FORBIDDEN")
    async with db.transaction() as conn:
        rows = (await conn.execute(select(jobs.c.id, jobs.c.status))).all()
    states = {row.id: row.status for row in rows}
    assert {states[i] for i in mine} == {"queued"} and states[theirs[0]] == "failed"
