"""Organisations are isolated on every operation of /openapi.json and on both WebSockets.

Organisation B holds something of every kind (seeding.py), and so does A, the install's
default organisation, whose admin sends the requests. Every operation is a case (cases are
made from the schema, so a new route is one too, and one whose ids this test cannot place
fails `test_every_operation_is_covered` until it is classified here):

- A's own requests (A's ids, lists, exports) never show a trace of B: none of B's ids, its
  organisation's id, its member's email or the marker its names carry — in JSON, text, or
  any file of a ZIP — reads succeed, and the queue's counts are A's jobs only;
- B's ids answer 404 (…NOT_FOUND, as an unknown id) wherever A names them: in the path, in
  the body, in the query (`?run=`, `?definition=`, `?user_id=`, `?webhook_id=`); B's admin
  gets past the same lookups with the same requests, so the 404s come from isolation;
- install-wide operations (the queue's maintenance and the providers' limits and pauses:
  data every organisation shares) refuse B's admin with 403, whatever the id: their
  maintenance runs are not per organisation, so there is no "B's pass" to hide from A;
- the progress WebSocket refuses B's run and /ws/updates B's task (closed with 4404 before
  anything is sent), and /ws/updates sends A nothing of B's.

One server and database per backend for the whole module (seeding every kind twice is slow).
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import zipfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import func, select
from tests.conftest import fresh_database
from tests.servers import running
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from valuerank.accounts import Role, add_member
from valuerank.api import create_app
from valuerank.api.reference import route_docs
from valuerank.config import get_settings
from valuerank.crypto import generate_key
from valuerank.db import create_database
from valuerank.db.migrate import upgrade
from valuerank.db.tables import jobs
from valuerank.orgs import ensure_org

from .conftest import TOKEN, Live, api_settings, provision_admin
from .operations import (
    APP,
    BODY_NOT_REFS,
    BODY_REFS,
    PARAMS,
    QUERIES,
    QUERY_NOT_REFS,
    QUERY_REFS,
    SHARED_PARAMS,
    UPLOADS,
    Ids,
    Operation,
    body,
    body_fields,
    json_body_schema,
    operations,
    ordered,
    params,
    path_ids,
    websocket_paths,
)
from .seeding import Seeded, seed_organisation, shared_ids

# The module's async tests share the `world` fixture's event loop.
in_world = pytest.mark.asyncio(loop_scope="module")

THEIRS = "zq-theirs-marker"  # in every name organisation B gives
PASSWORD = "correct horse battery staple"
SIGN_IN = "signin@default.test"  # a member of A with a password
INSTALL_WIDE = "admin (default org)"  # the role label of install-wide operations
STREAMS = ("/events/stream",)  # a stream stays open: only its foreign-id case is sent
NOT_FOUND_CLOSE = 4404


# --- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    label: str  # "METHOD /path", plus "?param" or " <what>" for a case of one reference
    path: str
    operation: Operation
    query_ref: str | None = None  # the query parameter naming B's resource
    extra: str | None = None  # a case named in EXTRA

    @property
    def method(self) -> str:
        return self.label.split(" ", 1)[0]


# References the schema cannot show (a field of a free-form object).
EXTRA = {
    "POST /api/experiments/{experiment_id}/runs changes.definition_id": (
        "POST /api/experiments/{experiment_id}/runs",
        lambda ids, theirs: {"changes": {"definition_id": theirs["definition"]}},
    ),
}
# The weakest role of each operation (paths as the schema writes them: `{id}`, not `{id:path}`).
CONVERTER = re.compile(r":\w+}")
ROLES = {f"{d.method} {CONVERTER.sub('}', d.path)}": d.role for d in route_docs(APP)}


def _unplaced(label: str, operation: Operation) -> list[str]:
    """The ids of an operation this test does not know the kind of."""
    unknown = [f"path {p}" for p in params(operation, "path") if p not in PARAMS]
    unknown += [
        f"query {q}"
        for q in params(operation, "query")
        if q not in QUERY_REFS and q not in QUERY_NOT_REFS
    ]
    unknown += [
        f"body {f}"
        for f in body_fields(json_body_schema(operation))
        if (f.endswith("_id") or f in ("id", "org")) and f not in BODY_REFS | BODY_NOT_REFS
    ]
    return [f"{label}: {u}" for u in unknown]


def _org_refs(operation: Operation) -> bool:
    """It names an organisation's resource in its path or its body."""
    in_path = [p for p in params(operation, "path") if p not in SHARED_PARAMS]
    return bool(in_path or body_fields(json_body_schema(operation)) & set(BODY_REFS))


