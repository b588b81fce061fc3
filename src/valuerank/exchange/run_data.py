"""Reading one run with everything an export writes: scenarios, transcripts, judgments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import judgments, run_scenarios, runs, transcripts
from valuerank.queue.dialect import as_utc
from valuerank.refs import find_by_ref


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
    transcripts: tuple[TranscriptRow, ...] = field(default=())


async def resolve_run_id(conn: AsyncConnection, org_id: str, ref: str) -> str:
    """A run id from its id or a unique prefix (at least 4 characters), like Git."""
    row = await find_by_ref(conn, runs, org_id, ref, kind="run", list_hint="valuerank runs list")
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
    by_transcript: dict[str, list[Mapping[str, Any]]] = {}
    judgment_rows = await conn.execute(
        select(judgments)
        .join(transcripts, transcripts.c.id == judgments.c.transcript_id)
        .where(judgments.c.org_id == org_id, transcripts.c.run_id == run_id)
    )
    # Text is ordered here, not in SQL: code-point order whatever the database's collation
    # (PostgreSQL's locale collations skip punctuation), so both backends export the same.
    for row in sorted(judgment_rows, key=lambda r: str(r._mapping["judge_model"])):
        by_transcript.setdefault(row._mapping["transcript_id"], []).append(_judgment(row))
    transcript_rows = await conn.execute(
        select(transcripts).where(transcripts.c.org_id == org_id, transcripts.c.run_id == run_id)
    )
    items = []
    for row in sorted(
        transcript_rows,
        key=lambda r: (r._mapping["scenario_id"], r._mapping["model"], r._mapping["sample_index"]),
    ):
        m = row._mapping
        items.append(
            TranscriptRow(
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
                judgments=tuple(by_transcript.get(m["id"], [])),
            )
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
        transcripts=tuple(items),
    )


async def org_run_ids(conn: AsyncConnection, org_id: str) -> list[str]:
    """Every run of the organisation, oldest first."""
    rows = await conn.execute(select(runs.c.id, runs.c.created_at).where(runs.c.org_id == org_id))
    return [str(i) for i, _ in sorted(rows, key=lambda r: (as_utc(r.created_at), str(r.id)))]


__all__ = ["RunSnapshot", "TranscriptRow", "load_run", "org_run_ids", "resolve_run_id"]
