"""Reading a run's model × scenario matrix (findings/matrix.py) from the database, alone or beside
other runs (of the same definition, typically), with what its definition says the numbers
mean; and the matrix as the API answers it. Every query is scoped by the organisation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis.stakes import (
    CANONICAL_VALUES,
    dimension_values,
    explicit_mapping,
    scale_labels,
)
from valuerank.db.streaming import stream_rows
from valuerank.db.tables import run_scenarios, transcripts
from valuerank.definitions.service import get_definition
from valuerank.errors import NotFoundError
from valuerank.findings.kept import KeptPerEngine
from valuerank.findings.matrix import (
    DEFAULT_THRESHOLD,
    Answer,
    Column,
    Matrix,
    Row,
    ScenarioFacts,
    build_matrix,
)
from valuerank.runs.service import Run, get_run

# Whose decision a cell counts: the one read from the model's own answer, or the judges'
# agreed reading of it (the consensus, once the run is judged).
BASIS_MODEL = "model"
BASIS_JUDGES = "judges"
BASES = (BASIS_MODEL, BASIS_JUDGES)


@dataclass(frozen=True)
class Meaning:
    """What the definition says the figures mean: the scale's labels by code, each
    dimension's value at stake, and each dimension's level labels by score."""

    scale: dict[int, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    levels: dict[str, dict[int, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadedMatrix:
    runs: tuple[Run, ...]  # the run asked for first, then the ones compared with it
    matrix: Matrix
    meaning: Meaning
    basis: str


async def resolve_runs(
    conn: AsyncConnection, org_id: str, run_ref: str, compare: Sequence[str] = ()
) -> tuple[Run, ...]:
    """The run and the runs to compare it with (each once; 404 for a foreign or unknown
    one)."""
    found = [await get_run(conn, org_id, run_ref)]
    for ref in compare:
        other = await get_run(conn, org_id, ref)
        if other.id not in {r.id for r in found}:
            found.append(other)
    return tuple(found)


async def definition_meaning(
    conn: AsyncConnection, org_id: str, definition_id: str | None, dimensions: Sequence[str]
) -> Meaning:
    """A definition version's scale and dimensions, read for labels (none when a run has no
    definition here, as an imported CLI run may not)."""
    if definition_id is None:
        return Meaning(values={d: d for d in dimensions})
    try:
        stored = await get_definition(conn, org_id, definition_id)
    except NotFoundError:
        return Meaning(values={d: d for d in dimensions})
    definition = stored.definition
    explicit = explicit_mapping(definition.extra_front_matter)
    return Meaning(
        scale=scale_labels(definition.template),
        values=dimension_values(dimensions, CANONICAL_VALUES, explicit),
        levels={d.name: {lv.score: lv.label for lv in d.levels} for d in definition.dimensions},
    )


async def run_scenario_facts(
    conn: AsyncConnection, org_id: str, run_ids: Sequence[str]
) -> list[ScenarioFacts]:
    """The runs' frozen scenarios (the first run's facts win for a scenario several hold)."""
    rows = await conn.execute(
        select(
            run_scenarios.c.run_id,
            run_scenarios.c.scenario_id,
            run_scenarios.c.position,
            run_scenarios.c.content,
            run_scenarios.c.dimension_scores,
        ).where(run_scenarios.c.org_id == org_id, run_scenarios.c.run_id.in_(run_ids))
    )
    rank = {run_id: i for i, run_id in enumerate(run_ids)}
    facts: dict[str, tuple[int, ScenarioFacts]] = {}
    for run_id, sid, position, content, scores in rows:
        known = facts.get(sid)
        if known is not None and known[0] <= rank[run_id]:
            continue
        levels = {str(k): float(v) for k, v in (scores or {}).items() if v is not None}
        name = str((content or {}).get("subject") or sid)
        facts[sid] = (rank[run_id], ScenarioFacts(sid, name, levels, position))
    return [f for _, f in facts.values()]


def _decision(basis: str, code: int | None, consensus: Any) -> int | None:
    if basis == BASIS_MODEL:
        return code
    agreed = consensus.get("decision") if isinstance(consensus, dict) else None
    return agreed if isinstance(agreed, int) else None


# Built matrices kept in memory (findings/kept.py): the page and the API are read again and
# again (sorted, filtered, paged) while the runs' inputs stay the same, and building the
# matrix of a 1,000-scenario run reads and groups every transcript of it (~0.3 s).
KEPT_MATRICES = 16
_kept: KeptPerEngine[LoadedMatrix] = KeptPerEngine(KEPT_MATRICES)


async def load_matrix(
    conn: AsyncConnection,
    org_id: str,
    run_ref: str,
    *,
    compare: Sequence[str] = (),
    basis: str = BASIS_MODEL,
    threshold: float = DEFAULT_THRESHOLD,
) -> LoadedMatrix:
    """The matrix of a run (and of `compare`'s runs beside it): kept while the runs' inputs
    versions are unchanged, read from the database otherwise."""
    runs = await resolve_runs(conn, org_id, run_ref, compare)
    variant = (
        tuple(tuple(r.config.models) for r in runs),
        runs[0].definition_id,
        basis,
        threshold,
    )
    found = await _kept.get(
        conn,
        org_id,
        [r.id for r in runs],
        variant,
        lambda: read_matrix(conn, org_id, runs, basis, threshold),
    )
    # The runs' own rows (their status, their names) may change without changing their inputs.
    return found if found.runs == runs else replace(found, runs=runs)


async def read_matrix(
    conn: AsyncConnection, org_id: str, runs: tuple[Run, ...], basis: str, threshold: float
) -> LoadedMatrix:
    """The matrix of `runs`, read from the database. Transcripts are streamed without their
    text: a small record each, never the answers themselves."""
    run_ids = [r.id for r in runs]
    scenarios = await run_scenario_facts(conn, org_id, run_ids)
    columns = [Column(r.id, m) for r in runs for m in r.config.models]
    wanted = [
        transcripts.c.id,
        transcripts.c.run_id,
        transcripts.c.model,
        transcripts.c.scenario_id,
        transcripts.c.sample_index,
        transcripts.c.decision_code,
    ]
    if basis == BASIS_JUDGES:
        wanted.append(transcripts.c.consensus)
    query = select(*wanted).where(transcripts.c.org_id == org_id, transcripts.c.run_id.in_(run_ids))
    answers = []
    async for row in stream_rows(conn, query):
        consensus = row.consensus if basis == BASIS_JUDGES else None
        answers.append(
            Answer(
                row.run_id,
                row.model,
                row.scenario_id,
                row.id,
                row.sample_index,
                _decision(basis, row.decision_code, consensus),
            )
        )
    matrix = build_matrix(columns, scenarios, answers, threshold=threshold)
    first = runs[0]
    meaning = await definition_meaning(conn, org_id, first.definition_id, matrix.dimensions)
    return LoadedMatrix(runs, matrix, meaning, basis)


# --- the API's answer -------------------------------------------------------------------------


def run_brief(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status.value,
        "definition_id": run.definition_id,
    }


def row_dict(row: Row, threshold: float) -> dict[str, Any]:
    return {
        "scenario_id": row.scenario.scenario_id,
        "name": row.scenario.name,
        "levels": dict(row.scenario.levels),
        "disagreement": row.disagreement,
        "sd": row.sd,
        "differ": row.differs(threshold),
        "split": row.split,
        "odd_one_out": row.odd_one_out,
        "cells": [c.to_dict() for c in row.cells],
    }


def matrix_dict(
    loaded: LoadedMatrix, rows: Sequence[Row], *, sort: str, show: str
) -> dict[str, Any]:
    """The matrix with `rows` (sorted and filtered by the caller) as its rows; the counts
    and the column and pair statistics are over every row."""
    m = loaded.matrix
    means, odd = m.column_means(), m.odd_counts()
    return {
        "runs": [run_brief(r) for r in loaded.runs],
        "basis": loaded.basis,
        "threshold": m.threshold,
        "sort": sort,
        "show": show,
        "columns": [
            {"index": i, "run_id": c.run_id, "model": c.model, "mean": means[i], "odd": odd[i]}
            for i, c in enumerate(m.columns)
        ],
        "dimensions": [
            {
                "name": d,
                "value": loaded.meaning.values.get(d, d),
                "levels": {str(k): v for k, v in loaded.meaning.levels.get(d, {}).items()},
            }
            for d in m.dimensions
        ],
        "scale": {str(k): v for k, v in sorted(loaded.meaning.scale.items())},
        "scenarios": len(m.rows),
        "differ": sum(1 for r in m.rows if r.differs(m.threshold)),
        "split": sum(1 for r in m.rows if r.split),
        "rows": [row_dict(r, m.threshold) for r in rows],
        "pairs": [
            {"a": p.a, "b": p.b, "shared": p.shared, "mean_gap": p.mean_gap, "differ": p.differ}
            for p in m.pairs()
        ],
    }
