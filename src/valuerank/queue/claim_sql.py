"""The claiming statements: the one statement that turns eligible `queued` jobs into leased
`running` ones, per dialect (built here, run by `claim.py`).

PostgreSQL (see `_PG_CANDIDATES_TEMPLATE`)::

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
from valuerank.queue.dialect import compact_sql, db_now, db_now_plus
from valuerank.queue.events import (
    NOTIFY_CHANNEL,
)
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
# Written as SQL text: one statement per shape, built once, its variable parts all bound
# parameters (arrays for the excluded organisations, providers, models and rate buckets), so
# it is cached by SQLAlchemy and prepared by psycopg.

_INDEX_ORDER = "j.partition, j.priority DESC, j.run_at, j.created_at, j.id"

# Placeholders: `@GATE@` the condition the skip scan starts under (the fast path's guard),
# `@KINDS@` the kinds the claimer runs (literals), `@LIMITED@` the exclusions by full caps and
# closed rate buckets (bound arrays; the fast path has none), `@N@` and `@WINDOW@` the limits.
_PG_LIMITED = """AND (cardinality(:full_orgs) = 0 OR j.org_id <> ALL(:full_orgs))
          AND (j.provider IS NULL OR j.provider <> ALL(:full_providers))
          AND (j.model IS NULL OR cardinality(:full_model_providers) = 0 OR NOT EXISTS (
                SELECT 1 FROM unnest(:full_model_providers, :full_models) AS f(p, m)
                WHERE f.p = coalesce(j.provider, '') AND f.m = j.model))
          AND (cardinality(:closed_providers) = 0 OR NOT EXISTS (
                SELECT 1 FROM unnest(:closed_providers, :closed_models, :closed_credentials)
                    AS cb(p, m, c)
                WHERE cb.p = coalesce(j.provider, '')
                  AND cb.c = coalesce(j.payload ->> 'credential', '')
                  AND CASE WHEN cb.m <> '' THEN cb.m = coalesce(j.model, '')
                      ELSE NOT EXISTS (
                          SELECT 1 FROM unnest(:bucket_providers, :bucket_models,
                                               :bucket_credentials) AS b(p, m, c)
                          WHERE b.p = cb.p AND b.c = cb.c AND b.m <> ''
                            AND b.m = coalesce(j.model, ''))
                      END))"""

# The fast path's rate-limit clause: it runs only while every bucket is limitless (a bucket
# a 429 made, `ratelimit.learned_bucket`), so a job is held back only when the bucket it
# resolves to (its model's, else its provider's; same credential) is blocked now.
_PG_BLOCKED = """AND (j.provider IS NULL OR NOT EXISTS (
                SELECT 1 FROM rate_buckets b
                WHERE b.provider = j.provider AND b.blocked_until > now()
                  AND b.credential = coalesce(j.payload ->> 'credential', '')
                  AND (b.model = coalesce(j.model, '') OR (b.model = '' AND NOT EXISTS (
                        SELECT 1 FROM rate_buckets m
                        WHERE m.provider = b.provider AND m.credential = b.credential
                          AND m.model <> '' AND m.model = coalesce(j.model, ''))))))"""

# A bucket that limits something (the fast path stands back while one exists).
_PG_LIMITING_BUCKET = """EXISTS (SELECT 1 FROM rate_buckets b WHERE b.rpm_limit IS NOT NULL
                   OR b.tpm_limit IS NOT NULL OR b.min_interval_ms > 0
                   OR b.concurrency_limit IS NOT NULL)"""

_PG_CANDIDATES_TEMPLATE = f"""
parts(p) AS (
    (SELECT j.partition FROM jobs j WHERE j.status = 'queued' AND @GATE@
     ORDER BY {_INDEX_ORDER} LIMIT 1)
    UNION ALL
    SELECT (SELECT j.partition FROM jobs j WHERE j.status = 'queued' AND j.partition > parts.p
            ORDER BY {_INDEX_ORDER} LIMIT 1)
    FROM parts WHERE parts.p IS NOT NULL
),
running AS (
    SELECT r.org_id, r.partition, count(*) AS n FROM jobs r
    WHERE r.status = 'running' GROUP BY r.org_id, r.partition
),
cand AS MATERIALIZED (
    SELECT j.id FROM parts CROSS JOIN LATERAL (
        SELECT j.id FROM jobs j
        WHERE j.partition = parts.p AND j.status = 'queued' AND j.run_at <= now()
          @KINDS@
          AND (j.provider IS NULL OR j.provider NOT IN (
                SELECT q.key FROM queue_controls q WHERE q.scope = 'provider' AND q.paused))
          AND j.org_id NOT IN (
                SELECT q.key FROM queue_controls q WHERE q.scope = 'org' AND q.paused)
          @LIMITED@
        ORDER BY j.priority DESC, j.run_at, j.created_at, j.id
        LIMIT @WINDOW@
    ) j
    WHERE parts.p IS NOT NULL AND parts.p NOT IN (
        SELECT q.key FROM queue_controls q
        WHERE q.scope = 'partition' AND (q.paused OR q.cancel_requested))
),
c AS MATERIALIZED (
    SELECT jj.id FROM jobs jj
    WHERE jj.id = ANY(ARRAY(SELECT cand.id FROM cand)) AND coalesce(jj.status, '') = 'queued'
    ORDER BY jj.priority DESC,
        coalesce((SELECT sum(o.n) FROM running o WHERE o.org_id = jj.org_id), 0),
        coalesce((SELECT sum(r.n) FROM running r WHERE r.partition = jj.partition), 0),
        jj.run_at, jj.created_at, jj.id
    LIMIT @N@
    FOR UPDATE OF jj SKIP LOCKED
)"""

_PG_CLAIM_SET = """
    UPDATE jobs SET status = 'running', lease_token = CAST(gen_random_uuid() AS text),
        lease_expires_at = now() + :lease_seconds * interval '1 second',
        locked_by = :worker_id, attempts = jobs.attempts + 1, started_at = now(),
        slot_keys = NULL
    WHERE jobs.id = ANY(ARRAY(SELECT c.id FROM c)) AND coalesce(jobs.status, '') IN ('queued')
    RETURNING jobs.*"""

PG_CLAIM = (
    "WITH RECURSIVE"
    + _PG_CANDIDATES_TEMPLATE.replace("@GATE@", "true").replace("@LIMITED@", _PG_LIMITED)
    + """,