OWN: list[Case] = []  # A's requests with A's ids
FOREIGN: list[Case] = []  # A's requests naming B's resources
INSTALL: list[Case] = []  # install-wide: B's admin is refused
UNPLACED: list[str] = []
for _label, _path, _operation in operations():
    UNPLACED += _unplaced(_label, _operation)
    if ROLES[_label] == INSTALL_WIDE:
        INSTALL.append(Case(_label, _path, _operation))
        continue
    if not _path.endswith(STREAMS):
        OWN.append(Case(_label, _path, _operation))
    if _org_refs(_operation):
        FOREIGN.append(Case(_label, _path, _operation))
    for _param in params(_operation, "query"):
        if _param in QUERY_REFS:
            FOREIGN.append(Case(f"{_label}?{_param}", _path, _operation, query_ref=_param))
for _name, (_label, _) in EXTRA.items():
    _path = _label.split(" ", 1)[1]
    FOREIGN.append(Case(_name, _path, APP.openapi()["paths"][_path]["post"], extra=_name))
_RANK = {label: i for i, label in enumerate(ordered([c.label for c in OWN]))}
OWN.sort(key=lambda case: _RANK[case.label])


# --- the world: one server, two organisations ------------------------------------------------


@dataclass
class World:
    live: Live
    mine: Seeded  # organisation A, the install's default one (TOKEN administers it)
    theirs: Seeded  # organisation B
    shared: Ids  # what every organisation shares (a model, a provider, a maintenance pass)

    def ids(self, seeded: Seeded) -> Ids:
        return {**seeded.ids, **self.shared}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["sqlite", "postgresql"])
async def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    directory: Path = tmp_path_factory.mktemp(request.param)
    with pytest.MonkeyPatch.context() as env, fresh_database(request.param, directory) as database:
        env.setenv("VALUERANK_SECRET_KEY", generate_key())  # provider keys can be stored
        get_settings.cache_clear()
        db = create_database(database.url)
        try:
            await upgrade(db)
            async with db.transaction() as conn:
                org_id = await ensure_org(conn, "default")
            await provision_admin(db, org_id)
            async with db.transaction() as conn:
                await add_member(conn, org_id, SIGN_IN, Role.MEMBER, password=PASSWORD)
            app = create_app(db, org_id=org_id, settings=api_settings())
            async with running(app) as url:
                live = Live(url, app)
                mine = await seed_organisation(live, await live.account("default"), "mine")
                theirs = await seed_organisation(live, await live.account("other"), THEIRS)
                yield World(live, mine, theirs, await shared_ids(live))
        finally:
            await db.dispose()
            get_settings.cache_clear()


# --- sending ---------------------------------------------------------------------------------


async def _send(
    client: httpx.AsyncClient, case: Case, ids: Ids, query: dict[str, str] | None = None
) -> httpx.Response:
    url = case.path.format(**path_ids(case.path, case.operation, ids))
    query = {**QUERIES.get(case.label, {}), **(query or {})}
    if case.label in UPLOADS:
        data, name = UPLOADS[case.label]
        return await client.request(
            case.method, url, content=data, params={**query, "filename": name}
        )
    return await client.request(
        case.method, url, json=body(case.label, case.operation, ids), params=query
    )


async def _sign_in_case(world: World, label: str, org: str) -> httpx.Response:
    """Signing A's member SIGN_IN in to `org`, or switching their session to it (a browser
    session: no token can switch)."""
    async with world.live.client(token=None) as browser:
        if label == "POST /api/auth/login":
            sign_in = {"email": SIGN_IN, "password": PASSWORD, "org": org}
            return await browser.post("/api/auth/login", json=sign_in)
        login = await browser.post("/api/auth/login", json={"email": SIGN_IN, "password": PASSWORD})
        assert login.status_code == 200, login.text
        csrf = {"X-CSRF-Token": login.json()["data"]["csrf_token"]}
        return await browser.post("/api/auth/switch", json={"org": org}, headers=csrf)


SIGN_IN_CASES = ("POST /api/auth/login", "POST /api/auth/switch")


# Answers counting jobs: how to read the count, and of which provider (None: all).
COUNTED: dict[str, tuple[Callable[[Any], int], str | None]] = {
    "GET /api/queue/status": (lambda data: data["counts"]["queued"], None),
    "GET /api/providers/{provider}": (lambda data: data["queue_length"], "scripted"),
}


