"""A run's analyses: computed once, stored in `analyses`, served while the inputs match.

`run_analysis` is what the CLI, the API and the `analyze:*` jobs call. A stored row records
the run's `inputs_version` read before its inputs were (every write that changes them bumps
it, runs/records.bump_inputs): while the run is still at that version and the code version
matches, the row's input hash is the current one and the rows are served without reading a
transcript. Otherwise the run's inputs are loaded (findings/loading.py), their hash compared
with the stored rows, and each row either served (`cached`) or computed — in a thread,
outside any transaction — and replaced. `force` recomputes regardless. The deep analysis sits
under `analysis["deep"]`, with the narrative a model wrote about it when one did.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis.version import CODE_VERSION
from valuerank.db.engine import Database
from valuerank.db.tables import analyses, runs
from valuerank.queue.dialect import iso, upsert
from valuerank.queue.ids import new_id
from valuerank.runs.service import Run, get_run

if TYPE_CHECKING:
    from valuerank.findings.loading import LoadedRun

Kind = Literal["basic", "deep"]
BASIC: Kind = "basic"
DEEP: Kind = "deep"


@dataclass(frozen=True)
class StoredAnalysis:
    run_id: str
    kind: str
    input_hash: str
    code_version: str
    result: dict[str, Any]
    narrative: str | None
    created_at: datetime
    duration_ms: float
    inputs_version: int | None = None

    def fresh_for(self, input_hash: str | None) -> bool:
        return self.input_hash == input_hash and self.code_version == CODE_VERSION

    def current_at(self, inputs_version: int) -> bool:
        """Computed from the inputs the run has now (no write since): its hash is current."""
        return self.inputs_version == inputs_version and self.code_version == CODE_VERSION


async def stored_analysis(
    conn: AsyncConnection, org_id: str, run_id: str, kind: Kind
) -> StoredAnalysis | None:
    row = (
        await conn.execute(
            select(analyses).where(
                analyses.c.org_id == org_id, analyses.c.run_id == run_id, analyses.c.kind == kind
            )
        )
    ).first()
    if row is None:
        return None
    return StoredAnalysis(
        run_id=row.run_id,
        kind=row.kind,
        input_hash=row.input_hash,
        code_version=row.code_version,
        result=row.result,
        narrative=row.narrative,
        created_at=row.created_at,
        duration_ms=float(row.duration_ms),
        inputs_version=row.inputs_version,
    )


async def store_analysis(
    conn: AsyncConnection,
    org_id: str,
    run_id: str,
    kind: Kind,
    input_hash: str,
    result: dict[str, Any],
    inputs_version: int | None = None,
) -> None:
    """Replace the run's analysis of `kind` (a new result has no narrative yet).
    `inputs_version` must be the run's version read BEFORE the inputs were: a write that
    lands in between then leaves the row behind the run's version, never marked current."""
    values = {
        "input_hash": input_hash,
        "inputs_version": inputs_version,
        "code_version": CODE_VERSION,
        "result": result,
        "narrative": None,
        "duration_ms": float(result.get("durationMs") or 0.0),
    }
    statement = (
        upsert(conn)(analyses)
        .values(id=new_id(), org_id=org_id, run_id=run_id, kind=kind, **values)
        .on_conflict_do_update(index_elements=[analyses.c.run_id, analyses.c.kind], set_=values)
    )
    await conn.execute(statement)


async def set_narrative(
    conn: AsyncConnection, org_id: str, run_id: str, input_hash: str, narrative: str
) -> bool:
    """Attach a narrative to the deep analysis it was written about (still the stored one)."""
    result = await conn.execute(
        update(analyses)
        .where(
            analyses.c.org_id == org_id,
            analyses.c.run_id == run_id,
            analyses.c.kind == DEEP,
            analyses.c.input_hash == input_hash,
        )
        .values(narrative=narrative)
    )
    return bool(result.rowcount)


@dataclass
class Timings:
    """Where a read's time went (what the API's `?debug=true` shows): milliseconds in the
    database (reading inputs and cached results, storing new ones) and computing."""

    query_ms: float = 0.0
    analysis_ms: float = 0.0

    @contextmanager
    def measure(self, kind: Literal["query", "analysis"]) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = (time.perf_counter() - started) * 1000
            if kind == "query":
                self.query_ms += spent
            else:
                self.analysis_ms += spent


@dataclass
class AnalysisOutcome:
    """An analysis as served: the basic result, `deep` when asked, and whether each came
    from the cache (`deep_cached` None when the deep one was not asked for).
    `current_deep` is the stored deep result when it matches the run's inputs — also when
    it was not asked for (the CLI draws its PCA scatter from it)."""

    run_id: str
    input_hash: str
    analysis: dict[str, Any]
    cached: bool
    deep_cached: bool | None = None
    computed: list[str] = field(default_factory=list)
    current_deep: dict[str, Any] | None = None
    timings: Timings = field(default_factory=Timings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": True,
            "cached": self.cached,
            "deep_cached": self.deep_cached,
            "analysis": self.analysis,
        }

    def debug_dict(self) -> dict[str, Any]:
        """The read's timings: the API's `debug` (see api/schemas/findings.AnalysisTimings)."""
        return {
            "query_time_ms": round(self.timings.query_ms, 3),
            "analysis_time_ms": round(self.timings.analysis_ms, 3),
            "cache_hit": self.cached,
            "computed": list(self.computed),
        }


