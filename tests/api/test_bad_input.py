"""Input PostgreSQL cannot take (a NUL character in text, a number past a 32-bit column) is
the client's mistake: 422 naming the field, on both databases, with nothing written; never
503 DATABASE_UNAVAILABLE. Through the real server on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, get_args

import httpx
import pytest
from fastapi.routing import APIRoute
from sqlalchemy import func, select, text

from valuerank.accounts import Role, add_member
from valuerank.api.fields import NO_NUL, Body
from valuerank.db import Database
from valuerank.db.tables import metadata

from .conftest import Live, MakeRun, import_demo

NUL = "a\x00b"
TOO_BIG_SEQ = 13469127927  # past PostgreSQL's `integer`
SIGNER, PASSWORD = "signer@lab.test", "a long enough passphrase"


async def row_counts(db: Database) -> dict[str, int]:
    """Rows per table: equal before and after a refused request means nothing was written."""
    async with db.transaction() as conn:
        return {
            table.name: (await conn.execute(select(func.count()).select_from(table))).scalar_one()
            for table in metadata.sorted_tables
        }


def assert_refused(response: httpx.Response, field: str, code: str = "VALIDATION_ERROR") -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["success"] is False and body["code"] == code, body
    assert field in body["error"], body  # the message names the field


# (method, path, JSON body or None, query parameters or None, the field the message names)
Case = tuple[str, str, dict[str, Any] | None, dict[str, Any] | None, str]


def cases(run_id: str, definition_id: str) -> list[Case]:
    new_run = {"definition_id": definition_id, "models": ["scripted:utilitarian"]}
    events = f"/api/runs/{run_id}/events"
    return [
        ("POST", "/api/orgs", {"name": NUL}, None, "body.name"),
        ("POST", "/api/users", {"email": f"x{NUL}@lab.test", "role": "member"}, None, "email"),
        (
            "POST",
            "/api/users",
            {"email": "nul@lab.test", "role": "member", "name": NUL},
            None,
            "body.name",
        ),
        ("POST", "/api/tokens", {"name": NUL}, None, "body.name"),
        ("POST", "/api/experiments", {"name": NUL, "baseline_run_id": run_id}, None, "name"),
        (
            "POST",
            "/api/auth/login",
            {"email": SIGNER, "password": PASSWORD, "org": NUL},
            None,
            "body.org",
        ),
        ("POST", "/api/queue/runs", {**new_run, "priority": 1e30}, None, "body.priority"),
        ("POST", "/api/queue/runs", {**new_run, "priority": 2**31}, None, "body.priority"),
        ("POST", "/api/queue/runs", {**new_run, "priority": 10**30}, None, "body.priority"),
        ("POST", "/api/queue/runs", {**new_run, "models": [NUL]}, None, "body.models"),
        ("GET", "/api/tokens", None, {"user_id": NUL}, "query.user_id"),
        ("GET", "/api/system/notifications/outbox", None, {"event_type": NUL}, "event_type"),
        ("GET", "/api/system/notifications/outbox", None, {"webhook_id": NUL}, "webhook_id"),
        ("GET", "/api/system/queue/maintenance/runs", None, {"kind": NUL}, "query.kind"),
        ("GET", "/api/transcripts", None, {"model": NUL}, "query.model"),
        ("GET", events, None, {"after": TOO_BIG_SEQ}, "query.after"),
        ("GET", f"/api/eval/runs/{run_id}/events", None, {"after": TOO_BIG_SEQ}, "query.after"),
        ("GET", f"{events}/stream", None, {"after": TOO_BIG_SEQ}, "query.after"),
        ("GET", "/api/users/%00", None, None, "path.user_id"),
        ("DELETE", "/api/credentials/%00", None, None, "path.provider"),
        ("GET", "/api/comparisons/%00", None, None, "path.comparison_id"),
        ("POST", "/api/queue/jobs/%00/retry", None, None, "path.job_id"),
        ("GET", "/api/system/queue/maintenance/runs/%00", None, None, "path.run_id"),
    ]


async def test_bad_values_are_422_naming_the_field_and_write_nothing(
    live: Live, make_run: MakeRun
) -> None:
    run = await make_run(live.org_id, decisions={"scripted:utilitarian": [1, 2]})
    definition_id = await import_demo(live.db, live.org_id)
    async with live.db.transaction() as conn:  # signs in with a password (the org is bad)
        await add_member(conn, live.org_id, SIGNER, Role.MEMBER, password=PASSWORD)
    before = await row_counts(live.db)
    async with live.client() as client:
        for method, path, body, params, field in cases(run.id, definition_id):
            response = await client.request(method, path, json=body, params=params)
            assert_refused(response, field)
    assert await row_counts(live.db) == before


async def test_a_nul_anywhere_in_a_body_is_refused(live: Live, make_run: MakeRun) -> None:
    """Nested values too: a dict's keys and values (a variant's changes), a list's items."""
    run = await make_run(live.org_id)
    async with live.client() as client:
        made = await client.post(
            "/api/experiments", json={"name": "nul check", "baseline_run_id": run.id}
        )
        assert made.status_code == 201, made.text
        before = await row_counts(live.db)
        variants = f"/api/experiments/{made.json()['data']['id']}/runs"
        for changes in ({"system_prompt": NUL}, {NUL: 1}, {"models": ["scripted:x", NUL]}):
            response = await client.post(variants, json={"changes": changes})
            assert_refused(response, "body.changes")
    assert await row_counts(live.db) == before