async def _queued(world: World, provider: str | None) -> int:
    """A's queued jobs (of `provider`), counted in the database."""
    mine = [jobs.c.org_id == world.mine.account.org_id, jobs.c.status == "queued"]
    if provider is not None:
        mine.append(jobs.c.provider == provider)
    async with world.live.db.transaction() as conn:
        return int(await conn.scalar(select(func.count()).select_from(jobs).where(*mine)) or 0)


def _texts(response: httpx.Response) -> list[str]:
    """The answer as text: a JSON or text body, or every file of a ZIP."""
    if response.headers.get("content-type", "").startswith("application/zip"):
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            return [archive.read(name).decode("utf-8", "replace") for name in archive.namelist()]
    return [response.text]


def _assert_no_trace(label: str, texts: list[str], seeded: Seeded) -> None:
    found = sorted({trace for trace in seeded.traces for text in texts if trace in text})
    assert not found, f"{label} shows organisation B's {found}"


def _assert_not_found(label: str, response: httpx.Response) -> None:
    assert response.status_code == 404, f"{label}: {response.status_code} {response.text}"
    answer = response.json()
    assert answer["success"] is False and answer["code"].endswith("NOT_FOUND"), (label, answer)


# --- the tests -------------------------------------------------------------------------------


def test_every_operation_is_covered() -> None:
    assert not UNPLACED, f"ids this test cannot place (add them to operations.py): {UNPLACED}"
    labels = {label for label, _, _ in operations()}
    covered = {c.label for c in OWN} | {c.label for c in INSTALL}
    covered |= {c.label for c in FOREIGN if c.path.endswith(STREAMS)}
    assert covered == labels, labels ^ covered
    assert len(FOREIGN) >= 55 and len(INSTALL) >= 12, (len(FOREIGN), len(INSTALL))
    assert set(websocket_paths()) == set(SOCKETS), websocket_paths()


@in_world
async def test_the_served_schema_is_the_one_cased(world: World) -> None:
    async with world.live.client() as client:
        served = (await client.get("/openapi.json")).json()
    assert {f"{m.upper()} {p}" for p, item in served["paths"].items() for m in item} == {
        label for label, _, _ in operations()
    }


@in_world
@pytest.mark.parametrize("case", OWN, ids=lambda c: c.label)
async def test_own_requests_show_nothing_of_another_organisation(world: World, case: Case) -> None:
    mine = world.ids(world.mine)
    if case.label in SIGN_IN_CASES:
        response = await _sign_in_case(world, case.label, world.mine.account.org_id)
    else:
        async with world.live.client() as client:
            response = await _send(client, case, mine)
    assert response.status_code < 500, f"{case.label}: {response.text}"
    if case.method == "GET":
        assert response.status_code == 200, f"{case.label}: {response.text}"
    _assert_no_trace(case.label, _texts(response), world.theirs)
    if case.label in COUNTED:  # numbers are A's own, though B has jobs queued too
        counted, provider = COUNTED[case.label]
        expected = await _queued(world, provider)
        assert expected > 0 and counted(response.json()["data"]) == expected, case.label
    if case.path == "/api/credentials/{provider}":  # A's key changed or went, B's is as it was
        assert response.status_code == 200, response.text
        async with world.live.client(token=world.theirs.account.token) as owner:
            listed = (await owner.get("/api/credentials")).json()["data"]["credentials"]
        stored = [(c["provider"], c["hint"][-4:]) for c in listed if c["source"] == "stored"]
        assert stored == [("openai", THEIRS[-4:])]


@in_world
@pytest.mark.parametrize("case", FOREIGN, ids=lambda c: c.label)
async def test_another_organisations_ids_answer_404(world: World, case: Case) -> None:
    mine, theirs = world.ids(world.mine), world.ids(world.theirs)
    if case.label in SIGN_IN_CASES:
        response = await _sign_in_case(world, case.label, world.theirs.account.org_id)
    elif case.extra is not None:
        url = case.path.format(**path_ids(case.path, case.operation, mine))
        async with world.live.client() as client:
            response = await client.post(url, json=EXTRA[case.extra][1](mine, theirs))
    elif case.query_ref is not None:  # A's request, B's id in the query
        async with world.live.client() as client:
            query = {case.query_ref: theirs[QUERY_REFS[case.query_ref]]}
            response = await _send(client, case, mine, query)
    else:  # every id in the path and the body B's
        async with world.live.client() as client:
            response = await _send(client, case, theirs)
    _assert_not_found(case.label, response)  # (its message may echo the id A sent)


