"""`valuerank export table` and `POST /api/export/table/{run_id}`: the run's table as CSV,
JSON Lines and Parquet, the same rows as the Python API's frame, with clear errors."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from tests.api.conftest import Live
from tests.conftest import TestDatabase

from valuerank import Client
from valuerank.formats.run_table import COLUMNS_HEADER

from .conftest import JUDGE, cli_on


def _frame(url: str, run_id: str) -> pd.DataFrame:
    with Client(url) as client:
        return client.run(run_id).decisions_df()


async def test_the_cli_writes_the_frame_s_rows_in_each_format(
    database_url: TestDatabase, completed: str, tmp_path: Path
) -> None:
    url = database_url.url
    frame = await asyncio.to_thread(_frame, url, completed)
    columns = list(frame.columns)
    written = {}
    for name in ("run.csv", "run.jsonl", "run.parquet"):
        path = tmp_path / name
        done = await asyncio.to_thread(
            cli_on, url, "export", "table", completed[:8], "-o", str(path), "--json"
        )
        assert done.code == 0, done.output
        summary = done.json()
        assert summary == {
            "file": str(path),
            "bytes": path.stat().st_size,
            "id": completed,
            "format": name.split(".")[1],
            "rows": len(frame),
            "columns": len(columns),
        }
        written[name] = path
    # JSON Lines: the frame's rows, value for value.
    lines = [json.loads(x) for x in written["run.jsonl"].read_text().splitlines()]
    assert [list(r) for r in lines] == [columns] * len(frame)
    assert [r["transcript_id"] for r in lines] == list(frame["transcript_id"])
    assert [r[f"judge.{JUDGE}.prioritized"] for r in lines] == list(
        frame[f"judge.{JUDGE}.prioritized"]
    )
    # Parquet: typed columns, lists as lists; read back, the frame.
    table = pq.read_table(written["run.parquet"])
    assert table.column_names == columns
    assert str(table.schema.field("decision").type) == "int64"
    assert str(table.schema.field(f"judge.{JUDGE}.prioritized").type) == "list<element: string>"
    back = table.to_pandas()
    for column in ("transcript_id", "model", "decision", "refusal", "cost_usd", "dim.Harm"):
        assert list(back[column]) == list(frame[column]), column
    # CSV: the same rows, lists joined with ';', booleans as true/false.
    csv = pd.read_csv(written["run.csv"], keep_default_na=False, dtype=str)
    assert list(csv.columns) == columns
    assert list(csv["decision"]) == [str(v) for v in frame["decision"]]
    assert set(csv["refusal"]) == {"false"}
    assert list(csv[f"judge.{JUDGE}.prioritized"]) == [
        ";".join(v) for v in frame[f"judge.{JUDGE}.prioritized"]
    ]
    # With the text: three more columns.
    texts = tmp_path / "text.jsonl"
    done = await asyncio.to_thread(
        cli_on, url, "export", "table", completed, "-o", str(texts), "--with-text", "--json"
    )
    assert done.code == 0 and done.json()["columns"] == len(columns) + 3


async def test_the_cli_s_errors_are_clear_and_write_nothing(
    database_url: TestDatabase, completed: str, tmp_path: Path
) -> None:
    url = database_url.url
    odd = tmp_path / "run.xlsx"
    done = await asyncio.to_thread(
        cli_on, url, "export", "table", completed, "-o", str(odd), "--json"
    )
    assert done.code == 1 and done.json()["code"] == "UNKNOWN_TABLE_FORMAT"
    assert ".parquet" in done.json()["hint"] and not odd.exists()
    missing = tmp_path / "none.csv"
    done = await asyncio.to_thread(
        cli_on, url, "export", "table", "no-such-run", "-o", str(missing), "--json"
    )
    assert done.code == 1 and done.json()["code"] == "NOT_FOUND" and not missing.exists()
    # In words, the file and what it holds.
    here = tmp_path / "words.csv"
    done = await asyncio.to_thread(cli_on, url, "export", "table", completed, "-o", str(here))
    assert done.code == 0 and "words.csv" in done.output and "rows:" in done.output


async def test_the_api_answers_each_format_for_its_organisation_only(
    live: Live, completed: str
) -> None:
    async with live.client() as client:
        answers = {}
        for fmt, media in (
            ("csv", "text/csv"),
            ("jsonl", "application/x-ndjson"),
            ("parquet", "application/vnd.apache.parquet"),
        ):
            answer = await client.post(f"/api/export/table/{completed}", params={"format": fmt})
            assert answer.status_code == 200, answer.text
            assert answer.headers["content-type"].startswith(media)
            assert f'filename="run-{completed}.{fmt}"' in answer.headers["content-disposition"]
            answers[fmt] = answer
        columns = json.loads(answers["jsonl"].headers[COLUMNS_HEADER])
        rows = [json.loads(x) for x in answers["jsonl"].text.splitlines()]
        assert rows and all(list(r) == columns for r in rows)
        parquet = pq.read_table(io.BytesIO(answers["parquet"].content))
        assert parquet.column_names == columns and parquet.num_rows == len(rows)
        assert answers["csv"].text.splitlines()[0].split(",")[:3] == columns[:3]
        bad = await client.post(f"/api/export/table/{completed}", params={"format": "xlsx"})
        assert bad.status_code == 422
    async with live.client_for("elsewhere", "admin") as outsider:
        hidden = await outsider.post(f"/api/export/table/{completed}")
        assert hidden.status_code == 404 and hidden.json()["code"] == "NOT_FOUND"
