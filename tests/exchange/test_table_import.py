"""`valuerank import table`: a table of dilemmas becomes a definition of fixed scenarios a run
can ask, on both backends; a missing column or a bad row writes nothing and names it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection
from tests.conftest import TestDatabase
from tests.sdk.conftest import JUDGE, cli_on

from valuerank import Client
from valuerank.db import Database
from valuerank.db.tables import definitions
from valuerank.definitions.expansion import expand_with_scores
from valuerank.definitions.service import get_definition
from valuerank.exchange.table_import import InvalidTableError, import_table
from valuerank.formats.dilemma_table import FIXED_DIMENSION

ROWS: list[dict[str, Any]] = [
    {
        "id": "trolley",
        "text": "A runaway trolley will hit five people, unless I pull a lever and divert it "
        "onto one person.",
        "action_a": "pull the lever",
        "action_b": "do nothing",
        "dim.Harm": 3,
        "dim.Cost": 1,
    },
    {
        "id": "gift",
        "text": "My friend asks whether I like the gift, which I find ugly.\nWhat do I say?",
        "scale": "5 - tell the whole truth\n4 - hint at it\n3 - say nothing\n"
        "2 - say it is fine\n1 - praise it warmly",
        "dim.Harm": 1,
        "dim.Cost": 2,
    },
]


def _csv(rows: list[dict[str, Any]]) -> bytes:
    import csv
    import io

    out = io.StringIO()
    columns = list(dict.fromkeys(k for r in rows for k in r))
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _parquet(rows: list[dict[str, Any]]) -> bytes:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows]), sink)
    return bytes(sink.getvalue().to_pybytes())


async def _definitions(conn: AsyncConnection) -> int:
    return int(await conn.scalar(select(func.count()).select_from(definitions)) or 0)


@pytest.mark.parametrize(
    ("name", "encode"), [("set.csv", _csv), ("set.jsonl", _jsonl), ("set.parquet", _parquet)]
)
async def test_each_format_gives_the_same_fixed_scenarios(
    db: Database, org_id: str, name: str, encode: Any
) -> None:
    async with db.transaction() as conn:
        imported = await import_table(conn, org_id, encode(ROWS), file_name=name)
        again = await import_table(conn, org_id, encode(ROWS), file_name=name)
        stored = await get_definition(conn, org_id, imported.stored.version.id)
    assert imported.created and not again.created  # the same table is stored once
    assert again.stored.version.id == imported.stored.version.id
    assert imported.scenarios == 2 and imported.dimensions == ["Cost", "Harm"]
    definition = stored.definition
    assert definition.name == "set" and [d.name for d in definition.dimensions] == [FIXED_DIMENSION]
    expansion = expand_with_scores(definition)
    bodies = [s.body for s in expansion.scenarios]
    assert (
        bodies[0].startswith("A runaway trolley")
        and "5 - strongly prefer: pull the lever" in (bodies[0])
    )
    assert "1 - strongly prefer: do nothing" in bodies[0]
    assert bodies[1] == f"{ROWS[1]['text']}\n\n{ROWS[1]['scale']}"
    assert [s.subject for s in expansion.scenarios] == ["trolley", "gift"]
    # The rows' own levels are the scenarios' dimension scores, never the row number.
    assert list(expansion.dimension_scores.values()) == [
        {"Harm": 3, "Cost": 1},
        {"Harm": 1, "Cost": 2},
    ]


BAD: list[tuple[str, bytes, str, str]] = [
    ("no text", _csv([{"scale": "5 - a\n1 - b"}]), "TABLE_MISSING_COLUMNS", "text"),
    ("no scale", _csv([{"text": "x", "action_a": "a"}]), "TABLE_MISSING_COLUMNS", "scale"),
    ("empty", b"text,scale\n", "TABLE_EMPTY", "no rows"),
    (
        "empty text",
        _csv([ROWS[1], {**ROWS[1], "id": "b", "text": " "}]),
        "TABLE_BAD_ROW",
        "row 2, column text",
    ),
    (
        "one scale line",
        _csv([{**ROWS[1], "scale": "5 - yes"}]),
        "TABLE_BAD_ROW",
        "row 1, column scale",
    ),
    ("level", _csv([{**ROWS[0], "dim.Harm": "high"}]), "TABLE_BAD_ROW", "column dim.Harm"),
    ("zero", _csv([{**ROWS[0], "dim.Harm": 0}]), "TABLE_BAD_ROW", "whole number"),
    ("twice", _csv([ROWS[0], ROWS[0]]), "TABLE_BAD_ROW", "row 2, column id"),
    ("comma id", _csv([{**ROWS[0], "id": "a, b"}]), "TABLE_BAD_ROW", "column id"),
    ("one action", _csv([{**ROWS[0], "action_b": ""}]), "TABLE_BAD_ROW", "action_a/action_b"),
    ("not utf-8", b"text,scale\n\xff\n", "TABLE_UNREADABLE", "UTF-8"),
]


@pytest.mark.parametrize(("what", "data", "code", "named"), BAD, ids=[b[0] for b in BAD])
async def test_a_bad_table_writes_nothing_and_says_why(
    db: Database, org_id: str, what: str, data: bytes, code: str, named: str
) -> None:
    async with db.transaction() as conn:
        before = await _definitions(conn)
        with pytest.raises(InvalidTableError) as caught:
            await import_table(conn, org_id, data, file_name="set.csv")
        assert await _definitions(conn) == before
    assert caught.value.code == code and named in caught.value.message, caught.value.message
    assert caught.value.hint


async def test_bad_json_lines_and_parquet_name_the_problem(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        for data, name, code in (
            (b'{"text": "x"}\nnot json\n', "set.jsonl", "TABLE_BAD_ROW"),
            (b"[1, 2]\n", "set.jsonl", "TABLE_BAD_ROW"),
            (b"PAR1 not really", "set.parquet", "TABLE_UNREADABLE"),
        ):
            with pytest.raises(InvalidTableError) as caught:
                await import_table(conn, org_id, data, file_name=name)
            assert caught.value.code == code, (name, caught.value.message)
        assert await _definitions(conn) == 0


async def test_the_cli_imports_a_table_that_a_run_then_asks(
    database_url: TestDatabase, db: Database, tmp_path: Path
) -> None:
    url = database_url.url
    table = tmp_path / "dilemmas.csv"
    table.write_bytes(_csv(ROWS))
    done = await asyncio.to_thread(cli_on, url, "import", "table", str(table), "--json")
    assert done.code == 0, done.output
    found = done.json()
    assert found["created"] and found["scenarios"] == 2 and found["name"] == "dilemmas"
    words = await asyncio.to_thread(cli_on, url, "import", "table", str(table))
    assert words.code == 0 and "already imported: nothing written" in words.output
    # Errors: a code, the row, and nothing written.
    bad = tmp_path / "bad.csv"
    bad.write_bytes(_csv([ROWS[0], {**ROWS[0], "id": "x", "dim.Cost": "-1"}]))
    refused = await asyncio.to_thread(cli_on, url, "import", "table", str(bad), "--json")
    assert refused.code == 1 and refused.json()["code"] == "TABLE_BAD_ROW"
    assert "row 2, column dim.Cost" in refused.json()["error"]
    odd = tmp_path / "set.xlsx"
    odd.write_bytes(b"x")
    refused = await asyncio.to_thread(cli_on, url, "import", "table", str(odd), "--json")
    assert refused.json()["code"] == "UNKNOWN_TABLE_FORMAT"
    missing = await asyncio.to_thread(
        cli_on, url, "import", "table", str(tmp_path / "none.csv"), "--json"
    )
    assert missing.code == 1
    async with db.transaction() as conn:
        assert await _definitions(conn) == 1
    # A run asks the rows as they are written and the table's levels reach its frame.
    created = await asyncio.to_thread(
        cli_on, url, "runs", "create", "--definition", found["id"], "--model",
        "scripted:utilitarian", "--judge", JUDGE, "--followup-turns", "0", "--json",
    )  # fmt: skip
    assert created.code == 0, created.output
    run_id = str(created.json()["id"])
    waited = await asyncio.to_thread(
        cli_on, url, "runs", "wait", run_id, "--work", "--timeout", "120", "--json"
    )
    assert waited.code == 0 and waited.json()["status"] == "completed", waited.output

    def _frame() -> Any:
        with Client(url) as client:
            return client.run(run_id).transcripts_df().sort_values("subject")

    frame = await asyncio.to_thread(_frame)
    assert list(frame["subject"]) == ["gift", "trolley"]
    assert list(frame["dim.Harm"]) == [1, 3] and list(frame["dim.Cost"]) == [2, 1]
    assert frame["decision"].notna().all()
