"""Rows a run owns: the one place runs, run scenarios and transcripts are written.

The probe handler and the importer both go through here, so a transcript is always unique per
(run, scenario, model, sample) and stored the same way whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.consensus import Judgement
from valuerank.db.compiled import CompiledOnce
from valuerank.db.tables import judgments, run_scenarios, runs, transcripts
from valuerank.queue.dialect import to_db, upsert
from valuerank.queue.ids import new_id
from valuerank.runs.searchable import searchable
from valuerank.runs.tallies import add_judge_cost, add_transcript

if TYPE_CHECKING:
    from valuerank.formats.transcript_md import Transcript


@dataclass(frozen=True)
class NewRun:
    definition_id: str | None
    config: Mapping[str, Any]
    name: str = ""
    cli_run_id: str = ""
    status: str = "pending"
    priority: int = 0
    rubric_id: str | None = None
    origin: str = "created"
    synthetic: bool = False
    # A restored run (workspace import) keeps its id and creation time when it can.
    id: str | None = None
    created_at: datetime | None = None


# Built once: every transcript written runs it.
_BUMP_INPUTS = (
    update(runs)
    .where(runs.c.id == bindparam("run_id"))
    .values(inputs_version=runs.c.inputs_version + 1)
)


async def bump_inputs(conn: AsyncConnection, run_id: str) -> None:
    """Mark the run's analysis inputs changed (its cached analyses stale), in the caller's
    transaction. Writers call it before their own writes: on PostgreSQL every writer then
    locks the run's row before its tally rows, the same order for all, so none deadlock."""
    await conn.execute(_BUMP_INPUTS, {"run_id": run_id})


async def bump_inputs_of_transcript(conn: AsyncConnection, transcript_id: str) -> None:
    """`bump_inputs` for the run a transcript belongs to."""
    owner = select(transcripts.c.run_id).where(transcripts.c.id == transcript_id)
    await conn.execute(
        update(runs)
        .where(runs.c.id == owner.scalar_subquery())
        .values(inputs_version=runs.c.inputs_version + 1)
    )


async def insert_run(conn: AsyncConnection, org_id: str, run: NewRun) -> str:
    values = asdict(run)
    values["config"] = dict(run.config)
    values["id"] = run.id or new_id()
    if run.created_at is None:
        del values["created_at"]  # the database's now
    else:
        values["created_at"] = to_db(conn.dialect.name, run.created_at)
    await conn.execute(insert(runs).values(org_id=org_id, **values))
    return str(values["id"])


@dataclass(frozen=True)
class RunScenario:
    scenario_id: str
    position: int
    content: Mapping[str, Any]  # Scenario.to_mapping(): subject, body, base_id, category, …
    dimension_scores: Mapping[str, int] = field(default_factory=dict)


async def insert_run_scenarios(
    conn: AsyncConnection, org_id: str, run_id: str, items: Sequence[RunScenario]
) -> int:
    """Add scenarios to a run; ones it already has are left as they are. Returns how many new."""
    if not items:
        return 0
    existing = set(
        (
            await conn.execute(
                select(run_scenarios.c.scenario_id).where(run_scenarios.c.run_id == run_id)
            )
        ).scalars()
    )
    rows = [
        {
            "org_id": org_id,
            "run_id": run_id,
            "scenario_id": item.scenario_id,
            "position": item.position,
            "content": dict(item.content),
            "dimension_scores": dict(item.dimension_scores),
        }
        for item in items
        if item.scenario_id not in existing
    ]
    if rows:
        await bump_inputs(conn, run_id)
        await conn.execute(insert(run_scenarios), rows)
    return len(rows)