@dataclass(frozen=True)
class _Read:
    """What a read found: the run, its inputs version (read before anything else), the
    stored rows, the current input hash and the loaded inputs (None: not needed)."""

    run: Run
    version: int
    stored: dict[Kind, StoredAnalysis | None]
    input_hash: str
    loaded: LoadedRun | None

    def fresh(self, kind: Kind) -> StoredAnalysis | None:
        row = self.stored[kind]
        return row if row is not None and row.fresh_for(self.input_hash) else None

    def inputs(self) -> LoadedRun:
        assert self.loaded is not None, "loaded whenever a kind is to be computed"
        return self.loaded


async def _read(
    db: Database, org_id: str, ref: str, needed: tuple[Kind, ...], *, force: bool = False
) -> _Read:
    """The run's stored analyses; its inputs loaded only when no stored row is current (to
    learn the input hash) or a `needed` kind must be computed."""
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, ref)
        version = int(
            await conn.scalar(select(runs.c.inputs_version).where(runs.c.id == run.id)) or 0
        )
        stored = {kind: await stored_analysis(conn, org_id, run.id, kind) for kind in (BASIC, DEEP)}
        current = [row for row in stored.values() if row is not None and row.current_at(version)]
        known = current[0].input_hash if current else None
        stale = [k for k in needed if (row := stored[k]) is None or not row.fresh_for(known)]
        if known is not None and not stale and not force:
            return _Read(run, version, stored, known, None)
        # Loading the inputs (and computing from them) needs the statistics stack, seconds
        # to import: a cached answer, above, never loads it.
        from valuerank.findings.loading import load_run

        loaded = await load_run(conn, run)
    read = _Read(run, version, stored, loaded.input_hash, loaded)
    await _label(db, read)
    return read


async def _label(db: Database, read: _Read) -> None:
    """Record the version on the rows the load found current (stored before 0020, or before
    a write that changed nothing they read), so the next read of them loads nothing."""
    behind = [
        kind
        for kind, row in read.stored.items()
        if row is not None and row.fresh_for(read.input_hash) and row.inputs_version != read.version
    ]
    if not behind:
        return
    async with db.transaction(immediate=True) as conn:
        await conn.execute(
            update(analyses)
            .where(
                analyses.c.run_id == read.run.id,
                analyses.c.kind.in_(behind),
                analyses.c.input_hash == read.input_hash,
                or_(
                    analyses.c.inputs_version.is_(None),
                    analyses.c.inputs_version < read.version,
                ),
            )
            .values(inputs_version=read.version)
        )


async def _store(db: Database, read: _Read, kind: Kind, result: dict[str, Any]) -> None:
    async with db.transaction(immediate=True) as conn:
        await store_analysis(
            conn, read.run.org_id, read.run.id, kind, read.input_hash, result, read.version
        )


def _with_meta(result: dict[str, Any], read: _Read, cached: bool) -> dict[str, Any]:
    meta = {**result.get("meta", {}), "runId": read.run.id, "inputHash": read.input_hash}
    meta["cached"] = cached
    return {**result, "meta": meta}


async def run_analysis(
    db: Database, org_id: str, ref: str, *, deep: bool = False, force: bool = False
) -> AnalysisOutcome:
    """The run's basic analysis (and the deep one when `deep`), from the cache when fresh."""
    timings = Timings()

    with timings.measure("query"):
        read = await _read(db, org_id, ref, (BASIC, DEEP) if deep else (BASIC,), force=force)
    outcome = AnalysisOutcome(read.run.id, read.input_hash, {}, cached=False, timings=timings)
    basic_row = read.fresh(BASIC)
    if basic_row is not None and not force:
        basic = basic_row.result
        outcome.cached = True
    else:
        from valuerank.analysis import analyze_basic  # only to compute: see `_read`

        with timings.measure("analysis"):
            basic = await asyncio.to_thread(analyze_basic, read.inputs().data)
        with timings.measure("query"):
            await _store(db, read, BASIC, basic)
        outcome.computed.append(BASIC)
    outcome.analysis = _with_meta(basic, read, outcome.cached)
    deep_row = read.fresh(DEEP)
    if deep_row is not None:
        outcome.current_deep = {**deep_row.result, "narrative": deep_row.narrative}
    if deep:
        if outcome.current_deep is not None and not force:
            outcome.deep_cached = True
        else:
            from valuerank.analysis import analyze_deep

            with timings.measure("analysis"):
                result = await asyncio.to_thread(analyze_deep, read.inputs().data, basic=basic)
            with timings.measure("query"):
                await _store(db, read, DEEP, result)
            outcome.current_deep = {**result, "narrative": None}
            outcome.deep_cached = False
            outcome.computed.append(DEEP)
        outcome.analysis["deep"] = outcome.current_deep
        outcome.analysis["meta"]["deepCached"] = outcome.deep_cached
    return outcome


@dataclass(frozen=True)
class DeepState:
    """The stored deep analysis of a run and whether it matches the run's inputs now."""

    run_id: str
    input_hash: str
    stored: StoredAnalysis | None

    @property
    def fresh(self) -> bool:
        return self.stored is not None and self.stored.fresh_for(self.input_hash)

    def result(self) -> dict[str, Any] | None:
        if self.stored is None:
            return None
        return {**self.stored.result, "narrative": self.stored.narrative}

    def summary(self) -> dict[str, Any]:
        return {
            "fresh": self.fresh,
            "computedAt": None if self.stored is None else iso(self.stored.created_at),
        }


async def deep_state(
    db: Database, org_id: str, ref: str, *, timings: Timings | None = None
) -> DeepState:
    """The run's stored deep analysis and whether it is current (the time its reads took
    added to `timings`)."""
    with (timings or Timings()).measure("query"):
        read = await _read(db, org_id, ref, ())
    return DeepState(read.run.id, read.input_hash, read.stored[DEEP])