claimed AS ("""
    + _PG_CLAIM_SET
    + """
)
SELECT (SELECT count(*) FROM cand) AS considered, cl.*
FROM (SELECT 1) AS one LEFT JOIN claimed cl ON true"""
)

_COUNTS = "jobs_queued, jobs_running, jobs_succeeded, jobs_failed, jobs_cancelled"

PG_CLAIM_FAST = (
    """WITH RECURSIVE
guard AS MATERIALIZED (
    SELECT EXISTS (SELECT 1 FROM queue_controls q
                   WHERE q.scope = 'global' AND q.key = '*' AND q.paused) AS paused,
           EXISTS (SELECT 1 FROM queue_slots) OR @LIMITING@ AS limited,
           @HOOKED@ AS hooked
),"""
    + _PG_CANDIDATES_TEMPLATE.replace(
        "@GATE@", "NOT (SELECT g.paused OR g.limited OR g.hooked FROM guard g)"
    ).replace("@LIMITED@", _PG_BLOCKED)
    + """,
claimed AS ("""
    + _PG_CLAIM_SET
    + f"""
),
delta AS (
    SELECT cl.partition, min(cl.org_id) AS org_id, count(*) AS n FROM claimed cl
    GROUP BY cl.partition
),
seq AS (
    INSERT INTO queue_controls AS q (scope, key, org_id, last_seq, jobs_queued, jobs_running)
    SELECT 'partition', d.partition, d.org_id, d.n, -d.n, d.n FROM delta d ORDER BY d.partition
    ON CONFLICT (scope, key) DO UPDATE SET last_seq = q.last_seq + excluded.last_seq,
        jobs_queued = q.jobs_queued + excluded.jobs_queued,
        jobs_running = q.jobs_running + excluded.jobs_running
    RETURNING q.key, q.last_seq, {_COUNTS},
        EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = q.org_id AND w.active) AS hooked
),
numbered AS (
    SELECT cl.id, s.last_seq - d.n + row_number() OVER (PARTITION BY cl.partition ORDER BY cl.id)
        AS seq
    FROM claimed cl JOIN delta d ON d.partition = cl.partition JOIN seq s ON s.key = cl.partition
),
ev AS (
    INSERT INTO events (partition, seq, org_id, type, data, created_at)
    SELECT cl.partition, n.seq, cl.org_id, 'task_started',
        jsonb_build_object('job_id', cl.id, 'kind', cl.kind, 'item_key', cl.item_key,
                           'attempt', cl.attempts, 'provider', cl.provider, 'model', cl.model,
                           'worker', CAST(:worker_id AS text)),
        now()
    FROM claimed cl JOIN numbered n ON n.id = cl.id
    ORDER BY cl.partition, n.seq
)
SELECT g.paused AS guard_paused, g.limited AS guard_limited, g.hooked AS guard_hooked,
    (SELECT count(*) FROM cand) AS considered, cl.*, n.seq AS event_seq,
    s.hooked, s.jobs_queued, s.jobs_running, s.jobs_succeeded, s.jobs_failed, s.jobs_cancelled,
    CASE WHEN cl.id IS NOT NULL THEN pg_notify('{NOTIFY_CHANNEL}', cl.partition) END AS notified
