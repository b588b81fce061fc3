"""Triage of /api/transcripts on SQLite and PostgreSQL: the five orders and their cursors
across pages (ties on time included), the total on every page, the judges' agreement and
disagreement filters against the stored consensus, the answer's opening, and text search that
folds case and Unicode normalisation the same on both databases ("café" finds "CAFÉ" and a
decomposed "café"; "strasse" finds "Straße")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import pytest
from tests.triage_seeding import LONG, SEEDS, seed_triage_run

from valuerank.db import Database

SORTS = ("newest", "oldest", "decision", "model", "scenario")


def expected_order(items: list[dict[str, Any]], sort: str) -> list[str]:
    """The order each sort promises, computed here from the items' own fields."""

    def when(t: dict[str, Any]) -> tuple[datetime, str]:
        return datetime.fromisoformat(t["created_at"]), t["id"]

    ordered = sorted(items, key=when, reverse=sort != "oldest")  # ties: newest first
    lead = {
        "decision": lambda t: 6 if t["decision_code"] is None else t["decision_code"],
        "model": lambda t: t["model"],
        "scenario": lambda t: t["scenario_id"],
    }.get(sort)
    if lead is not None:
        ordered = sorted(ordered, key=lead)  # stable: the ties keep newest first
    return [t["id"] for t in ordered]


async def listing(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/api/transcripts", params=params)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def walk(client: httpx.AsyncClient, limit: int, **params: Any) -> list[str]:
    """Every id of a list, page by page; each page's total is the list's length."""
    seen: list[str] = []
    cursor = None
    while True:
        page = await listing(
            client, limit=limit, **params, **({"cursor": cursor} if cursor else {})
        )
        assert page["count"] == len(page["transcripts"]) <= limit
        seen += [t["id"] for t in page["transcripts"]]
        cursor = page["next_cursor"]
        assert page["total_exact"] is True
        if cursor is None:
            assert page["total"] == len(seen), params
            return seen


async def test_every_sort_pages_with_its_cursor_and_counts_the_total(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    _, ids = await seed_triage_run(db, org_id)
    async with live.client() as client:
        everything = (await listing(client, limit=500))["transcripts"]
        assert {t["id"] for t in everything} == set(ids)
        for sort in SORTS:
            whole = await listing(client, limit=500, sort=sort)
            assert whole["total"] == len(SEEDS) and whole["next_cursor"] is None
            assert [t["id"] for t in whole["transcripts"]] == expected_order(everything, sort)
            for limit in (1, 2, 4):
                assert await walk(client, limit, sort=sort) == expected_order(everything, sort)
        # Ties on time exist, so the orders above needed their id tie-break.
        times = [t["created_at"] for t in everything]
        assert len(set(times)) < len(times)

        model_cursor = (await listing(client, limit=2, sort="model"))["next_cursor"]
        newest_cursor = (await listing(client, limit=2))["next_cursor"]
        for sort, cursor in (("scenario", model_cursor), ("model", newest_cursor)):
            response = await client.get("/api/transcripts", params={"sort": sort, "cursor": cursor})
            assert_error(response, 400, "INVALID_CURSOR")
        for bad in ({"sort": "biggest"}, {"agreement": "LOUD"}, {"disagreement": "maybe"}):
            assert_error(await client.get("/api/transcripts", params=bad), 422, "VALIDATION_ERROR")


def level(t: dict[str, Any]) -> str:
    return "unjudged" if t["consensus"] is None else t["consensus"]["consensus"]["agreement_level"]


async def test_agreement_and_disagreement_filters_read_the_stored_consensus(
    live: Any, db: Database, org_id: str
) -> None:
    run, _ = await seed_triage_run(db, org_id)
    async with live.client() as client:
        everything = (await listing(client, limit=500))["transcripts"]
        levels = {level(t) for t in everything}
        assert levels == {"STRONG", "MODERATE", "WEAK", "no_data", "unjudged"}
        for wanted in sorted(levels):
            expected = [t for t in everything if level(t) == wanted]
            for sort in ("newest", "decision"):
                found = await walk(client, 1, agreement=wanted, sort=sort)
                assert found == expected_order(expected, sort), wanted
        for flag in (True, False):
            expected = [
                t
                for t in everything
                if t["consensus"] is not None
                and t["consensus"]["consensus"]["model_disagreement"] is flag
            ]
            assert expected, flag  # both sides occur
            found = await walk(client, 2, disagreement=str(flag).lower(), sort="model")
            assert found == expected_order(expected, "model")
        # Combined with each other and with the run's own list.
        both = await listing(client, agreement="STRONG", disagreement="false", model=SEEDS[0].model)
        assert both["total"] == 1 and both["transcripts"][0]["decision_code"] == 4
        path = f"/api/runs/{run.id}/transcripts"
        weak = (await client.get(path, params={"agreement": "WEAK"})).json()["data"]
        assert weak["total"] == 1 and weak["transcripts"][0]["consensus"]["split"] is True


@pytest.mark.parametrize(
    ("query", "seeds"),
    [
        ("café", {0, 1, 2}),
        ("CAFÉ", {0, 1, 2}),
        ("cafe\u0301", {0, 1, 2}),  # the query decomposed
        ("Café au LAIT", {1}),
        ("cafe", set()),  # accents count
        ("strasse", {3, 4}),
        ("STRAßE", {3, 4}),
        ("Straße", {3, 4}),
        ("ÉCOLE", {5, 6}),
        ("école", {5, 6}),
        ("<B>BOLD</B> &", {8}),
    ],
)
async def test_search_folds_case_and_unicode_the_same_on_both_databases(
    live: Any, db: Database, org_id: str, query: str, seeds: set[int]
) -> None:
    _, ids = await seed_triage_run(db, org_id)
    async with live.client() as client:
        found = await listing(client, q=query, limit=500)
    assert {t["id"] for t in found["transcripts"]} == {ids[i] for i in seeds}
    assert found["total"] == len(seeds)


async def test_each_item_has_its_answers_opening_on_one_line(
    live: Any, db: Database, org_id: str
) -> None:
    _, ids = await seed_triage_run(db, org_id)
    async with live.client() as client:
        items = {t["id"]: t for t in (await listing(client, limit=500))["transcripts"]}
        one = (await client.get(f"/api/transcripts/{ids[8]}")).json()["data"]
    previews = [items[i]["answer_preview"] for i in ids]
    assert previews[0] == "Café first, then the report. Rating: 4"
    assert previews[8] == "Line one line two <b>bold</b> & more. Rating: 4"  # one line
    long = previews[7]
    assert 100 < len(long) <= 140 and long.endswith("…")
    assert " ".join(LONG.split()).startswith(long[:-1])
    assert one["answer_preview"] == previews[8]  # the same on one transcript's answer
