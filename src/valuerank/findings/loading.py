"""A run's analysis input, read from the database, and the hash that keys its cache.

Reads the run's transcripts (model, scenario, sample, decision code and reason, the judges'
consensus), its frozen scenarios (name, dimension levels), its judgments and the rubric's
values, and says what the run rests on when it is a sample. The input hash is the sha256 of
all of that in a canonical order, plus the analysis code version: the same inputs always
hash the same, and any new transcript, judgment or changed scenario changes it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis import CODE_VERSION, AnalysisInput, SampleBasis, ScenarioInfo
from valuerank.db.tables import judgments, rubrics, run_scenarios, transcripts
from valuerank.definitions.expansion import expand_with_scores
from valuerank.definitions.service import get_definition
from valuerank.errors import NotFoundError
from valuerank.formats.rubric import Rubric
from valuerank.runs.service import Run


@dataclass(frozen=True)
class LoadedRun:
    run: Run
    data: AnalysisInput
    input_hash: str


def _values(consensus: Any, key: str) -> list[str]:
    if not isinstance(consensus, dict):
        return []
    named = consensus.get(key) or []
    return [str(v) for v in named] if isinstance(named, list) else []


async def _rubric_values(conn: AsyncConnection, run: Run) -> list[str]:
    if run.rubric_id is None:
        return []
    content = await conn.scalar(
        select(rubrics.c.content).where(
            rubrics.c.org_id == run.org_id, rubrics.c.id == run.rubric_id
        )
    )
    return [] if content is None else list(Rubric.from_dict(content).value_names)


async def sample_basis(conn: AsyncConnection, run: Run) -> SampleBasis:
    """What the run's figures rest on: its scenarios of the definition's (None if unknown)."""
    scenarios = int(
        await conn.scalar(
            select(func.count()).where(
                run_scenarios.c.org_id == run.org_id, run_scenarios.c.run_id == run.id
            )
        )
        or 0
    )
    percentage = run.config.sample_percentage
    total: int | None = scenarios
    if percentage < 100:
        total = None
        if run.definition_id is not None:
            try:
                stored = await get_definition(conn, run.org_id, run.definition_id)
            except NotFoundError:
                stored = None
            if stored is not None:
                total = len(expand_with_scores(stored.definition).scenarios)
    return SampleBasis(percentage=percentage, scenarios=scenarios, total=total)


def input_hash(parts: Any) -> str:
    canonical = json.dumps([CODE_VERSION, parts], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _transcript_key(row: Any) -> list[Any]:
    """What of a transcript the analysis reads (its hash part)."""
    return [
        row.id,
        row.model,
        row.scenario_id,
        row.sample_index,
        row.decision_code,
        row.decision_reason,
        _values(row.consensus, "prioritized_values"),
        _values(row.consensus, "deprioritized_values"),
        isinstance(row.consensus, dict),
    ]


async def load_run(conn: AsyncConnection, run: Run) -> LoadedRun:
    """The run's analysis input and its hash (every query scoped by the run's org)."""
    rows = (
        await conn.execute(
            select(
                transcripts.c.id,
                transcripts.c.model,
                transcripts.c.scenario_id,
                transcripts.c.sample_index,
                transcripts.c.decision_code,
                transcripts.c.decision_reason,
                transcripts.c.consensus,
            )
            .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
            .order_by(transcripts.c.id)
        )
    ).all()
    scenario_rows = (
        await conn.execute(
            select(
                run_scenarios.c.scenario_id,
                run_scenarios.c.content,
                run_scenarios.c.dimension_scores,
            )
            .where(run_scenarios.c.org_id == run.org_id, run_scenarios.c.run_id == run.id)
            .order_by(run_scenarios.c.scenario_id)
        )
    ).all()
    judged_rows = (
        await conn.execute(
            select(
                judgments.c.transcript_id,
                judgments.c.judge_model,
                judgments.c.decision,
                judgments.c.prioritized_values,
                judgments.c.deprioritized_values,
                judgments.c.confidence,
            )
            .select_from(judgments.join(transcripts))
            .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
            .order_by(judgments.c.transcript_id, judgments.c.judge_model)
        )
    ).all()
    universe = await _rubric_values(conn, run)
    sample = await sample_basis(conn, run)
    scenarios = {
        sid: ScenarioInfo(
            name=str((content or {}).get("subject") or sid),
            levels={str(k): float(v) for k, v in (scores or {}).items() if v is not None},
        )
        for sid, content, scores in scenario_rows
    }
    consensus = [r.consensus for r in rows]
    data = AnalysisInput.build(
        models=[r.model for r in rows],
        scenario_ids=[r.scenario_id for r in rows],
        decisions=[r.decision_code for r in rows],
        reasons=[r.decision_reason for r in rows],
        scenarios=scenarios,
        prioritized=[_values(c, "prioritized_values") for c in consensus],
        deprioritized=[_values(c, "deprioritized_values") for c in consensus],
        judged=[isinstance(c, dict) for c in consensus],
        value_universe=universe,
        sample=sample,
    )
    digest = input_hash(
        {
            "transcripts": [_transcript_key(r) for r in rows],
            "judgments": [[*r[:3], list(r[3]), list(r[4]), float(r[5])] for r in judged_rows],
            "scenarios": [[sid, scenarios[sid].name, scenarios[sid].levels] for sid in scenarios],
            "values": universe,
            "sample": sample.to_dict(),
        }
    )
    return LoadedRun(run=run, data=data, input_hash=digest)