@dataclass(frozen=True)
class JudgmentRecord:
    """One judge model's reading of a transcript."""

    judge_model: str
    decision: int | None
    prioritized_values: tuple[str, ...]
    deprioritized_values: tuple[str, ...]
    confidence: float
    rationale: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def judgement(self, weight: float = 1.0) -> Judgement:
        """This reading as the consensus counts it (`weight`: the judge model's)."""
        return Judgement(
            self.judge_model,
            self.decision,
            self.confidence,
            weight,
            self.prioritized_values,
            self.deprioritized_values,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["prioritized_values"] = list(self.prioritized_values)
        data["deprioritized_values"] = list(self.deprioritized_values)
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> JudgmentRecord:
        """From `to_dict()` output (e.g. an exported results.jsonl); ValueError if malformed."""
        try:
            decision = data.get("decision")
            record = cls(
                judge_model=str(data["judge_model"]),
                decision=None if decision is None else int(decision),
                prioritized_values=tuple(str(v) for v in data.get("prioritized_values") or ()),
                deprioritized_values=tuple(str(v) for v in data.get("deprioritized_values") or ()),
                confidence=float(data["confidence"]),
                rationale=str(data.get("rationale") or ""),
                input_tokens=int(data.get("input_tokens") or 0),
                output_tokens=int(data.get("output_tokens") or 0),
                cost_usd=None if data.get("cost_usd") is None else float(data["cost_usd"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed judgment: {exc}") from exc
        if record.decision is not None and not 1 <= record.decision <= 5:
            raise ValueError(f"judgment decision {record.decision} is not 1..5")
        if not 0 <= record.confidence <= 100:
            raise ValueError(f"judgment confidence {record.confidence} is not 0..100")
        return record


async def insert_judgment(
    conn: AsyncConnection, org_id: str, transcript_id: str, record: JudgmentRecord
) -> bool:
    """Store a judgment unless this judge already judged the transcript. True if written."""
    # Before the write, whether or not it happens (see bump_inputs): a judge's reading
    # written twice only costs one recomputation.
    await bump_inputs_of_transcript(conn, transcript_id)
    statement = (
        upsert(conn)(judgments)
        .values(id=new_id(), org_id=org_id, transcript_id=transcript_id, **record.to_dict())
        .on_conflict_do_nothing(index_elements=["transcript_id", "judge_model"])
        .returning(judgments.c.id)
    )
    written = (await conn.execute(statement)).scalar_one_or_none() is not None
    if written and record.cost_usd is not None:
        await add_judge_cost(conn, transcript_id, record.cost_usd)
    return written


@dataclass(frozen=True)
class TranscriptRecord:
    """A transcript and what is known about how it was produced."""

    transcript: Transcript
    model: str
    sample_index: int = 0
    turns_detail: Sequence[Mapping[str, Any]] = ()  # per turn: tokens, latency, finish reason
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = None
    finish_reason: str | None = None
    decision_code: int | None = None
    decision_reason: str | None = None
    synthetic: bool = False
    cached: bool = False
    rationale: str | None = None
    consensus: Mapping[str, Any] | None = None
    judgments: Sequence[JudgmentRecord] = ()
    # Verbatim markdown when it came from a file; otherwise serialized from `transcript`.
    content: str | None = None


# INSERT … ON CONFLICT DO NOTHING RETURNING id, compiled once (every probe writes one).
_TRANSCRIPT_INSERT = CompiledOnce(
    lambda insert: (
        insert(transcripts)
        .on_conflict_do_nothing(index_elements=["run_id", "scenario_id", "model", "sample_index"])
        .returning(transcripts.c.id)
    )
)


async def insert_transcript(
    conn: AsyncConnection, org_id: str, run_id: str, record: TranscriptRecord
) -> str | None:
    """Store a transcript unless one exists for its key. Returns the new id, or None if it existed.

    ON CONFLICT DO NOTHING on the unique key: a probe job executed twice (its worker died after
    writing, before completing the job) finds its result already there and writes nothing.
    """
    # Here, not with the module: the runs service imports this one, and every command that
    # reads a run would load YAML and the transcript format with it.
    from valuerank.formats.transcript_md import serialize_transcript

    content = (
        record.content if record.content is not None else serialize_transcript(record.transcript)
    )
    await bump_inputs(conn, run_id)  # first, whether or not it inserts (see bump_inputs)
    t = record.transcript
    transcript_id = new_id()
    turns = [
        {"number": turn.number, "label": turn.label, "probe": turn.probe, "target": turn.target}
        | (dict(record.turns_detail[i]) if i < len(record.turns_detail) else {})
        for i, turn in enumerate(t.turns)
    ]
    values = {
        "id": transcript_id,
        "org_id": org_id,
        "run_id": run_id,
        "scenario_id": t.scenario_id,
        "model": record.model,
        "sample_index": record.sample_index,
        "content": content,
        "search_text": searchable(content),
        "turns": turns,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "latency_ms": record.latency_ms,
        "cost_usd": record.cost_usd,
        "finish_reason": record.finish_reason,
        "decision_code": record.decision_code,
        "decision_reason": record.decision_reason,
        "synthetic": record.synthetic,
        "cached": record.cached,
        "rationale": record.rationale,
        "consensus": None if record.consensus is None else dict(record.consensus),
    }
    inserted = (await _TRANSCRIPT_INSERT.execute(conn, values)).scalar_one_or_none()
    if inserted is None:
        return None
    await add_transcript(
        conn,
        org_id,
        run_id,
        model=record.model,
        decision_code=record.decision_code,
        decision_reason=record.decision_reason,
        cost_usd=record.cost_usd,
        synthetic=record.synthetic,
    )
    for judgment in record.judgments:
        await insert_judgment(conn, org_id, str(inserted), judgment)
    return str(inserted)
