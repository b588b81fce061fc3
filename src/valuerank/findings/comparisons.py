"""Comparisons of two runs: a `comparisons` row, computed by the `analyze:compare` job (or
at once by the CLI), cached by the hash of both runs' inputs and the options.

`request_comparison` writes the row (`queued`) and, in the same transaction, the job that
computes it; `execute_comparison` is the job's work; `compare_runs` is the CLI's path (reuse a
completed comparison of the same inputs, else compute now). Every read is scoped by org.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field
from pydantic.dataclasses import dataclass
from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis import CODE_VERSION
from valuerank.db.engine import Database
from valuerank.db.tables import comparisons
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.findings.keyset import newest_first
from valuerank.findings.loading import LoadedRun, input_hash, load_run
from valuerank.queue.ids import new_id
from valuerank.runs.service import Run, get_run
from valuerank.shapes import SHAPE, Timestamp

if TYPE_CHECKING:
    from valuerank.analysis.intervals import Correction

Status = Literal["queued", "completed", "failed"]
CORRECTIONS: tuple[Correction, ...] = ("fdr_bh", "holm")


@dataclass(frozen=True, config=SHAPE)
class ComparisonItem:
    """A comparison as a run's list shows it (an answer shape: the API writes it,
    /openapi.json documents it); `Comparison` adds the result."""

    id: str
    org_id: Annotated[str, Field(exclude=True)]
    baseline_run_id: str
    comparison_run_id: str
    status: Annotated[str, Field(description="queued, completed or failed.")]
    options: dict[str, Any]
    input_hash: str | None
    code_version: Annotated[str | None, Field(exclude=True)]
    error: str | None
    created_at: Timestamp
    finished_at: Timestamp | None


@dataclass(frozen=True, config=SHAPE)
class Comparison(ComparisonItem):
    """A comparison with its result (the API's and `valuerank compare --json`'s shape)."""

    result: Annotated[
        dict[str, Any] | None,
        Field(description="Deltas, tests and most divergent scenarios; null until completed."),
    ]


_ITEM_COLUMNS = [c for c in comparisons.c if c.name != "result"]


def _item_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "org_id": row.org_id,
        "baseline_run_id": row.baseline_run_id,
        "comparison_run_id": row.comparison_run_id,
        "status": row.status,
        "options": dict(row.options),
        "input_hash": row.input_hash,
        "code_version": row.code_version,
        "error": row.error,
        "created_at": row.created_at,
        "finished_at": row.finished_at,
    }


def _item(row: Any) -> ComparisonItem:
    return ComparisonItem(**_item_fields(row))


def _comparison(row: Any) -> Comparison:
    return Comparison(**_item_fields(row), result=row.result)


def options_for(correction: str) -> dict[str, Any]:
    if correction not in CORRECTIONS:
        raise InvalidInputError(
            f"unknown correction {correction!r}", hint=f"use one of {', '.join(CORRECTIONS)}"
        )
    return {"correction": correction}


async def get_comparison(conn: AsyncConnection, org_id: str, comparison_id: str) -> Comparison:
    row = (
        await conn.execute(
            select(comparisons).where(
                comparisons.c.org_id == org_id, comparisons.c.id == comparison_id
            )
        )
    ).first()
    if row is None:
        raise NotFoundError(
            f"no comparison with id {comparison_id!r}",
            hint="list a run's comparisons with GET /api/runs/{id}/comparisons",
        )
    return _comparison(row)


async def list_comparisons(
    conn: AsyncConnection,
    org_id: str,
    run_id: str,
    *,
    limit: int,
    after: tuple[str, str] | None = None,
) -> list[ComparisonItem]:
    """Comparisons involving the run, newest first; `limit + 1` rows for a keyset page
    (without their results, which a list does not show)."""
    query = select(*_ITEM_COLUMNS).where(
        comparisons.c.org_id == org_id,
        or_(comparisons.c.baseline_run_id == run_id, comparisons.c.comparison_run_id == run_id),
    )
    rows = await conn.execute(newest_first(query, comparisons, conn.dialect.name, limit, after))
    return [_item(r) for r in rows]


async def _pair(conn: AsyncConnection, org_id: str, baseline: str, other: str) -> tuple[Run, Run]:
    a = await get_run(conn, org_id, baseline)
    b = await get_run(conn, org_id, other)
    if a.id == b.id:
        raise InvalidInputError(
            "a run compared with itself shows nothing", hint="give two different runs"
        )
    return a, b


async def create_comparison(
    conn: AsyncConnection, org_id: str, baseline_ref: str, comparison_ref: str, correction: str
) -> Comparison:
    """A `queued` comparison row of two of the organisation's runs."""
    options = options_for(correction)
    a, b = await _pair(conn, org_id, baseline_ref, comparison_ref)
    comparison_id = new_id()
    await conn.execute(
        comparisons.insert().values(
            id=comparison_id,
            org_id=org_id,
            baseline_run_id=a.id,
            comparison_run_id=b.id,
            status="queued",
            options=options,
        )
    )
    return await get_comparison(conn, org_id, comparison_id)


