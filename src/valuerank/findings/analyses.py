"""A run's analyses: computed once, stored in `analyses`, served while the inputs match.

`run_analysis` is what the CLI, the API and the `analyze:*` jobs call. It loads the run's
inputs (findings/loading.py), compares their hash and the code version with the stored row
of that kind, and either serves the row (`cached`) or computes the analysis — in a thread,
outside any transaction — and replaces the row. `force` recomputes regardless. The deep
analysis sits under `analysis["deep"]`, with the narrative a model wrote about it when one did.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis import CODE_VERSION, analyze_basic, analyze_deep
from valuerank.db.engine import Database
from valuerank.db.tables import analyses
from valuerank.findings.loading import LoadedRun, load_run
from valuerank.queue.dialect import iso, upsert
from valuerank.queue.ids import new_id
from valuerank.runs.service import get_run

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

    def fresh_for(self, input_hash: str) -> bool:
        return self.input_hash == input_hash and self.code_version == CODE_VERSION


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
    )


async def store_analysis(
    conn: AsyncConnection,
    org_id: str,
    run_id: str,
    kind: Kind,
    input_hash: str,
    result: dict[str, Any],
) -> None:
    """Replace the run's analysis of `kind` (a new result has no narrative yet)."""
    values = {
        "input_hash": input_hash,
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


async def _load(db: Database, org_id: str, ref: str) -> tuple[LoadedRun, dict[Kind, Any]]:
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, ref)
        loaded = await load_run(conn, run)
        stored = {kind: await stored_analysis(conn, org_id, run.id, kind) for kind in (BASIC, DEEP)}
    return loaded, stored


async def _store(db: Database, loaded: LoadedRun, kind: Kind, result: dict[str, Any]) -> None:
    async with db.transaction(immediate=True) as conn:
        await store_analysis(
            conn, loaded.run.org_id, loaded.run.id, kind, loaded.input_hash, result
        )


def _with_meta(result: dict[str, Any], loaded: LoadedRun, cached: bool) -> dict[str, Any]:
    meta = {**result.get("meta", {}), "runId": loaded.run.id, "inputHash": loaded.input_hash}
    meta["cached"] = cached
    return {**result, "meta": meta}


async def run_analysis(
    db: Database, org_id: str, ref: str, *, deep: bool = False, force: bool = False
) -> AnalysisOutcome:
    """The run's basic analysis (and the deep one when `deep`), from the cache when fresh."""
    timings = Timings()
    with timings.measure("query"):
        loaded, stored = await _load(db, org_id, ref)
    outcome = AnalysisOutcome(loaded.run.id, loaded.input_hash, {}, cached=False, timings=timings)
    basic_row = stored[BASIC]
    if basic_row is not None and basic_row.fresh_for(loaded.input_hash) and not force:
        basic = basic_row.result
        outcome.cached = True
    else:
        with timings.measure("analysis"):
            basic = await asyncio.to_thread(analyze_basic, loaded.data)
        with timings.measure("query"):
            await _store(db, loaded, BASIC, basic)
        outcome.computed.append(BASIC)
    outcome.analysis = _with_meta(basic, loaded, outcome.cached)
    deep_row = stored[DEEP]
    if deep_row is not None and deep_row.fresh_for(loaded.input_hash):
        outcome.current_deep = {**deep_row.result, "narrative": deep_row.narrative}
    if deep:
        if outcome.current_deep is not None and not force:
            outcome.deep_cached = True
        else:
            with timings.measure("analysis"):
                result = await asyncio.to_thread(analyze_deep, loaded.data, basic=basic)
            with timings.measure("query"):
                await _store(db, loaded, DEEP, result)
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
        loaded, stored = await _load(db, org_id, ref)
    return DeepState(loaded.run.id, loaded.input_hash, stored[DEEP])
