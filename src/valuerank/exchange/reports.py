"""`summary.csv` and `results.jsonl` of an exported run (pure).

The original CLI's summary columns are unknown to us, so these are ours, one row per
transcript, in this order:

    run_id, scenario_id, model, sample_index, decision_code, decision_reason,
    consensus_level, input_tokens, output_tokens, cost_usd, rationale

`run_id` is the CLI run id; empty cells stand for "none" (no decision, no judges, no cost).
`consensus_level` is the agreement level of the judges' consensus on the transcript
(STRONG, MODERATE, WEAK, no_data) when it was judged. CSV as Python's `csv` module writes
it (RFC 4180, CRLF).

`results.jsonl` holds one JSON object per transcript: `file` (its name in `transcripts/`),
`run_id`, `scenario_id`, `model`, `sample_index`, `decision` {code, reason}, `rationale`,
`consensus`, `input_tokens`, `output_tokens`, `latency_ms`, `cost_usd`, `finish_reason`,
`synthetic`, `cached`, `turns` (per-turn numbers, without the text) and `judgments` (one
object per judge model). An import reads tokens, latency, cost, finish reason, flags and
turn numbers back from it; decisions are always recomputed from the text.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from valuerank.exchange.run_data import TranscriptRow

SUMMARY_COLUMNS = (
    "run_id",
    "scenario_id",
    "model",
    "sample_index",
    "decision_code",
    "decision_reason",
    "consensus_level",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "rationale",
)


def _cell(value: Any) -> Any:
    return "" if value is None else value


def consensus_level(consensus: Mapping[str, Any] | None) -> str | None:
    """The agreement level of a stored consensus (`consensus.DecisionConsensus.to_dict()`)."""
    if not consensus:
        return None
    inner = consensus.get("consensus")
    level = inner.get("agreement_level") if isinstance(inner, Mapping) else None
    return None if level is None else str(level)


def _csv_line(cells: Sequence[Any]) -> str:
    out = io.StringIO()
    csv.writer(out).writerow(cells)
    return out.getvalue()


def summary_header() -> str:
    """The first line of `summary.csv`."""
    return _csv_line(SUMMARY_COLUMNS)


def summary_line(run_id: str, row: TranscriptRow) -> str:
    """The line of `summary.csv` of one transcript."""
    return _csv_line(
        [
            run_id,
            row.scenario_id,
            row.model,
            row.sample_index,
            _cell(row.decision_code),
            _cell(row.decision_reason),
            _cell(consensus_level(row.consensus)),
            row.input_tokens,
            row.output_tokens,
            _cell(row.cost_usd),
            _cell(row.rationale),
        ]
    )


def summary_csv(run_id: str, rows: Sequence[TranscriptRow]) -> str:
    return summary_header() + "".join(summary_line(run_id, row) for row in rows)


def _canonical(value: Any) -> Any:
    """A value read from a JSON column, with its objects' keys sorted: PostgreSQL's JSONB
    reorders keys and SQLite's JSON keeps them, and an export must not depend on which."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def result_record(run_id: str, file_name: str, row: TranscriptRow) -> dict[str, Any]:
    return {
        "file": file_name,
        "run_id": run_id,
        "scenario_id": row.scenario_id,
        "model": row.model,
        "sample_index": row.sample_index,
        "decision": {"code": row.decision_code, "reason": row.decision_reason},
        "rationale": row.rationale,
        "consensus": _canonical(row.consensus),
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "latency_ms": row.latency_ms,
        "cost_usd": row.cost_usd,
        "finish_reason": row.finish_reason,
        "synthetic": row.synthetic,
        "cached": row.cached,
        "turns": [
            _canonical({k: v for k, v in turn.items() if k not in ("probe", "target")})
            for turn in row.turns
        ],
        "judgments": [dict(j) for j in row.judgments],
    }


def result_line(record: Mapping[str, Any]) -> str:
    """The line of `results.jsonl` of one transcript's record."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"


def results_jsonl(records: Sequence[Mapping[str, Any]]) -> str:
    return "".join(result_line(record) for record in records)


__all__ = [
    "SUMMARY_COLUMNS",
    "consensus_level",
    "result_line",
    "result_record",
    "results_jsonl",
    "summary_csv",
    "summary_header",
    "summary_line",
]