def pair_hash(a: LoadedRun, b: LoadedRun, options: dict[str, Any]) -> str:
    return input_hash({"baseline": a.input_hash, "comparison": b.input_hash, "options": options})


def compute(a: LoadedRun, b: LoadedRun, options: dict[str, Any]) -> dict[str, Any]:
    from valuerank.analysis import compare  # the statistics, only to compute: see `_read`

    result = compare(a.data, b.data, correction=options.get("correction", "fdr_bh"))
    return {"baselineRunId": a.run.id, "comparisonRunId": b.run.id, **result}


async def _finish(
    db: Database,
    org_id: str,
    comparison_id: str,
    *,
    digest: str | None,
    result: dict[str, Any] | None,
    error: str | None,
) -> None:
    async with db.transaction(immediate=True) as conn:
        await conn.execute(
            update(comparisons)
            .where(comparisons.c.org_id == org_id, comparisons.c.id == comparison_id)
            .values(
                status="completed" if error is None else "failed",
                input_hash=digest,
                code_version=CODE_VERSION,
                result=result,
                error=error,
                finished_at=func.now(),
            )
        )


async def _load_pair(
    db: Database, org_id: str, baseline: str, other: str
) -> tuple[LoadedRun, LoadedRun]:
    async with db.transaction() as conn:
        a, b = await _pair(conn, org_id, baseline, other)
        return await load_run(conn, a), await load_run(conn, b)


async def execute_comparison(db: Database, org_id: str, comparison_id: str) -> Comparison:
    """Compute a stored comparison (the `analyze:compare` job)."""
    async with db.transaction() as conn:
        row = await get_comparison(conn, org_id, comparison_id)
    a, b = await _load_pair(db, org_id, row.baseline_run_id, row.comparison_run_id)
    digest = pair_hash(a, b, row.options)
    try:
        result = await asyncio.to_thread(compute, a, b, row.options)
    except (ValueError, ArithmeticError) as exc:
        await _finish(db, org_id, row.id, digest=digest, result=None, error=str(exc))
        raise
    await _finish(db, org_id, row.id, digest=digest, result=result, error=None)
    async with db.transaction() as conn:
        return await get_comparison(conn, org_id, row.id)


async def find_completed(
    conn: AsyncConnection, org_id: str, baseline_id: str, other_id: str, digest: str
) -> Comparison | None:
    row = (
        await conn.execute(
            select(comparisons)
            .where(
                comparisons.c.org_id == org_id,
                comparisons.c.baseline_run_id == baseline_id,
                comparisons.c.comparison_run_id == other_id,
                comparisons.c.status == "completed",
                comparisons.c.input_hash == digest,
                comparisons.c.code_version == CODE_VERSION,
            )
            .order_by(comparisons.c.created_at.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else _comparison(row)


@dataclass(frozen=True)
class ComparisonOutcome:
    comparison: Comparison
    cached: bool


async def compare_runs(
    db: Database,
    org_id: str,
    baseline_ref: str,
    comparison_ref: str,
    *,
    correction: str = "fdr_bh",
    force: bool = False,
) -> ComparisonOutcome:
    """Compare now (the CLI, experiment reports): a completed comparison of the same inputs
    is reused unless `force`."""
    options = options_for(correction)
    a, b = await _load_pair(db, org_id, baseline_ref, comparison_ref)
    digest = pair_hash(a, b, options)
    if not force:
        async with db.transaction() as conn:
            found = await find_completed(conn, org_id, a.run.id, b.run.id, digest)
        if found is not None:
            return ComparisonOutcome(found, cached=True)
    result = await asyncio.to_thread(compute, a, b, options)
    async with db.transaction(immediate=True) as conn:
        created = await create_comparison(conn, org_id, a.run.id, b.run.id, correction)
    await _finish(db, org_id, created.id, digest=digest, result=result, error=None)
    async with db.transaction() as conn:
        return ComparisonOutcome(await get_comparison(conn, org_id, created.id), cached=False)
