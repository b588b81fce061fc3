"""Reading one run with everything an export writes: scenarios, transcripts, judgments.

The run and its scenarios are read at once (`load_run`); its transcripts are streamed in
export order, a batch at a time with their judgments (`transcript_batches`), so an export
holds one batch in memory whatever the size of the run.

Export order: the scenarios in the run's order (its sampling rank; scenarios it no longer
lists last), then the scenario id, the model in the run's order (others after), the model
id and the sample. Text is compared by code point whatever the database's collation
(PostgreSQL's locale collations skip punctuation), so both backends export the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, RowMapping, and_, case, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.streaming import stream_batches
from valuerank.db.tables import judgments, run_scenarios, runs, transcripts
from valuerank.queue.dialect import as_utc
from valuerank.refs import find_by_ref

BATCH = 500  # transcripts read (and held) at a time


@dataclass(frozen=True)
class TranscriptRow:
    id: str
    scenario_id: str
    model: str
    sample_index: int
    content: str
    turns: list[dict[str, Any]]
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float | None
    finish_reason: str | None
    decision_code: int | None
    decision_reason: str | None
    rationale: str | None
    consensus: Mapping[str, Any] | None
    synthetic: bool
    cached: bool
    judgments: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class RunSnapshot:
    """A run as stored. `config` is the raw JSON (read with RunConfig's defaults)."""

    id: str
    name: str
    cli_run_id: str
    status: str
    origin: str
    synthetic: bool
    created_at: datetime
    definition_id: str | None
    rubric_id: str | None
    config: Mapping[str, Any]
    scenarios: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # (scenario id, content), by rank


async def resolve_run_id(conn: AsyncConnection, org_id: str, ref: str) -> str:
    """A run id from its id or a unique prefix (at least 4 characters), like Git."""
    row = await find_by_ref(conn, runs, org_id, ref, kind="run", listing="runs")
    return str(row.id)


def _judgment(row: Row[Any]) -> dict[str, Any]:
    m = row._mapping
    return {
        "judge_model": m["judge_model"],
        "decision": m["decision"],
        "prioritized_values": m["prioritized_values"],
        "deprioritized_values": m["deprioritized_values"],
        "confidence": m["confidence"],
        "rationale": m["rationale"],
        "input_tokens": m["input_tokens"],
        "output_tokens": m["output_tokens"],
        "cost_usd": m["cost_usd"],
    }


async def load_run(conn: AsyncConnection, org_id: str, ref: str) -> RunSnapshot:
    """The run (id or unique prefix) and its scenarios; its transcripts are streamed apart."""
    run_id = await resolve_run_id(conn, org_id, ref)
    run = (
        (await conn.execute(select(runs).where(runs.c.org_id == org_id, runs.c.id == run_id)))
        .one()
        ._mapping
    )
    scenario_rows = await conn.execute(
        select(run_scenarios.c.scenario_id, run_scenarios.c.content)
        .where(run_scenarios.c.org_id == org_id, run_scenarios.c.run_id == run_id)
        .order_by(run_scenarios.c.position, run_scenarios.c.scenario_id)
    )
    return RunSnapshot(
        id=run["id"],
        name=run["name"],
        cli_run_id=run["cli_run_id"],
        status=run["status"],
        origin=run["origin"],
        synthetic=bool(run["synthetic"]),
        created_at=run["created_at"],
        definition_id=run["definition_id"],
        rubric_id=run["rubric_id"],
        config=dict(run["config"] or {}),
        scenarios=tuple((sid, dict(content or {})) for sid, content in scenario_rows),
    )


def _by_code_point(conn: AsyncConnection, column: ColumnElement[Any]) -> ColumnElement[Any]:
    # SQLite compares text as bytes (UTF-8: code point order); PostgreSQL does with "C".
    return column.collate("C") if conn.dialect.name == "postgresql" else column


def export_order(conn: AsyncConnection, models: Sequence[str]) -> list[ColumnElement[Any]]:
    """ORDER BY of the run's transcripts joined with its scenarios (see the module)."""
    t, rs = transcripts.c, run_scenarios.c
    model_rank: ColumnElement[Any] = (
        case({m: i for i, m in enumerate(models)}, value=t.model, else_=len(models))
        if models
        else literal(0)
    )
    return [
        case((rs.position.is_(None), 1), else_=0),
        rs.position,
        rs.scenario_id,
        _by_code_point(conn, t.scenario_id),
        model_rank,
        _by_code_point(conn, t.model),
        t.sample_index,
    ]


def _ordered(
    conn: AsyncConnection, org_id: str, run_id: str, models: Sequence[str], *columns: Any
) -> Any:
    """SELECT `columns` of the run's transcripts in export order."""
    t, rs = transcripts.c, run_scenarios.c
    joined = transcripts.outerjoin(
        run_scenarios, and_(rs.run_id == t.run_id, rs.scenario_id == t.scenario_id)
    )
    return (
        select(*columns)
        .select_from(joined)
        .where(t.org_id == org_id, t.run_id == run_id)
        .order_by(*export_order(conn, models))
    )


async def ordered_rows(
    conn: AsyncConnection,
    org_id: str,
    run_id: str,
    models: Sequence[str],
    *columns: Any,
    batch: int = BATCH,
) -> AsyncIterator[Sequence[Row[Any]]]:
    """`columns` of the run's transcripts in export order, streamed `batch` rows at a time
    (a server-side cursor on PostgreSQL)."""
    async for rows in stream_batches(conn, _ordered(conn, org_id, run_id, models, *columns), batch):
        yield rows


async def _judgments_of(
    conn: AsyncConnection, org_id: str, ids: Sequence[str]
) -> dict[str, list[Mapping[str, Any]]]:
    rows = await conn.execute(
        select(judgments).where(judgments.c.org_id == org_id, judgments.c.transcript_id.in_(ids))
    )
    by_transcript: dict[str, list[Mapping[str, Any]]] = {}
    # Code-point order of the judges, whatever the database's collation.
    for row in sorted(rows, key=lambda r: str(r._mapping["judge_model"])):
        by_transcript.setdefault(row._mapping["transcript_id"], []).append(_judgment(row))
    return by_transcript


async def transcript_batches(
    conn: AsyncConnection, org_id: str, run: RunSnapshot, models: Sequence[str]
) -> AsyncIterator[list[TranscriptRow]]:
    """The run's transcripts with their judgments, in export order, a batch at a time."""
    async for rows in ordered_rows(conn, org_id, run.id, models, transcripts):
        found = await _judgments_of(conn, org_id, [r._mapping["id"] for r in rows])
        yield [_transcript_row(row._mapping, found.get(row._mapping["id"], [])) for row in rows]


def _transcript_row(m: RowMapping, judged: Sequence[Mapping[str, Any]]) -> TranscriptRow:
    return TranscriptRow(
        id=m["id"],
        scenario_id=m["scenario_id"],
        model=m["model"],
        sample_index=int(m["sample_index"]),
        content=m["content"],
        turns=list(m["turns"] or []),
        input_tokens=int(m["input_tokens"]),
        output_tokens=int(m["output_tokens"]),
        latency_ms=float(m["latency_ms"]),
        cost_usd=m["cost_usd"],
        finish_reason=m["finish_reason"],
        decision_code=m["decision_code"],
        decision_reason=m["decision_reason"],
        rationale=m["rationale"],
        consensus=m["consensus"],
        synthetic=bool(m["synthetic"]),
        cached=bool(m["cached"]),
        judgments=tuple(judged),
    )


async def org_run_ids(conn: AsyncConnection, org_id: str) -> list[str]:
    """Every run of the organisation, oldest first."""
    rows = await conn.execute(select(runs.c.id, runs.c.created_at).where(runs.c.org_id == org_id))
    return [str(i) for i, _ in sorted(rows, key=lambda r: (as_utc(r.created_at), str(r.id)))]


__all__ = [
    "BATCH",
    "RunSnapshot",
    "TranscriptRow",
    "export_order",
    "load_run",
    "ordered_rows",
    "org_run_ids",
    "resolve_run_id",
    "transcript_batches",
]
