"""A run as one table: a row per transcript, the columns a notebook analyses.

The columns and their types are `valuerank.formats.run_table`'s; the same rows feed
`valuerank export table` (CSV, JSON Lines, Parquet), the API's
`POST /api/export/table/{run_id}` and the Python API's dataframes (`valuerank.sdk`), on a
local database or through a server, so the frame is the same whichever way it was read.

Columns, in this order (docs/notebooks.md documents them):

* `run_id`, `transcript_id`, `model`, `sample_index`;
* `scenario_id` (the run scenario: a reversed presentation's id ends in `-reversed`),
  `scenario` (its level combination, the unit every figure clusters by), `subject`;
* `phrasing` (`""` for the first wording) and `scale_order` (`as-written` / `reversed`);
* `dim.<Name>`: each dimension's level score, dimensions in code-point order;
* `decision` (1–5, mapped back to the definition's direction; null without one),
  `decision_reason`, `refusal`;
* `judged`, `consensus_prioritized`, `consensus_deprioritized` (lists of values);
* per judge model, in code-point order: `judge.<model>.decision`, `.prioritized`,
  `.deprioritized`, `.confidence`;
* `input_tokens`, `output_tokens`, `cost_usd`, `latency_ms`, `finish_reason`, `cached`,
  `synthetic`;
* with text (`transcripts_df`, `--with-text`): `answer` (the first reply), `turns`, `rationale`.

Rows come in export order (exchange/run_data.py): the run's scenario order, then models in the
run's order, then the sample.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import judgments, run_scenarios, transcripts
from valuerank.definitions.presentation import combination_of, phrasing_of, presentation_of
from valuerank.exchange.run_data import RunSnapshot, TranscriptRow, transcript_batches
from valuerank.formats.run_table import DIMENSION_PREFIX, JUDGE_PREFIX, TableLayout
from valuerank.scoring.decision import REFUSAL


def _names(values: Any) -> list[str]:
    return [str(v) for v in values] if isinstance(values, list | tuple) else []


def _first_answer(turns: Sequence[Mapping[str, Any]]) -> str | None:
    return str(turns[0].get("target") or "") if turns else None


def table_row(
    run_id: str,
    t: TranscriptRow,
    layout: TableLayout,
    subjects: Mapping[str, str],
    scores: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """One transcript as a row of `layout.columns()` (pure)."""
    base, order = presentation_of(t.scenario_id)
    levels = scores.get(t.scenario_id, {})
    consensus = t.consensus if isinstance(t.consensus, Mapping) else None
    row: dict[str, Any] = {
        "run_id": run_id,
        "transcript_id": t.id,
        "model": t.model,
        "sample_index": t.sample_index,
        "scenario_id": t.scenario_id,
        "scenario": combination_of(base),
        "subject": subjects.get(t.scenario_id),
        "phrasing": phrasing_of(base),
        "scale_order": order,
    }
    for dimension in layout.dimensions:
        score = levels.get(dimension)
        row[DIMENSION_PREFIX + dimension] = None if score is None else int(score)
    row |= {
        "decision": t.decision_code,
        "decision_reason": t.decision_reason,
        "refusal": t.decision_code is None and t.decision_reason == REFUSAL,
        "judged": consensus is not None,
        "consensus_prioritized": _names((consensus or {}).get("prioritized_values")),
        "consensus_deprioritized": _names((consensus or {}).get("deprioritized_values")),
    }
    by_judge = {str(j["judge_model"]): j for j in t.judgments}
    for judge in layout.judges:
        found = by_judge.get(judge)
        prefix = f"{JUDGE_PREFIX}{judge}."
        row[prefix + "decision"] = None if found is None else found["decision"]
        row[prefix + "prioritized"] = _names(None if found is None else found["prioritized_values"])
        row[prefix + "deprioritized"] = _names(
            None if found is None else found["deprioritized_values"]
        )
        row[prefix + "confidence"] = None if found is None else float(found["confidence"])
    row |= {
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "cost_usd": t.cost_usd,
        "latency_ms": t.latency_ms,
        "finish_reason": t.finish_reason,
        "cached": t.cached,
        "synthetic": t.synthetic,
    }
    if layout.with_text:
        row |= {
            "answer": _first_answer(t.turns),
            "turns": len(t.turns),
            "rationale": t.rationale,
        }
    return row


@dataclass(frozen=True)
class RunTable:
    """A run's table, read: its layout and a stream of rows (see `table_rows`)."""

    run: RunSnapshot
    layout: TableLayout
    subjects: Mapping[str, str]
    scores: Mapping[str, Mapping[str, Any]]


async def run_table(
    conn: AsyncConnection, org_id: str, run: RunSnapshot, *, with_text: bool = False
) -> RunTable:
    """The run's table layout: its dimensions and every judge that read a transcript or
    that the run names, each in code-point order (PostgreSQL's JSON keeps no key order)."""
    scenario_rows = await conn.execute(
        select(run_scenarios.c.scenario_id, run_scenarios.c.dimension_scores)
        .where(run_scenarios.c.org_id == org_id, run_scenarios.c.run_id == run.id)
        .order_by(run_scenarios.c.position, run_scenarios.c.scenario_id)
    )
    scores = {sid: dict(levels or {}) for sid, levels in scenario_rows}
    dimensions = sorted({str(d) for levels in scores.values() for d in levels})
    judged = await conn.scalars(
        select(judgments.c.judge_model)
        .distinct()
        .select_from(judgments.join(transcripts))
        .where(transcripts.c.org_id == org_id, transcripts.c.run_id == run.id)
    )
    named = run.config.get("judge_models") or []
    judges = sorted({*map(str, judged), *map(str, named)})
    subjects = {sid: str(content.get("subject") or "") for sid, content in run.scenarios}
    return RunTable(
        run=run,
        layout=TableLayout(tuple(dimensions), tuple(judges), with_text),
        subjects=subjects,
        scores=scores,
    )


async def table_rows(
    conn: AsyncConnection, org_id: str, table: RunTable
) -> AsyncIterator[list[dict[str, Any]]]:
    """The table's rows in export order, a batch at a time (memory does not grow with the run)."""
    models = [str(m) for m in table.run.config.get("models") or []]
    async for batch in transcript_batches(conn, org_id, table.run, models):
        yield [
            table_row(table.run.id, t, table.layout, table.subjects, table.scores) for t in batch
        ]
