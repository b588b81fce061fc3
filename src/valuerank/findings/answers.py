"""One scenario's answers side by side: every model's transcripts of it in a run (and in a
run compared with it), each with its text, its decision, the judges' readings and their
consensus. What `GET /api/runs/{id}/scenarios/{scenario_id}/answers` and the page
`/runs/{id}/scenarios/{scenario_id}` show."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import judgments, run_scenarios, transcripts
from valuerank.errors import NotFoundError
from valuerank.findings.matrix import CODES
from valuerank.findings.matrix_loading import resolve_runs, run_brief
from valuerank.formats.transcript_md import Turn
from valuerank.queue.dialect import iso
from valuerank.runs.service import Run
from valuerank.shapes import dump


class ScenarioNotFoundError(NotFoundError):
    code = "SCENARIO_NOT_FOUND"


def _turns(stored: Any) -> list[dict[str, Any]]:
    turns = [
        Turn(
            number=int(t.get("number", i + 1)),
            label=str(t.get("label") or ""),
            probe=str(t.get("probe") or ""),
            target=str(t.get("target") or ""),
        )
        for i, t in enumerate(stored or [])
        if isinstance(t, dict)
    ]
    return dump(turns)  # type: ignore[no-any-return]


def _votes(consensus: Any) -> dict[str, str]:
    """Each judge's vote in the consensus (validated, partial, rejected) by judge model."""
    inner = consensus.get("consensus") if isinstance(consensus, dict) else None
    votes = inner.get("votes") if isinstance(inner, dict) else None
    return {str(v.get("model")): str(v.get("outcome")) for v in votes or [] if isinstance(v, dict)}


async def _scenario(
    conn: AsyncConnection, org_id: str, runs: Sequence[Run], scenario_id: str
) -> dict[str, Any]:
    """The scenario as the first run holding it froze it; 404 when the asked run neither
    holds it nor has a transcript of it."""
    rows = (
        await conn.execute(
            select(
                run_scenarios.c.run_id,
                run_scenarios.c.content,
                run_scenarios.c.dimension_scores,
            ).where(
                run_scenarios.c.org_id == org_id,
                run_scenarios.c.run_id.in_([r.id for r in runs]),
                run_scenarios.c.scenario_id == scenario_id,
            )
        )
    ).all()
    by_run = {run_id: (content, scores) for run_id, content, scores in rows}
    if runs[0].id not in by_run:
        answered = (
            await conn.execute(
                select(transcripts.c.id)
                .where(
                    transcripts.c.org_id == org_id,
                    transcripts.c.run_id == runs[0].id,
                    transcripts.c.scenario_id == scenario_id,
                )
                .limit(1)
            )
        ).first()
        if answered is None:
            raise ScenarioNotFoundError(
                f"run {runs[0].id} has no scenario {scenario_id!r}",
                hint=f"its scenarios are the rows of GET /api/runs/{runs[0].id}/matrix",
            )
    stored: tuple[Any, Any] = next((by_run[r.id] for r in runs if r.id in by_run), ({}, {}))
    content: dict[str, Any] = stored[0] or {}
    scores: dict[str, Any] = stored[1] or {}
    return {
        "id": scenario_id,
        "name": str(content.get("subject") or scenario_id),
        "body": str(content.get("body") or ""),
        "levels": {str(k): float(v) for k, v in scores.items() if v is not None},
    }


async def scenario_answers(
    conn: AsyncConnection,
    org_id: str,
    run_ref: str,
    scenario_id: str,
    compare: str | None = None,
) -> dict[str, Any]:
    """Every model's transcripts of the scenario, a column per (run, model): the run's
    models in their order (those without an answer too), then the compared run's."""
    runs = await resolve_runs(conn, org_id, run_ref, () if compare is None else (compare,))
    scenario = await _scenario(conn, org_id, runs, scenario_id)
    found = (
        await conn.execute(
            select(transcripts)
            .where(
                transcripts.c.org_id == org_id,
                transcripts.c.run_id.in_([r.id for r in runs]),
                transcripts.c.scenario_id == scenario_id,
            )
            .order_by(transcripts.c.sample_index, transcripts.c.id)
        )
    ).all()
    readings: dict[str, list[Any]] = {}
    if found:
        rows = await conn.execute(
            select(judgments)
            .where(
                judgments.c.org_id == org_id,
                judgments.c.transcript_id.in_([t.id for t in found]),
            )
            .order_by(judgments.c.judge_model)
        )
        for j in rows:
            readings.setdefault(j.transcript_id, []).append(j)
    columns: dict[tuple[str, str], list[dict[str, Any]]] = {
        (r.id, m): [] for r in runs for m in r.config.models
    }
    for t in found:
        votes = _votes(t.consensus)
        columns.setdefault((t.run_id, t.model), []).append(
            {
                "id": t.id,
                "sample_index": t.sample_index,
                "decision_code": t.decision_code,
                "decision_reason": t.decision_reason,
                "rationale": t.rationale,
                "turns": _turns(t.turns),
                "consensus": t.consensus,
                "judgments": [
                    {
                        "judge_model": j.judge_model,
                        "decision": j.decision,
                        "confidence": j.confidence,
                        "prioritized_values": list(j.prioritized_values or []),
                        "deprioritized_values": list(j.deprioritized_values or []),
                        "rationale": j.rationale,
                        "vote": votes.get(j.judge_model),
                        "created_at": iso(j.created_at),
                    }
                    for j in readings.get(t.id, [])
                ],
            }
        )
    order = {r.id: i for i, r in enumerate(runs)}
    keys = sorted(columns, key=lambda k: order[k[0]])  # stable: model order kept within a run
    return {
        "runs": [run_brief(r) for r in runs],
        "scenario": scenario,
        "columns": [_column(run_id, model, columns[(run_id, model)]) for run_id, model in keys],
    }


def _column(run_id: str, model: str, answers: list[dict[str, Any]]) -> dict[str, Any]:
    decided = [a["decision_code"] for a in answers if a["decision_code"] in CODES]
    agreed = [
        d
        for a in answers
        if isinstance(a["consensus"], dict) and isinstance(d := a["consensus"].get("decision"), int)
    ]
    return {
        "run_id": run_id,
        "model": model,
        "mean": statistics.fmean(decided) if decided else None,
        "judged_mean": statistics.fmean(agreed) if agreed else None,
        "transcripts": answers,
    }
