"""A run's analysis input, read from the database, and the hash that keys its cache.

Reads the run's transcripts (model, scenario, sample, decision code and reason, the judges'
consensus), its frozen scenarios (name, dimension levels), its judgments and the rubric's
values, and says what the run rests on when it is a sample. A scenario asked in several
phrasings or scale orders is one scenario unit, its level combination (`by_combination`).
The input hash is the sha256 of all of that in a canonical order, plus the analysis code
version: the same inputs always hash the same, and any new transcript, judgment or changed
scenario changes it.

A loaded run is kept in memory (per database engine, the last `KEPT_RUNS`) under the run's
`inputs_version` (findings/kept.py): a page that compares or pools runs reads each run's
version (one row) instead of its transcripts and judgments, which took 0.3 s per 1,000
transcripts with two judges.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis import CODE_VERSION, AnalysisInput, SampleBasis, ScenarioInfo, stakes
from valuerank.analysis.judged import RubricBasis
from valuerank.analysis.readings import ReadingsBuilder
from valuerank.db.streaming import stream_rows
from valuerank.db.tables import (
    human_readings,
    judgments,
    rubrics,
    run_scenarios,
    transcripts,
    users,
)
from valuerank.definitions.expansion import expand_with_scores
from valuerank.definitions.presentation import combination_of, phrasing_of, presentation_of
from valuerank.definitions.service import get_definition
from valuerank.errors import NotFoundError
from valuerank.findings.kept import KeptPerEngine
from valuerank.formats.rubric import Rubric
from valuerank.runs.human_readings import human_reader
from valuerank.runs.service import Run

T = TypeVar("T")


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


async def _rubric(conn: AsyncConnection, run: Run) -> tuple[list[str], RubricBasis | None]:
    """The values of the rubric the run's judges read, and which rubric it is (None: none)."""
    if run.rubric_id is None:
        return [], None
    row = (
        await conn.execute(
            select(rubrics.c.name, rubrics.c.version_label, rubrics.c.content).where(
                rubrics.c.org_id == run.org_id, rubrics.c.id == run.rubric_id
            )
        )
    ).first()
    if row is None:
        return [], None
    names = list(Rubric.from_dict(row.content).value_names)
    return names, RubricBasis(str(row.name), str(row.version_label), len(names))


async def sample_basis(conn: AsyncConnection, run: Run) -> SampleBasis:
    """What the run's figures rest on: its scenarios of the definition's. The population is
    the definition's scenario count whenever the definition is known — an imported run's
    too, whatever its config says — else the run's own scenarios for a full run and unknown
    for a sample. A run of fewer scenarios than its definition's whose config records no
    share (a CLI run of a subset) is a sample of that share."""
    # Phrasings and scale orders of one level combination are one scenario of the sample.
    ids = await conn.scalars(
        select(run_scenarios.c.scenario_id).where(
            run_scenarios.c.org_id == run.org_id, run_scenarios.c.run_id == run.id
        )
    )
    scenarios = len({combination_of(sid) for sid in ids})
    percentage = run.config.sample_percentage
    total: int | None = scenarios if percentage >= 100 else None
    if run.definition_id is not None:
        try:
            stored = await get_definition(conn, run.org_id, run.definition_id)
        except NotFoundError:
            stored = None
        if stored is not None:
            total = len(expand_with_scores(stored.definition).scenarios)
    if percentage >= 100 and total and scenarios < total:
        percentage = round(100 * scenarios / total, 1)
    return SampleBasis(percentage=percentage, scenarios=scenarios, total=total)


@dataclass(frozen=True)
class Stakes:
    """What the run's definition says its figures mean (analysis/stakes.py)."""

    dimension_values: dict[str, str]
    scale_labels: dict[int, str]


async def definition_stakes(
    conn: AsyncConnection, run: Run, dimensions: list[str], universe: list[str]
) -> Stakes:
    """Each dimension's value (explicit mapping, else the run's rubric names or the CLI's
    canonical values, else its name) and the template's scale labels."""
    stored = None
    if run.definition_id is not None:
        try:
            stored = await get_definition(conn, run.org_id, run.definition_id)
        except NotFoundError:
            stored = None
    definition = None if stored is None else stored.definition
    explicit = {} if definition is None else stakes.explicit_mapping(definition.extra_front_matter)
    vocabulary = universe or list(stakes.CANONICAL_VALUES)
    return Stakes(
        dimension_values=stakes.dimension_values(dimensions, vocabulary, explicit),
        scale_labels={} if definition is None else stakes.scale_labels(definition.template),
    )


