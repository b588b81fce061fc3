"""What `valuerank import table` and `valuerank export run|table` ask of a server (issue 33
§3): `POST /api/import/table` stores a table of dilemmas as the CLI does (all or nothing,
member role, organisation-scoped), and the run exports say in their headers what the CLI
reports (ids, transcripts, rows) without reading the file back."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from sqlalchemy import func, select

from valuerank.client.exchange import (
    CLI_RUN_ID_HEADER,
    ROWS_HEADER,
    RUN_ID_HEADER,
    TRANSCRIPTS_HEADER,
)
from valuerank.db import Database
from valuerank.db.tables import definitions
from valuerank.formats.run_table import COLUMNS_HEADER
from valuerank.orgs import ensure_org

ROWS = [
    {"id": "trolley", "text": "Pull the lever?", "action_a": "pull", "action_b": "wait"},
    {"id": "gift", "text": "Do I like the gift?", "action_a": "say so", "action_b": "praise it"},
]


def _csv(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


async def _count(db: Database, org_id: str) -> int:
    async with db.transaction() as conn:
        found = await conn.scalar(select(func.count()).where(definitions.c.org_id == org_id))
    return int(found or 0)


async def test_a_table_of_dilemmas_is_imported_once(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    async with live.client() as client:
        path = "/api/import/table"
        first = await client.post(
            path, params={"filename": "dilemmas.csv", "name": "dilemmas"}, content=_csv(ROWS)
        )
        assert first.status_code == 201, first.text
        data = first.json()["data"]
        assert (data["name"], data["created"], data["scenarios"]) == ("dilemmas", True, 2)
        again = await client.post(path, params={"filename": "dilemmas.csv"}, content=_csv(ROWS))
        assert again.status_code == 200 and again.json()["data"]["created"] is False
        assert again.json()["data"]["id"] == data["id"]

        bad = _csv([ROWS[0], {**ROWS[1], "text": ""}])
        refused = await client.post(path, params={"filename": "bad.csv"}, content=bad)
        assert refused.status_code == 422 and refused.json()["code"].startswith("TABLE_")
        odd = await client.post(path, params={"filename": "set.xlsx"}, content=b"x")
        assert_error(odd, 422, "UNKNOWN_TABLE_FORMAT")
        assert_error(await client.post(path, params={"filename": "a.csv"}), 400, "INVALID_UPLOAD")
    assert await _count(db, org_id) == 1
    async with live.client_for("default", "viewer") as viewer:
        denied = await viewer.post(path, params={"filename": "x.csv"}, content=_csv(ROWS))
        assert_error(denied, 403, "FORBIDDEN")
    async with db.transaction() as conn:
        other = await ensure_org(conn, "elsewhere")
    assert await _count(db, other) == 0


async def test_run_exports_say_what_they_hold(
    live: Any, db: Database, org_id: str, make_run: Any
) -> None:
    run = await make_run(org_id, decisions={"scripted:utilitarian": [4, 5, None]})
    async with live.client_for("default", "viewer") as viewer:
        exported = await viewer.post(f"/api/export/run/{run.id}")
        assert exported.status_code == 200, exported.text
        assert exported.headers[RUN_ID_HEADER] == run.id
        assert exported.headers[CLI_RUN_ID_HEADER] == run.cli_run_id
        assert exported.headers[TRANSCRIPTS_HEADER] == "3"
        table = await viewer.post(f"/api/export/table/{run.id}", params={"format": "jsonl"})
        assert table.status_code == 200, table.text
        lines = table.text.splitlines()
        assert table.headers[RUN_ID_HEADER] == run.id
        assert table.headers[ROWS_HEADER] == str(len(lines)) == "3"
        assert json.loads(table.headers[COLUMNS_HEADER]) == list(json.loads(lines[0]))
