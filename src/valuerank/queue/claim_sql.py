"""The claiming statements: the one statement that turns eligible `queued` jobs into leased
`running` ones, per dialect (built here, run by `claim.py`).

PostgreSQL (composed in `claim_pg.py`; `valuerank queue sql` prints it)::

    WITH RECURSIVE parts AS (<each partition holding queued jobs: a skip scan of an index>),
         cand AS MATERIALIZED (<the best `window` eligible jobs of each partition, by index>),
         c AS MATERIALIZED (SELECT … FROM jobs JOIN cand … ORDER BY <priority, fairness, age>
                            LIMIT n FOR UPDATE OF jj SKIP LOCKED)
    UPDATE jobs SET status='running', lease_token=gen_random_uuid(), … FROM c
    WHERE jobs.id = c.id AND jobs.status IN ('queued') RETURNING jobs.*

SQLite (inside BEGIN IMMEDIATE, which serialises writers)::

    UPDATE jobs SET status='running', lease_token=lower(hex(randomblob(16))), …
    WHERE jobs.id IN (SELECT j.id … WHERE <eligible> ORDER BY … LIMIT n)
      AND jobs.status IN ('queued') RETURNING *

Eligible: `queued`, `run_at <=` the database's now, a handled kind, neither its partition
(paused or cancelled), its provider, its organisation nor the whole queue paused, and no full
cap applies.
Order: priority (high first); then the organisation with the fewest running jobs, then within
it the partition with the fewest; then the oldest `run_at`, creation and id.

On PostgreSQL the statement does not sort every queued job: within one partition the order is
priority then age (the fairness terms are the same for all its jobs), which the index
`ix_jobs_queued_partition` serves, so it reads the first `window` eligible jobs of each
partition (`window` = n + `QueueSettings.claim_window_slack`) and orders only those. The
row locks are taken in that order on the jobs themselves, skipping jobs another claimer
holds, so exactly the claimed jobs are locked. A round that skipped so many that it claimed
fewer than n while candidates were left is tried again at once (new snapshot) with a window
8 times wider, up to CONTENDED_ROUNDS times: only more than ~8 000 jobs of one partition held
at the same instant by other claimers could leave a claim short (it returns what it got).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Float,
    String,
    and_,
    bindparam,
    cast,
    false,
    func,
    not_,
    null,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import BindParameter, ColumnElement, TextClause

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.claim_pg import ClaimShape, statement_text
from valuerank.queue.dialect import compact_sql, db_now, db_now_plus
from valuerank.queue.ratelimit import (
    BucketState,
    exclusion_clauses,
)
from valuerank.queue.settings import QueueSettings
from valuerank.queue.slots import (
    Cap,
    SlotScope,
)
from valuerank.queue.states import JobStatus, status_guard

_DEFAULT_SLACK: int = QueueSettings.model_fields["claim_window_slack"].default

CONTENDED_ROUNDS = 3
"""PostgreSQL: extra rounds a claim tries after one that skipped locked candidates, each with
a window WIDEN times wider."""

WIDEN = 8


def claim_window(n: int, contended: int, slack: int) -> int:
    """Candidates to read per partition for n jobs, after `contended` rounds in a row that
    skipped held ones (`slack`: `QueueSettings.claim_window_slack`)."""
    return n + slack * int(WIDEN ** min(contended, CONTENDED_ROUNDS))


def _paused_keys(scope: str, *, or_cancelled: bool = False) -> Any:
    flag: ColumnElement[bool] = queue_controls.c.paused.is_(True)
    if or_cancelled:
        flag = or_(flag, queue_controls.c.cancel_requested.is_(True))
    return select(queue_controls.c.key).where(queue_controls.c.scope == scope, flag)


def _not_capped(j: Any, full: list[Cap]) -> list[ColumnElement[bool]]:
    """Exclude jobs to which a full cap applies."""
    clauses: list[ColumnElement[bool]] = []
    orgs = [c.org_id for c in full if c.scope is SlotScope.ORG]
    providers = [c.provider for c in full if c.scope is SlotScope.PROVIDER]
    models = [(c.provider or "", c.model) for c in full if c.scope is SlotScope.MODEL]
    if orgs:
        clauses.append(j.c.org_id.not_in(orgs))
    if providers:
        clauses.append(or_(j.c.provider.is_(None), j.c.provider.not_in(providers)))
    if models:
        clauses.append(
            or_(
                j.c.model.is_(None),
                not_(
                    or_(
                        *(
                            and_(func.coalesce(j.c.provider, "") == p, j.c.model == m)
                            for p, m in models
                        )
                    )
                ),
            )
        )
    return clauses


def _candidates(
    dialect: str,
    n: int,
    kinds: list[str] | None,
    full: list[Cap],
    closed: list[BucketState] | None = None,
    buckets: list[BucketState] | None = None,
) -> Any:
    """SQLite: SELECT the ids of the n best eligible jobs (sorting every eligible job)."""
    j = jobs.alias("j")
    running = jobs.alias("r")
    per_org = (
        select(running.c.org_id, func.count().label("n"))
        .where(running.c.status == JobStatus.RUNNING.value)
        .group_by(running.c.org_id)
        .subquery("org_running")
    )
    per_partition = (
        select(running.c.partition, func.count().label("n"))
        .where(running.c.status == JobStatus.RUNNING.value)
        .group_by(running.c.partition)
        .subquery("partition_running")
    )
    where: list[ColumnElement[bool]] = [
        j.c.status == JobStatus.QUEUED.value,
        j.c.run_at <= db_now(dialect),
        j.c.partition.not_in(_paused_keys("partition", or_cancelled=True)),
        or_(j.c.provider.is_(None), j.c.provider.not_in(_paused_keys("provider"))),
        j.c.org_id.not_in(_paused_keys("org")),
        *_not_capped(j, full),
        *exclusion_clauses(j, closed or [], buckets or []),
    ]
    if kinds is not None:
        where.append(j.c.kind.in_(kinds) if kinds else false())
    return (
        select(j.c.id)
        .select_from(
            j.outerjoin(per_org, per_org.c.org_id == j.c.org_id).outerjoin(
                per_partition, per_partition.c.partition == j.c.partition
            )
        )
        .where(*where)
        .order_by(
            j.c.priority.desc(),
            func.coalesce(per_org.c.n, 0),
            func.coalesce(per_partition.c.n, 0),
            j.c.run_at,
            j.c.created_at,
            j.c.id,
        )
        .limit(n)
    )


# -- PostgreSQL ---------------------------------------------------------------------------------
# Composed from named parts in `claim_pg.py`: one statement per shape and (n, kinds, window),
# built once, its other variable parts all bound parameters, so it is cached by SQLAlchemy and
# prepared by psycopg.

PG_CLAIM = ClaimShape.GENERAL
PG_CLAIM_FAST = ClaimShape.FAST
PG_CLAIM_ALONE = ClaimShape.ALONE

_TEXT_ARRAY = ARRAY(String())


@functools.lru_cache(maxsize=256)
def pg_sql(
    shape: ClaimShape, n: int, kinds: tuple[str, ...] | None = None, window: int | None = None
) -> str:
    """The statement of `shape` claiming up to `n` jobs of `kinds` (None: any), on one line.
    The limits and kinds are written into the text, not bound: PostgreSQL then plans the
    prepared statement once (a generic plan as good as a fresh one) instead of planning it
    again at every claim."""
    if window is None:
        window = claim_window(n, 0, _DEFAULT_SLACK)
    return compact_sql(statement_text(shape, n, kinds, window))


@functools.lru_cache(maxsize=256)
def pg_statement(
    shape: ClaimShape, n: int, kinds: tuple[str, ...] | None = None, window: int | None = None
) -> TextClause:
    """`pg_sql` as a SQLAlchemy statement."""
    sql = pg_sql(shape, n, kinds, window)
    arrays = (
        "full_orgs",
        "full_providers",
        "full_model_providers",
        "full_models",
        "closed_providers",
        "closed_models",
        "closed_credentials",
        "bucket_providers",
        "bucket_models",
        "bucket_credentials",
    )
    params: list[BindParameter[Any]] = [
        bindparam(a, type_=_TEXT_ARRAY) for a in arrays if f":{a}" in sql
    ]
    params += [
        bindparam("lease_seconds", type_=Float()),
        bindparam("worker_id", type_=String()),
    ]
    return text(sql).bindparams(*params)


def pg_params(
    *,
    worker_id: str,
    lease_seconds: float,
    limited: bool = False,
    full: list[Cap] | None = None,
    closed: list[BucketState] | None = None,
    buckets: list[BucketState] | None = None,
) -> dict[str, Any]:
    full, closed, buckets = full or [], closed or [], buckets or []
    models = [c for c in full if c.scope is SlotScope.MODEL]
    providers = [c.provider for c in full if c.scope is SlotScope.PROVIDER and c.provider]
    params: dict[str, Any] = {"worker_id": worker_id, "lease_seconds": float(lease_seconds)}
    if limited:  # the statement has the exclusions by caps and buckets
        params |= {
            "full_orgs": [c.org_id for c in full if c.scope is SlotScope.ORG and c.org_id],
            "full_providers": providers,
            "full_model_providers": [c.provider or "" for c in models],
            "full_models": [c.model or "" for c in models],
            "closed_providers": [b.provider for b in closed],
            "closed_models": [b.model for b in closed],
            "closed_credentials": [b.credential for b in closed],
            "bucket_providers": [b.provider for b in buckets],
            "bucket_models": [b.model for b in buckets],
            "bucket_credentials": [b.credential for b in buckets],
        }
    return params


def _lease_token(dialect: str) -> ColumnElement[str]:
    if dialect == "postgresql":
        return cast(func.gen_random_uuid(), String)
    return func.lower(func.hex(func.randomblob(16)))


def claim_statement(
    dialect: str,
    *,
    n: int,
    worker_id: str,
    lease_seconds: float,
    kinds: list[str] | None = None,
    full: list[Cap] | None = None,
    closed: list[BucketState] | None = None,
    buckets: list[BucketState] | None = None,
    window: int | None = None,
) -> Any:
    """The single claiming statement for `dialect` (exposed for EXPLAIN and tests).

    `closed` rate buckets (among all `buckets`) leave their jobs out. On PostgreSQL the
    statement's parameters are bound into it; it reads `window` candidates per partition
    (default n + the default slack) and also returns `considered`, how many it read."""
    if dialect == "postgresql":
        params = pg_params(
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            limited=True,
            full=full,
            closed=closed,
            buckets=buckets,
        )
        kinds_key = None if kinds is None else tuple(kinds)
        return pg_statement(PG_CLAIM, n, kinds_key, window).params(**params)
    candidates = _candidates(dialect, n, kinds, full or [], closed, buckets)
    values = {
        "status": JobStatus.RUNNING.value,
        "lease_token": _lease_token(dialect),
        "lease_expires_at": db_now_plus(dialect, lease_seconds),
        "locked_by": worker_id,
        "attempts": jobs.c.attempts + 1,
        "started_at": db_now(dialect),
        "slot_keys": null(),
    }
    guard = status_guard(jobs, JobStatus.RUNNING, sources=[JobStatus.QUEUED])
    return (
        update(jobs)
        .where(jobs.c.id.in_(candidates.scalar_subquery()), guard)
        .values(values)
        .returning(*jobs.c)
    )


@functools.lru_cache(maxsize=256)
def plain_claim_statement(
    dialect: str,
    n: int,
    worker_id: str,
    lease_seconds: float,
    kinds: tuple[str, ...] | None,
    window: int | None = None,
) -> Any:
    """`claim_statement` with no cap full and no rate bucket, cached per arguments."""
    return claim_statement(
        dialect,
        n=n,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        kinds=None if kinds is None else list(kinds),
        window=window,
    )
