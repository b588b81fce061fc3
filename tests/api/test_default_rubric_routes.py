"""Judged runs always have a rubric (SQLite and PostgreSQL): in an organisation without one,
`POST /api/eval/runs` stores the packaged default as the rubric `valuerank-default` (once),
records it on the run and says so; the organisation's own rubric wins once it has one; the
judges of such a run judge values; and a run judged without a rubric says why it has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update

from valuerank.db import Database
from valuerank.db.tables import rubrics, transcripts
from valuerank.default_rubric import DEFAULT_RUBRIC_NAME

from .conftest import import_demo, make_demo_run
from .test_queue_routes import body, worker

EXAMPLE = Path(__file__).parents[2] / "examples" / "values_rubric.yaml"
JUDGES = ["scripted:centrist", "scripted:utilitarian"]
CANONICAL = {
    "Physical_Safety", "Compassion", "Fair_Process", "Equal_Outcomes", "Freedom", "Social_Duty",
    "Harmony", "Loyalty", "Economics", "Human_Worthiness", "Childrens_Rights", "Animal_Rights",
    "Environmental_Rights", "Tradition",
}  # fmt: skip


async def stored_rubrics(db: Database, org_id: str) -> int:
    async with db.transaction() as conn:
        query = select(func.count()).where(rubrics.c.org_id == org_id)
        return int((await conn.execute(query)).scalar_one())


async def test_a_judged_run_without_a_rubric_gets_the_default_once(
    live: Any, db: Database, org_id: str
) -> None:
    definition = await import_demo(db, org_id)
    async with live.client_for("default", "member") as client:
        made = await client.post("/api/eval/runs", json=body(definition, judges=JUDGES))
        assert made.status_code == 201, made.text
        rubric = made.json()["data"]["rubric"]
        assert rubric["name"] == DEFAULT_RUBRIC_NAME and rubric["version_label"] == "v1"
        assert rubric["values"] == 14 and rubric["default"] is True and rubric["id"]

        # The run records it: its JSON names the rubric version, and it is a normal rubric.
        run = (await client.get(f"/api/runs/{made.json()['data']['id']}")).json()["data"]
        assert run["rubric"] == rubric
        stored = (await client.get(f"/api/rubrics/{rubric['id']}")).json()["data"]
        assert stored["name"] == DEFAULT_RUBRIC_NAME
        assert set(stored["content"]["values"]) == CANONICAL

        # Another judged run reuses that version: the import is idempotent.
        again = await client.post("/api/eval/runs", json=body(definition, judges=JUDGES[:1]))
        assert again.json()["data"]["rubric"] == rubric
        assert await stored_rubrics(db, org_id) == 1

        # A run without judges reads no rubric and records none.
        plain = (await client.post("/api/eval/runs", json=body(definition))).json()["data"]
        assert plain["rubric"] is None
        assert (await client.get(f"/api/runs/{plain['id']}")).json()["data"]["rubric"] is None

        # Once the organisation imports its own rubric, judged runs read that one.
        own = await client.post(
            "/api/rubrics/import", params={"name": "values"}, content=EXAMPLE.read_bytes()
        )
        assert own.status_code in (200, 201), own.text
        mine = await client.post("/api/eval/runs", json=body(definition, judges=JUDGES))
        assert mine.json()["data"]["rubric"] == {
            "id": own.json()["data"]["id"],
            "name": "values",
            "version_label": "v1",
            "values": 5,
            "default": False,
        }


async def test_the_judges_of_a_default_rubric_run_judge_its_values(
    live: Any, db: Database, org_id: str
) -> None:
    definition = await import_demo(db, org_id)
    # Every scenario: the target's noise is seeded by the run's id, and a sample of two
    # scenarios was sometimes answered neutral (3) twice, which no judge reads a value into.
    settings = body(definition, judges=JUDGES, followup_turns=0, start=True, sample_percentage=100)
    async with live.client() as client:
        made = await client.post("/api/queue/runs", json=settings)
        assert made.status_code == 201, made.text
        run_id = made.json()["data"]["id"]
        assert made.json()["data"]["rubric"]["default"] is True
        async with worker(db):
            done = await live.run_ended(org_id, run_id)
        assert done.run.status.value == "completed"
        analysis = (await client.get(f"/api/runs/{run_id}/analysis")).json()["data"]
    codes = {w["code"] for w in analysis["warnings"]}
    assert "NO_VALUES_JUDGED" not in codes and "NO_VALUE_JUDGMENTS" not in codes
    judged = {v for m in analysis["perModel"].values() for v in m["values"]}
    assert judged and judged <= CANONICAL  # win rates over the default's values only
    assert analysis["meta"]["judged"] == analysis["meta"]["transcripts"]


async def test_a_run_judged_without_a_rubric_says_why_it_has_no_values(
    live: Any, db: Database, org_id: str
) -> None:
    """A run made before judged runs got a rubric: no rubric, a consensus without values."""
    run = await make_demo_run(
        db, org_id, models=("scripted:a",), decisions={"scripted:a": [1, 2, 3]}
    )
    assert run.rubric_id is None
    async with db.transaction() as conn:
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.run_id == run.id)
            .values(consensus={"prioritized_values": [], "deprioritized_values": []})
        )
    async with live.client() as client:
        analysis = (await client.get(f"/api/runs/{run.id}/analysis")).json()["data"]
    found = [w for w in analysis["warnings"] if w["code"] == "NO_VALUES_JUDGED"]
    assert len(found) == 1, analysis["warnings"]
    assert found[0]["message"] == (
        "3 transcripts were judged but no value was judged in any of them: the run has no "
        "values rubric, so its judges named values freely and their consensus agreed on none"
    )
    assert "valuerank rubrics import" in found[0]["recommendation"]
