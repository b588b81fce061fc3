"""The run body's `phrasings` and `scale_order` on SQLite and PostgreSQL: stored, echoed and
shown by the run's detail; a bad value and an unreversible scale are 422 with nothing written."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions.service import import_definition

from .conftest import DEMO, import_demo


async def _runs(db: Database) -> int:
    async with db.transaction() as conn:
        return int((await conn.execute(select(func.count()).select_from(runs))).scalar_one())


async def test_the_settings_round_trip_and_bad_ones_are_refused(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    definition = await import_demo(db, org_id)
    scale_lines = [line for line in DEMO.read_text().splitlines() if line[:1] in "12345"]
    flat = "\n".join(line for line in DEMO.read_text().splitlines() if line not in scale_lines)
    async with db.transaction() as conn:
        unreversible, _ = await import_definition(conn, org_id, flat, source_file="flat.md")
    body = {
        "definition_id": definition,
        "models": ["scripted:utilitarian"],
        "sample_seed": 0,
        "phrasings": "all",
        "scale_order": "both",
        "start": False,
    }
    async with live.client_for("default", "member") as member:
        made = await member.post("/api/queue/runs", json=body)
        assert made.status_code == 201, made.text
        run = made.json()["data"]
        assert (run["phrasings"], run["scale_order"]) == ("all", "both")
        assert run["scenarios"] == run["total_scenarios"] == 72 and run["jobs"] == 72
        detail = (await member.get(f"/api/runs/{run['id']}")).json()["data"]
        assert (detail["phrasings"], detail["scale_order"]) == ("all", "both")
        listed = (await member.get("/api/runs")).json()["data"]["runs"]
        assert [(r["phrasings"], r["scale_order"]) for r in listed] == [("all", "both")]

        assert_error(
            await member.post("/api/queue/runs", json={**body, "scale_order": "sideways"}),
            422,
            "VALIDATION_ERROR",
        )
        refused = assert_error(
            await member.post(
                "/api/queue/runs",
                json={**body, "definition_id": unreversible.version.id, "scale_order": "reversed"},
            ),
            422,
            "SCALE_NOT_REVERSIBLE",
        )
        assert "'5 - strongly support" in str(refused)
    assert await _runs(db) == 1
