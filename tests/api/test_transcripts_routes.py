"""/api/transcripts and /api/runs/{id}/transcripts on SQLite and PostgreSQL: filters, text
search with the same results on both databases (letters in any case, LIKE's wildcards
literal), cursor pages, one transcript verbatim with its judgments; another organisation's
transcripts and runs are 404. Sorting, counts and the consensus filters:
test_transcripts_triage.py."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from valuerank.db import Database
from valuerank.db.tables import transcripts
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.orgs import ensure_org
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.service import run_scenario_ids

ANSWERS = {
    "scripted:utilitarian": ["Report it. Été ensoleillé. Rating: 4", "100% sure_thing. Rating: 5"],
    "scripted:deontologist": ["ÉTÉ PLUVIEUX, STAY QUIET. Rating: 2", "I decline to rate."],
}


async def _seed(db: Database, org: str, run: Any) -> dict[str, str]:
    """Four transcripts with known texts; returns {answer: transcript id}."""
    ids: dict[str, str] = {}
    async with db.transaction() as conn:
        scenarios = await run_scenario_ids(conn, run.id)
        for model, answers in ANSWERS.items():
            for i, answer in enumerate(answers):
                code = int(answer[-1]) if answer[-1].isdigit() else None
                record = TranscriptRecord(
                    transcript=Transcript(
                        run_id=run.cli_run_id,
                        scenario_id=scenarios[i],
                        target_model=model,
                        subject="demo",
                        turns=(Turn(1, "scenario", "Decide.", answer),),
                    ),
                    model=model,
                    decision_code=code,
                    decision_reason=None if code else "refusal",
                    synthetic=True,
                    judgments=(
                        JudgmentRecord("scripted:centrist", code, ("Honesty",), ("Loyalty",), 80.0),
                    ),
                )
                found = await insert_transcript(conn, org, run.id, record)
                assert found is not None
                ids[answer] = found
    return ids


async def test_filters_search_pages_and_show(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    run = await make_run(org_id, models=tuple(ANSWERS))
    ids = await _seed(db, org_id, run)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other, decisions={"scripted:utilitarian": [3]})
    async with db.transaction() as conn:
        first_scenario = (await run_scenario_ids(conn, run.id))[0]

    async def find(path: str = "/api/transcripts", **params: Any) -> set[str]:
        response = await client.get(path, params=params)
        assert response.status_code == 200, response.text
        return {t["id"] for t in response.json()["data"]["transcripts"]}

    def of(*answers: str) -> set[str]:
        return {ids[a] for a in answers}

    u1, u2 = ANSWERS["scripted:utilitarian"]
    d1, d2 = ANSWERS["scripted:deontologist"]
    async with live.client_for("default", "viewer") as client:
        assert await find() == of(u1, u2, d1, d2)  # not the other organisation's
        assert await find(model="scripted:deontologist") == of(d1, d2)
        assert await find(run=run.id) == of(u1, u2, d1, d2)
        assert await find(f"/api/runs/{run.id}/transcripts", decision=5) == of(u2)
        assert await find(scenario=first_scenario) == of(u1, d1)
        assert await find(decision=2, model="scripted:deontologist") == of(d1)
        # Text: letters in any case (Unicode folding, tests/api/test_transcripts_triage.py),
        # wildcards literal.
        assert await find(q="rating") == of(u1, u2, d1)
        assert await find(q="STAY quiet") == of(d1)
        assert await find(q="Été") == of(u1, d1)
        assert await find(q="été") == of(u1, d1)  # É folds to é (on both databases)
        assert await find(q="Té ENSOLEILLé") == of(u1)
        assert await find(q="ÉTÉ pluvieux") == of(d1)
        assert await find(q="ete") == set()  # accents count
        assert await find(q="100%") == of(u2)
        assert await find(q="0%") == of(u2)
        assert await find(q="stay_quiet") == set()  # "_" is no wildcard
        assert await find(q="100_") == set()
        assert await find(q="sure_thing") == of(u2)
        assert await find(q="no such words") == set()
        assert await find(q="rating", model="scripted:deontologist") == of(d1)

        seen: list[str] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 3}
            if cursor:
                params["cursor"] = cursor
            data = (await client.get("/api/transcripts", params=params)).json()["data"]
            seen += [t["id"] for t in data["transcripts"]]
            assert "content" not in data["transcripts"][0]
            cursor = data["next_cursor"]
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == 4

        shown = (await client.get(f"/api/transcripts/{ids[d1]}")).json()["data"]
        assert shown["model"] == "scripted:deontologist" and shown["decision_code"] == 2
        assert "ÉTÉ PLUVIEUX, STAY QUIET. Rating: 2" in shown["content"]
        assert shown["turns"][0]["target"] == d1
        (judgment,) = shown["judgments"]
        assert judgment["judge_model"] == "scripted:centrist"
        assert judgment["prioritized_values"] == ["Honesty"] and judgment["confidence"] == 80.0

        async with db.transaction() as conn:
            foreign_transcript = (
                await conn.execute(
                    select(transcripts.c.id).where(transcripts.c.run_id == foreign.id)
                )
            ).scalar_one()
        for ref in (foreign_transcript, "no-such-transcript"):
            assert_error(await client.get(f"/api/transcripts/{ref}"), 404, "TRANSCRIPT_NOT_FOUND")
        assert_error(await client.get("/api/transcripts/nul%00"), 422, "VALIDATION_ERROR")
        for ref in (foreign.id, "no-such-run"):
            assert_error(await client.get(f"/api/runs/{ref}/transcripts"), 404, "NOT_FOUND")
            assert_error(
                await client.get("/api/transcripts", params={"run": ref}), 404, "NOT_FOUND"
            )
        get = client.get
        assert_error(await get("/api/transcripts", params={"q": "a\x00"}), 422, "VALIDATION_ERROR")
        assert_error(
            await get("/api/transcripts", params={"q": "x" * 201}), 422, "VALIDATION_ERROR"
        )
        assert_error(await get("/api/transcripts", params={"decision": 6}), 422, "VALIDATION_ERROR")
        assert_error(
            await get("/api/transcripts", params={"cursor": "bad!"}), 400, "INVALID_CURSOR"
        )
