"""`POST /api/runs/{id}/judge` and `GET/PUT /api/orgs/defaults` on SQLite and PostgreSQL:
roles, another organisation's run, bad judges with their codes; judging enqueues judge jobs
for the stored transcripts and no probe; a run created through the API without judges gets
the organisation's defaults and says so."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.orgs import ensure_org
from valuerank.runs import service

from .conftest import import_demo

JUDGES = ["scripted:centrist", "scripted:deontologist"]


async def _jobs(db: Database, run_id: str) -> dict[str, int]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(jobs.c.kind, func.count())
            .where(jobs.c.partition == run_id)
            .group_by(jobs.c.kind)
        )
        return {kind: int(n) for kind, n in rows}


async def test_judge_a_run_again(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    run = await make_run(org_id, decisions={"scripted:utilitarian": [4, 5, 2]})
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other, decisions={"scripted:utilitarian": [3]})
    url = f"/api/runs/{run.id}/judge"
    async with live.client_for("default", "member") as client:
        # Pending: not ended yet, so there is nothing finished to judge.
        assert_error(await client.post(url, json={"judges": JUDGES}), 409, "CONFLICT")
        async with db.transaction() as conn:
            await service.cancel_run(conn, org_id, run.id)
        detail = (await client.get(f"/api/runs/{run.id}")).json()["data"]
        assert "judge" in detail["actions"] and detail["judge_models"] == []
        for bad, status, code in (
            ({"judges": ["openai:no-such-model"]}, 422, "UNKNOWN_MODEL"),
            ({"judges": ["scripted:centrist", "scripted:centrist"]}, 422, "INVALID_INPUT"),
            ({"judges": []}, 422, "VALIDATION_ERROR"),
            ({"judges": ["no colon"]}, 422, "VALIDATION_ERROR"),
            ({"judges": JUDGES, "replace": "yes"}, 422, "VALIDATION_ERROR"),
        ):
            assert_error(await client.post(url, json=bad), status, code)
        judged = await client.post(url, json={"judges": JUDGES})
        assert judged.status_code == 200, judged.text
        data = judged.json()["data"]
        assert data["judge_models"] == JUDGES and data["added"] == JUDGES
        assert data["removed"] == [] and data["judgments_removed"] == 0
        assert data["enqueued"] == 3 * len(JUDGES) and data["status"] == "running"
        for ref in (foreign.id, "no-such-run"):
            assert_error(
                await client.post(f"/api/runs/{ref}/judge", json={"judges": JUDGES}),
                404,
                "NOT_FOUND",
            )
    # Judge jobs for the three stored transcripts, and no probe: no target is asked.
    counted = await _jobs(db, run.id)
    assert counted.get("judge") == 3 * len(JUDGES) and "probe" not in counted
    async with live.client_for("default", "viewer") as viewer:
        assert_error(await viewer.post(url, json={"judges": JUDGES}), 403, "FORBIDDEN")


async def test_organisation_defaults(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    definition = await import_demo(db, org_id)
    chosen = {"judges": JUDGES, "summary_model": "scripted:utilitarian"}
    async with live.client_for("default", "viewer") as viewer:
        shown = (await viewer.get("/api/orgs/defaults")).json()["data"]
        assert shown == {"judges": [], "summary_model": None}
        assert_error(await viewer.put("/api/orgs/defaults", json=chosen), 403, "FORBIDDEN")
    async with live.client_for("default", "member") as member:
        assert_error(await member.put("/api/orgs/defaults", json=chosen), 403, "FORBIDDEN")
    async with live.client_for("default", "admin") as admin:
        for bad, code in (
            ({"judges": ["openai:no-such-model"]}, "UNKNOWN_MODEL"),
            ({"judges": ["scripted:centrist", "scripted:centrist"]}, "INVALID_INPUT"),
            ({"judges": "scripted:centrist"}, "VALIDATION_ERROR"),
            ({"judges": [], "extra": 1}, "VALIDATION_ERROR"),
        ):
            assert_error(await admin.put("/api/orgs/defaults", json=bad), 422, code)
        stored = await admin.put("/api/orgs/defaults", json=chosen)
        assert stored.status_code == 200, stored.text
        assert stored.json()["data"] == chosen
        assert (await admin.get("/api/orgs/defaults")).json()["data"] == chosen
    async with live.client_for("other", "admin") as stranger:  # another organisation's own
        assert (await stranger.get("/api/orgs/defaults")).json()["data"]["judges"] == []
    async with live.client_for("default", "member") as member:
        body = {"definition_id": definition, "models": ["scripted:utilitarian"]}
        made = await member.post("/api/queue/runs", json={**body, "sample_percentage": 10})
        assert made.status_code == 201, made.text
        run = made.json()["data"]
        assert run["judge_models"] == JUDGES and run["summary_model"] == "scripted:utilitarian"
        assert run["defaults_used"] == ["judges", "summary_model"]
        assert run["rubric"] is not None
        detail = (await member.get(f"/api/runs/{run['id']}")).json()["data"]
        assert detail["default_judges"] is True and detail["judge_models"] == JUDGES
        plain = await member.post(
            "/api/queue/runs",
            json={**body, "sample_percentage": 10, "use_default_judges": False},
        )
        assert plain.json()["data"]["judge_models"] == []
        assert plain.json()["data"]["defaults_used"] == []
