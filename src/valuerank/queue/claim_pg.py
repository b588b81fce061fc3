"""The PostgreSQL claiming statements, composed from named, commented parts.

Each statement is one `WITH RECURSIVE` query: a list of `Part`s (common table expressions),
then a final SELECT. `statement_text` writes one out, with each part's comment when asked
(`valuerank queue sql` prints them); `claim_sql.pg_sql` runs it on one line (`compact_sql`).

Three shapes (`ClaimShape`):

* GENERAL (`claim_sql.PG_CLAIM`): the claim alone. Full caps and closed rate buckets leave
  their jobs out through bound arrays (`_limited`); Python writes the events and takes the
  slots and reservations after it, in the same transaction.
* FAST (`PG_CLAIM_FAST`): no cap and no limiting bucket exist (its `guard` reads that in the
  statement's own snapshot, else it claims nothing). The same claim, plus the `task_started`
  events, their sequence numbers, the partitions' job counters and the NOTIFY.
* ALONE (`PG_CLAIM_ALONE`): FAST run on its own in autocommit mode. It is then the whole
  transaction, so it also stands back when any webhook is active (their notifications are
  written by Python, in the events' transaction).

What varies per call is written into the text (the limits `n` and `window`, the kinds as
literals): PostgreSQL then plans the prepared statement once. Everything else is a bound
parameter (`:worker_id`, `:lease_seconds`, the GENERAL shape's arrays).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from valuerank.queue.events import NOTIFY_CHANNEL


class ClaimShape(StrEnum):
    GENERAL = "general"
    FAST = "fast"
    ALONE = "alone"


@dataclass(frozen=True)
class Part:
    """One common table expression: `name AS [MATERIALIZED] (body)`."""

    name: str  # as written after WITH, e.g. "parts(p)"
    why: str  # what it is for: printed above it as a comment
    body: str
    materialized: bool = False

    def render(self, *, comments: bool) -> str:
        note = "".join(f"-- {line}\n" for line in self.why.splitlines()) if comments else ""
        head = f"{self.name} AS {'MATERIALIZED ' if self.materialized else ''}("
        lines = textwrap.dedent(self.body).strip("\n").splitlines()
        body = "\n".join("    " + line for line in lines if line.strip())  # an empty {kinds}
        return f"{note}{head}\n{body}\n)"


def compose(parts: Sequence[Part], final: str, *, comments: bool = False) -> str:
    """`WITH RECURSIVE <parts> <final>` (only `parts(p)` recurses; RECURSIVE must lead)."""
    written = ",\n".join(p.render(comments=comments) for p in parts)
    return f"WITH RECURSIVE\n{written}\n{textwrap.dedent(final).strip()}"


def _block(sql: str) -> str:
    """A multi-line fragment, its least indented line at column 0."""
    return textwrap.dedent(sql).strip("\n")


def _hang(fragment: str, column: int) -> str:
    """`fragment` written where a placeholder stands at `column` of its template's source:
    its later lines indented to line up under its first."""
    first, *rest = fragment.splitlines()
    return "\n".join([first, *(" " * column + line if line else line for line in rest)])


def _sql_literal(value: str) -> str:
    """A string literal (standard_conforming_strings: only quotes are special)."""
    return "'" + value.replace("'", "''") + "'"


def kinds_clause(kinds: tuple[str, ...] | None) -> str:
    """The condition on the kinds a claimer runs (None: any; empty: none)."""
    if kinds is None:
        return ""
    if not kinds:
        return "AND false"
    return "AND j.kind IN (" + ", ".join(_sql_literal(k) for k in kinds) + ")"


# -- the claim itself (every shape) -------------------------------------------------------------

# The order of `ix_jobs_queued_partition`: within one partition the fairness terms are equal,
# so priority then age is the claim order, read straight off the index.
_INDEX_ORDER = "j.partition, j.priority DESC, j.run_at, j.created_at, j.id"


def _skip_scan(gate: str) -> Part:
    return Part(
        "parts(p)",
        "Each partition holding queued jobs, one index probe per partition (a skip scan);\n"
        "none at all while the gate is false.",
        f"""
        (SELECT j.partition FROM jobs j
         WHERE j.status = 'queued' AND {gate}
         ORDER BY {_INDEX_ORDER} LIMIT 1)
        UNION ALL
        SELECT (SELECT j.partition FROM jobs j WHERE j.status = 'queued' AND j.partition > parts.p
                ORDER BY {_INDEX_ORDER} LIMIT 1)
        FROM parts WHERE parts.p IS NOT NULL""",
    )


_RUNNING = Part(
    "running",
    "Running jobs per organisation and partition: the fairness terms of the order.",
    """
    SELECT r.org_id, r.partition, count(*) AS n FROM jobs r
    WHERE r.status = 'running' GROUP BY r.org_id, r.partition""",
)


def _candidates(kinds: str, exclusions: str, window: int) -> Part:
    return Part(
        "cand",
        "The first `window` eligible jobs of each partition, in index order: due, of a kind\n"
        "this claimer runs, provider and organisation not paused, not excluded by a full cap\n"
        "or a closed rate bucket; none of a paused or cancelled partition.",
        f"""
        SELECT j.id FROM parts CROSS JOIN LATERAL (
            SELECT j.id FROM jobs j
            WHERE j.partition = parts.p AND j.status = 'queued' AND j.run_at <= now()
              {kinds}
              AND (j.provider IS NULL OR j.provider NOT IN (
                    SELECT q.key FROM queue_controls q WHERE q.scope = 'provider' AND q.paused))
              AND j.org_id NOT IN (
                    SELECT q.key FROM queue_controls q WHERE q.scope = 'org' AND q.paused)
              {_hang(exclusions, 14)}
            ORDER BY j.priority DESC, j.run_at, j.created_at, j.id
            LIMIT {int(window)}
        ) j
        WHERE parts.p IS NOT NULL AND parts.p NOT IN (
            SELECT q.key FROM queue_controls q
            WHERE q.scope = 'partition' AND (q.paused OR q.cancel_requested))""",
        materialized=True,
    )


def _locked(n: int) -> Part:
    return Part(
        "c",
        "The best n candidates (priority; then the organisation, then the partition with the\n"
        "fewest running jobs; then age), locked in that order, skipping jobs another claimer\n"
        "holds; re-checked `queued` under the lock.",
        f"""
        SELECT jj.id FROM jobs jj
        WHERE jj.id = ANY(ARRAY(SELECT cand.id FROM cand)) AND coalesce(jj.status, '') = 'queued'
        ORDER BY jj.priority DESC,
            coalesce((SELECT sum(o.n) FROM running o WHERE o.org_id = jj.org_id), 0),
            coalesce((SELECT sum(r.n) FROM running r WHERE r.partition = jj.partition), 0),
            jj.run_at, jj.created_at, jj.id
        LIMIT {int(n)}
        FOR UPDATE OF jj SKIP LOCKED""",
        materialized=True,
    )


_CLAIMED = Part(
    "claimed",
    "The claim: the locked jobs leased to this worker (a new fencing token, an attempt\n"
    "counted), guarded by their status.",
    """
    UPDATE jobs SET status = 'running', lease_token = CAST(gen_random_uuid() AS text),
        lease_expires_at = now() + :lease_seconds * interval '1 second',
        locked_by = :worker_id, attempts = jobs.attempts + 1, started_at = now(),
        slot_keys = NULL
    WHERE jobs.id = ANY(ARRAY(SELECT c.id FROM c)) AND coalesce(jobs.status, '') IN ('queued')
    RETURNING jobs.*""",
)


def _claim_parts(gate: str, kinds: str, exclusions: str, n: int, window: int) -> list[Part]:
    return [
        _skip_scan(gate),
        _RUNNING,
        _candidates(kinds, exclusions, window),
        _locked(n),
        _CLAIMED,
    ]


# -- GENERAL: exclusions by full caps and closed buckets, as bound arrays ------------------------

# A job is left out when a full cap applies to it (organisation, provider, or provider and
# model), or when its bucket is closed: a closed model bucket, or a closed provider-wide bucket
# of a job whose model has no bucket of its own (same credential).
_LIMITED = _block("""
          AND (cardinality(:full_orgs) = 0 OR j.org_id <> ALL(:full_orgs))
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
                      END))""")

# How many candidates it read comes back even when nothing was claimed (the LEFT JOIN): a
# round that claimed fewer than asked while candidates were left was contended.
_GENERAL_RESULT = """
SELECT (SELECT count(*) FROM cand) AS considered, cl.*
FROM (SELECT 1) AS one LEFT JOIN claimed cl ON true"""


# -- FAST and ALONE: guarded, with the events and counters --------------------------------------

# The fast path's rate-limit clause: it runs only while every bucket is limitless (a bucket a
# 429 made, `ratelimit.learned_bucket`), so a job is held back only when the bucket it
# resolves to (its model's, else its provider's; same credential) is blocked now.
_BLOCKED = _block("""
          AND (j.provider IS NULL OR NOT EXISTS (
                SELECT 1 FROM rate_buckets b
                WHERE b.provider = j.provider AND b.blocked_until > now()
                  AND b.credential = coalesce(j.payload ->> 'credential', '')
                  AND (b.model = coalesce(j.model, '') OR (b.model = '' AND NOT EXISTS (
                        SELECT 1 FROM rate_buckets m
                        WHERE m.provider = b.provider AND m.credential = b.credential
                          AND m.model <> '' AND m.model = coalesce(j.model, ''))))))""")

_FAST_GATE = "NOT (SELECT g.paused OR g.limited OR g.hooked FROM guard g)"

# A bucket that limits something (the fast path stands back while one exists).
_LIMITING_BUCKET = _block("""
EXISTS (SELECT 1 FROM rate_buckets b
        WHERE b.rpm_limit IS NOT NULL OR b.tpm_limit IS NOT NULL OR b.min_interval_ms > 0
           OR b.concurrency_limit IS NOT NULL)""")

# ALONE is a whole transaction: it stands back when any webhook is active as well.
_HOOKED = {
    ClaimShape.FAST: "false",
    ClaimShape.ALONE: "EXISTS (SELECT 1 FROM webhooks w WHERE w.active)",
}


def _guard(hooked: str) -> Part:
    return Part(
        "guard",
        "Whether this statement must stand back (and claim nothing): the queue is paused,\n"
        "a cap or a limiting rate bucket exists, or (ALONE) a webhook is active.",
        f"""
        SELECT EXISTS (SELECT 1 FROM queue_controls q
                       WHERE q.scope = 'global' AND q.key = '*' AND q.paused) AS paused,
               EXISTS (SELECT 1 FROM queue_slots)
               OR {_hang(_LIMITING_BUCKET, 18)} AS limited,
               {hooked} AS hooked""",
        materialized=True,
    )


_COUNTS = "jobs_queued, jobs_running, jobs_succeeded, jobs_failed, jobs_cancelled"

_DELTA = Part(
    "delta",
    "Jobs claimed per partition.",
    """
    SELECT cl.partition, min(cl.org_id) AS org_id, count(*) AS n FROM claimed cl
    GROUP BY cl.partition""",
)

_SEQ = Part(
    "seq",
    "Each partition's counters moved (queued to running) and its event sequence advanced by\n"
    "its claimed jobs, in partition order (the row lock order); whether it has webhooks.",
    f"""
    INSERT INTO queue_controls AS q (scope, key, org_id, last_seq, jobs_queued, jobs_running)
    SELECT 'partition', d.partition, d.org_id, d.n, -d.n, d.n FROM delta d ORDER BY d.partition
    ON CONFLICT (scope, key) DO UPDATE SET last_seq = q.last_seq + excluded.last_seq,
        jobs_queued = q.jobs_queued + excluded.jobs_queued,
        jobs_running = q.jobs_running + excluded.jobs_running
    RETURNING q.key, q.last_seq, {_COUNTS},
        EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = q.org_id AND w.active) AS hooked""",
)

_NUMBERED = Part(
    "numbered",
    "The sequence number of each claimed job's event (in job id order within its partition).",
    """
    SELECT cl.id, s.last_seq - d.n + row_number() OVER (PARTITION BY cl.partition ORDER BY cl.id)
        AS seq
    FROM claimed cl JOIN delta d ON d.partition = cl.partition
        JOIN seq s ON s.key = cl.partition""",
)

_EVENTS = Part(
    "ev",
    "The task_started events.",
    """
    INSERT INTO events (partition, seq, org_id, type, data, created_at)
    SELECT cl.partition, n.seq, cl.org_id, 'task_started',
        jsonb_build_object('job_id', cl.id, 'kind', cl.kind, 'item_key', cl.item_key,
                           'attempt', cl.attempts, 'provider', cl.provider, 'model', cl.model,
                           'worker', CAST(:worker_id AS text)),
        now()
    FROM claimed cl JOIN numbered n ON n.id = cl.id
    ORDER BY cl.partition, n.seq""",
)

# One row per claimed job (or a single row of nulls) with the guard's answers, how many
# candidates were read, the job, its event's number and its partition's counters; the NOTIFY
# per claimed job's partition.
_FAST_RESULT = f"""
SELECT g.paused AS guard_paused, g.limited AS guard_limited, g.hooked AS guard_hooked,
    (SELECT count(*) FROM cand) AS considered, cl.*, n.seq AS event_seq,
    s.hooked, s.jobs_queued, s.jobs_running, s.jobs_succeeded, s.jobs_failed, s.jobs_cancelled,
    CASE WHEN cl.id IS NOT NULL THEN pg_notify('{NOTIFY_CHANNEL}', cl.partition) END AS notified
FROM guard g LEFT JOIN (
    claimed cl JOIN numbered n ON n.id = cl.id JOIN seq s ON s.key = cl.partition
) ON true"""


def statement_text(
    shape: ClaimShape,
    n: int,
    kinds: tuple[str, ...] | None,
    window: int,
    *,
    comments: bool = False,
) -> str:
    """The statement of `shape` claiming up to `n` jobs of `kinds` (None: any), reading
    `window` candidates per partition; laid out on lines, with each part's comment above
    it when `comments` (then not for `compact_sql`, which would comment out the rest)."""
    only = kinds_clause(kinds)
    if shape is ClaimShape.GENERAL:
        parts = _claim_parts("true", only, _LIMITED, n, window)
        return compose(parts, _GENERAL_RESULT, comments=comments)
    claim = _claim_parts(_FAST_GATE, only, _BLOCKED, n, window)
    parts = [_guard(_HOOKED[shape]), *claim, _DELTA, _SEQ, _NUMBERED, _EVENTS]
    return compose(parts, _FAST_RESULT, comments=comments)