def refuses_nul(schema: dict[str, Any]) -> bool:
    """The string schema (or one of its `anyOf`) has a pattern no text with a NUL matches."""
    parts = schema.get("anyOf", [schema])
    patterns = [p["pattern"] for p in parts if p.get("type") == "string" and "pattern" in p]
    return bool(patterns) and all(re.search(p, "a\x00b") is None for p in patterns)


async def test_the_schema_documents_the_refusals(live: Live) -> None:
    """Bodies' and parameters' strings carry a pattern refusing NUL (so a client, or the
    fuzzer, knows a NUL is refused) and the events' `after` its column's bound."""
    async with live.client() as client:
        spec = (await client.get("/openapi.json")).json()
    components = spec["components"]["schemas"]
    assert refuses_nul(components["NewOrgBody"]["properties"]["name"])
    assert components["NewTokenBody"]["properties"]["name"]["pattern"] == NO_NUL
    priority = components["NewRunBody"]["properties"]["priority"]["anyOf"]
    assert any(p.get("minimum") == -(2**31) and p.get("maximum") == 2**31 - 1 for p in priority), (
        priority
    )
    tokens = spec["paths"]["/api/tokens"]["get"]["parameters"]
    assert refuses_nul(next(p for p in tokens if p["name"] == "user_id")["schema"])
    events = spec["paths"]["/api/runs/{run_id}/events"]["get"]["parameters"]
    assert next(p for p in events if p["name"] == "after")["schema"]["maximum"] == 2**31 - 1
    assert refuses_nul(spec["paths"]["/api/users/{user_id}"]["get"]["parameters"][0]["schema"])


def _api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if hasattr(route, "original_router"):  # an included router's routes
            yield from _api_routes(route.original_router.routes)
        elif isinstance(route, APIRoute):
            yield route


def test_every_json_body_is_checked(live: Live) -> None:
    """Every route's JSON body is a `Body` (the NUL check and its schema): a new route's
    model cannot forget it."""
    bodies = [
        (route.path, kind)
        for route in _api_routes(live.app.routes)
        for param in route.dependant.body_params
        for kind in get_args(param.field_info.annotation) or [param.field_info.annotation]
        if kind is not type(None)
    ]
    assert len(bodies) >= 30, bodies  # the API's routes were found
    plain = [
        (path, kind)
        for path, kind in bodies
        if not (isinstance(kind, type) and issubclass(kind, Body))
    ]
    assert plain == [], f"bodies that are not api.fields.Body: {plain}"


# SQLite stores NUL characters and 64-bit integers: there is no DataError to map there.
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_value_the_database_refuses_is_a_client_error(
    live: Live, database_url: Any, assert_error: Callable[..., Any]
) -> None:
    """What the checks miss and the driver refuses (psycopg's DataError) is 422, not an
    outage: a route of this test's own that hands PostgreSQL a NUL and an out-of-range int."""

    async def refused(kind: str) -> None:
        value: Any = NUL if kind == "nul" else TOO_BIG_SEQ
        cast = "text" if kind == "nul" else "integer"
        async with live.db.transaction() as conn:
            await conn.execute(text(f"SELECT CAST(:v AS {cast})"), {"v": value})

    live.app.add_api_route("/api/test-refused/{kind}", refused)
    before = await row_counts(live.db)
    async with live.client() as client:
        for kind, words in (("nul", "NUL character"), ("int", "out of range")):
            body = assert_error(await client.get(f"/api/test-refused/{kind}"), 422, "INVALID_INPUT")
            assert words in body["error"] and "\x00" not in body["error"], body
    assert await row_counts(live.db) == before