OWNER_CASES = [
    c for c in FOREIGN if c.method != "DELETE" and c.label not in SIGN_IN_CASES
]  # deleting would spoil the next cases; signing in is checked by test_auth


@in_world
@pytest.mark.parametrize("case", OWNER_CASES, ids=lambda c: c.label)
async def test_the_owner_gets_past_the_same_lookups(world: World, case: Case) -> None:
    """The 404s above come from isolation, not from malformed requests."""
    theirs = world.ids(world.theirs)
    async with world.live.client(token=world.theirs.account.token) as owner:
        if case.path.endswith(STREAMS):
            url = case.path.format(**path_ids(case.path, case.operation, theirs))
            async with owner.stream("GET", url) as response:
                assert response.status_code == 200
            return
        if case.extra is not None:
            url = case.path.format(**path_ids(case.path, case.operation, theirs))
            response = await owner.post(url, json=EXTRA[case.extra][1](theirs, theirs))
        elif case.query_ref is not None:
            query = {case.query_ref: theirs[QUERY_REFS[case.query_ref]]}
            response = await _send(owner, case, theirs, query)
        else:
            response = await _send(owner, case, theirs)
    assert response.status_code != 404, f"{case.label}: {response.text}"
    assert response.status_code < 500, f"{case.label}: {response.text}"


@in_world
@pytest.mark.parametrize("case", INSTALL, ids=lambda c: c.label)
async def test_install_wide_operations_refuse_other_organisations(world: World, case: Case) -> None:
    async with world.live.client(token=world.theirs.account.token) as other:
        response = await _send(other, case, world.ids(world.theirs))
    assert response.status_code == 403, f"{case.label}: {response.text}"
    assert response.json()["code"] == "FORBIDDEN"


# --- WebSockets ------------------------------------------------------------------------------


def _socket(world: World, path: str) -> Any:
    url = world.live.url.replace("http://", "ws://") + path
    return connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, open_timeout=10)


async def _refused(world: World, path: str) -> None:
    async with _socket(world, path) as ws:
        with pytest.raises(ConnectionClosed):
            message = await asyncio.wait_for(ws.recv(), 10)
            pytest.fail(f"{path} sent {message!r}")
        assert ws.close_code == NOT_FOUND_CLOSE and ws.close_reason


async def _validate(world: World, seeded: Seeded, notes: str, token: str) -> None:
    url = f"/api/assumptions/tasks/{seeded.ids['task']}/tags/{seeded.ids['tag']}/validations"
    validation = {"validator_id": world.shared["validator"], "outcome": "rejected",
                  "confidence": 40, "notes": notes}  # fmt: skip
    async with world.live.client(token=token) as client:
        assert (await client.post(url, json=validation)).status_code == 201


async def _updates_until(ws: ClientConnection, notes: str) -> list[str]:
    """Every message until the one of A's validation with `notes`."""
    seen: list[str] = []
    while not seen or notes not in seen[-1]:
        seen.append(str(await asyncio.wait_for(ws.recv(), 30)))
    return seen


async def _updates_show_nothing_of_theirs(world: World) -> None:
    async with _socket(world, "/ws/updates?after=0") as ws:
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "subscribed"
        await _validate(world, world.theirs, f"{THEIRS} live", world.theirs.account.token)
        await _validate(world, world.mine, "mine live", TOKEN)
        _assert_no_trace("WS /ws/updates", await _updates_until(ws, "mine live"), world.theirs)


SOCKETS = {
    "/api/runs/{run_id}/progress": ["their run"],
    "/ws/updates": ["their task", "their updates"],
}


@in_world
@pytest.mark.parametrize(
    "socket", [f"{path} {what}" for path, cases in SOCKETS.items() for what in cases]
)
async def test_websockets_refuse_and_hide_another_organisations_data(
    world: World, socket: str
) -> None:
    theirs = world.theirs.ids
    if socket.endswith("their run"):
        await _refused(world, f"/api/runs/{theirs['run']}/progress")
    elif socket.endswith("their task"):
        await _refused(world, f"/ws/updates?task_id={theirs['task']}")
    else:
        await _updates_show_nothing_of_theirs(world)
