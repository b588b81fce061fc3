"""Where a run stands in detail: its probe jobs per target model and per provider, and its
failed jobs with the errors that ended them (newest first, keyset pages).

Counted from the queue's jobs, like `runs.progress`: a model of the run with no job yet
(a pending run) is listed with zeros, so a page can draw one row per model from the start.
The failures are the failed jobs plus those maintenance pruned (`pruned_failures`, see
runs/pruned.py), in one (created_at, id) order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from pydantic import computed_field
from pydantic.dataclasses import dataclass
from sqlalchemy import String, cast, func, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import JSONDocument, pruned_failures
from valuerank.findings.keyset import newest_first
from valuerank.providers.model_id import parse_model_id
from valuerank.queue.partitions import JobField, job_counts, job_rows
from valuerank.queue.states import JobStatus
from valuerank.runs.kinds import PROBE
from valuerank.runs.progress import Progress
from valuerank.runs.run import Run
from valuerank.shapes import SHAPE, Timestamp

# A job's error as stored can be long (a provider's whole answer): a list shows this much.
ERROR_CHARS = 2000


@dataclass(frozen=True, config=SHAPE)
class GroupProgress(Progress):
    """The probe jobs of one model (or one provider) of a run: its `key`."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def done(self) -> int:
        return super().done

    @property
    def progress(self) -> Progress:
        return self

    @property
    def key(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, config=SHAPE)
class ModelProgress(GroupProgress):
    model: str

    @property
    def key(self) -> str:
        return self.model


@dataclass(frozen=True, config=SHAPE)
class ProviderProgress(GroupProgress):
    provider: str

    @property
    def key(self) -> str:
        return self.provider


@dataclass(frozen=True, config=SHAPE)
class Breakdown:
    """A run's probe jobs per target model and per provider."""

    run_id: str
    models: list[ModelProgress]
    providers: list[ProviderProgress]


def provider_of(model: str) -> str:
    return parse_model_id(model).provider


async def run_breakdown(conn: AsyncConnection, run: Run) -> Breakdown:
    """The run's probe jobs per model (in the run's order) and per provider (by name)."""
    rows = await conn.execute(
        job_counts(run.id, by=("model", "status"), org_id=run.org_id, kinds=[PROBE])
    )
    # Every model and provider of the run is listed, with or without jobs yet.
    by_model: dict[str, dict[str, int]] = {m: {} for m in run.config.models}
    by_provider: dict[str, dict[str, int]] = {provider_of(m): {} for m in run.config.models}
    for model, status, n in rows:
        key = str(model)
        by_model.setdefault(key, {})[status] = int(n)
        provider = by_provider.setdefault(provider_of(key), {})
        provider[status] = provider.get(status, 0) + int(n)
    return Breakdown(
        run.id,
        [ModelProgress.of(Counter(c), model=m) for m, c in by_model.items()],
        [ProviderProgress.of(Counter(by_provider[p]), provider=p) for p in sorted(by_provider)],
    )


@dataclass(frozen=True, config=SHAPE)
class Failure:
    """A failed job of a run (probe, judge, summarize, finalize) and why it failed."""

    job_id: str
    kind: str
    scenario_id: str | None
    model: str | None
    provider: str | None
    transcript_id: str | None
    attempts: int
    max_attempts: int
    error: str | None
    created_at: Timestamp
    finished_at: Timestamp | None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def job_failure(row: Any) -> Failure:
    """A failed job's row of `jobs` as the listing shows it."""
    payload = row.payload if isinstance(row.payload, dict) else {}
    error = row.last_error
    return Failure(
        job_id=row.id,
        kind=row.kind,
        scenario_id=_text(payload.get("scenario_id")),
        model=row.model or _text(payload.get("judge_model") or payload.get("model")),
        provider=row.provider,
        transcript_id=_text(payload.get("transcript_id")),
        attempts=int(row.attempts),
        max_attempts=int(row.max_attempts),
        error=None if error is None else str(error)[:ERROR_CHARS],
        created_at=row.created_at,
        finished_at=row.finished_at,
    )


# A live failure's columns, in the listing's order (the pruned ones' are kept as listed).
_FAILURE_COLUMNS: tuple[JobField, ...] = (
    "id",
    "kind",
    "payload",
    "model",
    "provider",
    "attempts",
    "max_attempts",
    "last_error",
    "created_at",
    "finished_at",
)


async def run_failures(
    conn: AsyncConnection, run: Run, *, limit: int, after: tuple[str, str] | None = None
) -> list[Failure]:
    """Up to `limit + 1` failed jobs of the run, live or pruned, newest first (the extra one
    says a next page exists), after the job whose (`created_at` ISO-8601, `id`) is `after`."""
    failed = job_rows(
        run.id, _FAILURE_COLUMNS, org_id=run.org_id, statuses=[JobStatus.FAILED]
    ).subquery("failed")
    live = select(
        failed.c.id,
        failed.c.kind,
        failed.c.payload,
        cast(null(), String).label("scenario_id"),
        failed.c.model,
        failed.c.provider,
        cast(null(), String).label("transcript_id"),
        failed.c.attempts,
        failed.c.max_attempts,
        failed.c.last_error,
        failed.c.created_at,
        failed.c.finished_at,
    )
    kept = pruned_failures.c
    pruned = select(
        kept.job_id,
        kept.kind,
        cast(null(), JSONDocument),
        kept.scenario_id,
        kept.model,
        kept.provider,
        kept.transcript_id,
        kept.attempts,
        kept.max_attempts,
        kept.error,
        kept.created_at,
        kept.finished_at,
    ).where(kept.org_id == run.org_id, kept.run_id == run.id)
    # One statement: a failure pruned while the page is read is in one branch or the other.
    both = union_all(live, pruned).subquery("failures")
    rows = await conn.execute(newest_first(select(both), both, conn.dialect.name, limit, after))
    return [_listed(row) for row in rows]


def _listed(row: Any) -> Failure:
    """A row of the listing: a live job's fields come from its payload, a pruned one's as
    they were kept."""
    found = job_failure(row)
    return replace(
        found,
        scenario_id=row.scenario_id or found.scenario_id,
        transcript_id=row.transcript_id or found.transcript_id,
    )


async def count_failures(conn: AsyncConnection, run: Run) -> int:
    """Every failed job of the run, whatever its kind, live or pruned."""
    live = job_counts(run.id, by=(), org_id=run.org_id, statuses=[JobStatus.FAILED])
    pruned = select(func.count()).where(
        pruned_failures.c.org_id == run.org_id, pruned_failures.c.run_id == run.id
    )
    n = await conn.scalar(select(live.scalar_subquery() + pruned.scalar_subquery()))
    return int(n or 0)