FROM guard g LEFT JOIN (
    claimed cl JOIN numbered n ON n.id = cl.id JOIN seq s ON s.key = cl.partition
) ON true"""
)

# Run on its own (autocommit), the statement is a whole transaction: it must then leave
# nothing for Python to write after it, so it also stands back when any webhook is active
# (their notifications are written by Python, in the events' transaction).
PG_CLAIM_ALONE = PG_CLAIM_FAST.replace(
    "@HOOKED@", "EXISTS (SELECT 1 FROM webhooks w WHERE w.active)"
)
PG_CLAIM_FAST = PG_CLAIM_FAST.replace("@HOOKED@", "false")
PG_CLAIM_ALONE, PG_CLAIM_FAST = (
    sql.replace("@LIMITING@", _PG_LIMITING_BUCKET) for sql in (PG_CLAIM_ALONE, PG_CLAIM_FAST)
)

_TEXT_ARRAY = ARRAY(String())


def _sql_literal(value: str) -> str:
    """A string literal (standard_conforming_strings: only quotes are special)."""
    return "'" + value.replace("'", "''") + "'"


@functools.lru_cache(maxsize=256)
def pg_sql(
    sql: str, n: int, kinds: tuple[str, ...] | None = None, window: int | None = None
) -> str:
    """`sql` claiming up to `n` jobs of `kinds` (None: any). The limits and kinds are written
    into the text, not bound: PostgreSQL then plans the prepared statement once (a generic
    plan as good as a fresh one) instead of planning it again at every claim."""
    if kinds is None:
        only = ""
    elif kinds:
        only = "AND j.kind IN (" + ", ".join(_sql_literal(k) for k in kinds) + ")"
    else:
        only = "AND false"
    if window is None:
        window = claim_window(n, 0, _DEFAULT_SLACK)
    sql = (
        sql.replace("@N@", str(int(n)))
        .replace("@WINDOW@", str(int(window)))
        .replace("@KINDS@", only)
    )
    return compact_sql(sql)


@functools.lru_cache(maxsize=256)
def pg_statement(
    sql: str, n: int, kinds: tuple[str, ...] | None = None, window: int | None = None
) -> TextClause:
    """`_pg_sql` as a SQLAlchemy statement."""
    sql = pg_sql(sql, n, kinds, window)
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