def input_hash(parts: Any) -> str:
    canonical = json.dumps([CODE_VERSION, parts], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class _StreamHash:
    """The sha256 of a sequence of JSON documents, one line each, fed as they are read (so
    the hash of a run never needs the run in memory)."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.put(CODE_VERSION)

    def put(self, part: Any) -> None:
        line = json.dumps(part, sort_keys=True, separators=(",", ":")) + "\n"
        self._sha.update(line.encode())

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def _transcript_key(row: Any, prioritized: list[str], deprioritized: list[str]) -> list[Any]:
    """What of a transcript the analysis reads (its hash part)."""
    return [
        row.id,
        row.model,
        row.scenario_id,
        row.sample_index,
        row.decision_code,
        row.decision_reason,
        prioritized,
        deprioritized,
        isinstance(row.consensus, dict),
    ]


@dataclass
class _Columns:
    """The per-transcript columns `AnalysisInput.build` takes, filled row by row. Repeated
    values (models, scenarios, value lists) are kept once and referenced, so a 100k-row
    run costs a few pointers per row instead of its rows."""

    models: list[str] = field(default_factory=list)
    scenario_ids: list[str] = field(default_factory=list)
    decisions: list[int | None] = field(default_factory=list)
    reasons: list[str | None] = field(default_factory=list)
    prioritized: list[tuple[str, ...]] = field(default_factory=list)
    deprioritized: list[tuple[str, ...]] = field(default_factory=list)
    judged: list[bool] = field(default_factory=list)
    _known: dict[Any, Any] = field(default_factory=dict)

    def _one(self, value: T) -> T:
        known: T = self._known.setdefault(value, value)
        return known

    def add(self, row: Any, prioritized: list[str], deprioritized: list[str]) -> None:
        self.models.append(self._one(row.model))
        self.scenario_ids.append(self._one(row.scenario_id))
        self.decisions.append(row.decision_code)
        self.reasons.append(self._one(row.decision_reason))
        self.prioritized.append(self._one(tuple(prioritized)))
        self.deprioritized.append(self._one(tuple(deprioritized)))
        self.judged.append(isinstance(row.consensus, dict))


async def _human_readings(
    conn: AsyncConnection, run: Run, digest: _StreamHash, readers: ReadingsBuilder
) -> None:
    """People's readings of the run's transcripts (runs/human_readings.py), hashed too."""
    digest.put("human_readings")
    query = (
        select(
            human_readings.c.transcript_id,
            users.c.email,
            human_readings.c.prioritized_values,
            human_readings.c.deprioritized_values,
            transcripts.c.scenario_id,
        )
        .select_from(human_readings.join(transcripts).join(users))
        .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
        .order_by(human_readings.c.transcript_id, users.c.email)
    )
    async for r in stream_rows(conn, query):
        digest.put([r[0], r[1], list(r[2]), list(r[3])])
        reader = human_reader(r.email)
        unit = combination_of(r.scenario_id)
        readers.add(r.transcript_id, unit, reader, list(r[2]), list(r[3]), human=True)


@dataclass(frozen=True)
class Presentations:
    """Run scenario ids as the analysis takes them: the combination each transcript answers
    (its scenario unit), how it was asked, and each combination's description."""

    units: list[str]
    orders: list[int]  # 0 as written, 1 reversed
    phrasings: list[str]  # "" the first phrasing
    scenarios: dict[str, ScenarioInfo]


def by_combination(scenario_ids: list[str], scenarios: dict[str, ScenarioInfo]) -> Presentations:
    """Phrasings and scale orders of one level combination as one scenario unit
    (definitions/presentation.py). A combination takes the description of its as-written
    first phrasing when the run has it, else of its first presentation in id order (every
    presentation has the combination's levels). A run without presentations is unchanged."""
    unit_of = {sid: combination_of(sid) for sid in sorted(set(scenarios) | set(scenario_ids))}
    merged: dict[str, ScenarioInfo] = {}
    for sid, unit in unit_of.items():
        info = scenarios.get(sid)
        if info is not None and (unit not in merged or sid == unit):
            merged[unit] = info
    # Parsed once per id, not per transcript (a run has far fewer ids than transcripts).
    how = {sid: (presentation_of(sid)[1] == "reversed", phrasing_of(sid)) for sid in unit_of}
    return Presentations(
        units=[unit_of[sid] for sid in scenario_ids],
        orders=[int(how[sid][0]) for sid in scenario_ids],
        phrasings=[how[sid][1] for sid in scenario_ids],
        scenarios=merged,
    )


KEPT_RUNS = 16
_kept: KeptPerEngine[LoadedRun] = KeptPerEngine(KEPT_RUNS)


async def load_run(conn: AsyncConnection, run: Run) -> LoadedRun:
    """The run's analysis input and its hash: kept in memory while the run's inputs_version
    is unchanged (see the module docstring), read from the database otherwise."""
    found = await _kept.get(conn, run.org_id, [run.id], None, lambda: read_run(conn, run))
    # The run's own row (its status, its name) may change without changing its inputs.
    return found if found.run == run else dataclasses.replace(found, run=run)


async def read_run(conn: AsyncConnection, run: Run) -> LoadedRun:
    """The run's analysis input and its hash, read from the database (every query scoped by
    the run's org). The transcripts and judgments are streamed: memory grows by a few
    pointers per transcript."""
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
    universe, rubric = await _rubric(conn, run)
    sample = await sample_basis(conn, run)
    scenarios = {
        sid: ScenarioInfo(
            name=str((content or {}).get("subject") or sid),
            levels={str(k): float(v) for k, v in (scores or {}).items() if v is not None},
        )
        for sid, content, scores in scenario_rows
    }
    digest = _StreamHash()
    digest.put([[sid, scenarios[sid].name, scenarios[sid].levels] for sid in scenarios])
    digest.put(universe)
    digest.put(None if rubric is None else [rubric.name, rubric.version_label])
    digest.put(sample.to_dict())
    dims = sorted({d for info in scenarios.values() for d in info.levels})
    meaning = await definition_stakes(conn, run, dims, universe)
    digest.put([meaning.dimension_values, sorted(meaning.scale_labels.items())])
    columns = _Columns()
    readers = ReadingsBuilder(values=tuple(universe))
    digest.put("transcripts")
    transcript_query = (
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
    async for row in stream_rows(conn, transcript_query):
        values = (
            _values(row.consensus, "prioritized_values"),
            _values(row.consensus, "deprioritized_values"),
        )
        columns.add(row, *values)
        if isinstance(row.consensus, dict):
            readers.add_consensus(row.id, combination_of(row.scenario_id), *values)
        digest.put(_transcript_key(row, *values))
    digest.put("judgments")
    judgment_query = (
        select(
            judgments.c.transcript_id,
            judgments.c.judge_model,
            judgments.c.decision,
            judgments.c.prioritized_values,
            judgments.c.deprioritized_values,
            judgments.c.confidence,
            transcripts.c.scenario_id,
        )
        .select_from(judgments.join(transcripts))
        .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
        .order_by(judgments.c.transcript_id, judgments.c.judge_model)
    )
    async for r in stream_rows(conn, judgment_query):
        digest.put([*r[:3], list(r[3]), list(r[4]), float(r[5])])
        unit = combination_of(r.scenario_id)  # clustered by scenario unit, as every figure
        readers.add(r.transcript_id, unit, r.judge_model, list(r[3]), list(r[4]))
    await _human_readings(conn, run, digest, readers)
    asked = by_combination(columns.scenario_ids, scenarios)
    data = AnalysisInput.build(
        models=columns.models,
        scenario_ids=asked.units,
        decisions=columns.decisions,
        reasons=columns.reasons,
        scenarios=asked.scenarios,
        prioritized=columns.prioritized,
        deprioritized=columns.deprioritized,
        judged=columns.judged,
        value_universe=universe,
        sample=sample,
        dimension_values=meaning.dimension_values,
        scale_labels=meaning.scale_labels,
        rubric=rubric,
        readings=readers.build(),
        orders=asked.orders,
        phrasings=asked.phrasings,
    )
    for value in vars(data).values():  # kept and shared between readers: none may write
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return LoadedRun(run=run, data=data, input_hash=digest.hexdigest())
