"""Prometheus metrics of the queue, read from the database at scrape time.

`render_metrics(db)` builds a fresh registry per call and returns the text exposition format:
every worker and API process reports the same numbers (the database is the truth), and a
scrape of any of them is enough. All values are gauges, since they are read from tables that
maintenance prunes; the error counts cover the retention window, and the `_recent` series the
last `RECENT_SECONDS`, which is what to alert on (e.g. the 429 rate).

Series (all prefixed `valuerank_`):
- `queue_jobs{status}`: jobs per status (every status present, 0 included);
- `queue_provider_jobs{provider,status}`: queued and running jobs per provider
  (`provider=""` for jobs without one);
- `queue_in_flight`: running jobs;
- `queue_oldest_waiting_seconds`: the longest a due queued job has waited (0 when none);
- `queue_job_errors{category}` and `queue_job_errors_recent{category}`: recorded errors per
  category (`rate_limited` counts 429s, `lease_expired` lease expiries);
- `outbox_notifications{status}`: pending, delivered, dead;
- `maintenance_last_run_age_seconds` and `maintenance_last_run_succeeded`: only once a
  maintenance run has been recorded.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from sqlalchemy import case, func, select

from valuerank.db.engine import Database
from valuerank.db.tables import job_errors, jobs, maintenance_runs, outbox
from valuerank.queue.dialect import db_now, db_now_plus, seconds_since
from valuerank.queue.errors import ErrorCategory
from valuerank.queue.outbox.statuses import OUTBOX_STATUSES
from valuerank.queue.states import JobStatus

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
RECENT_SECONDS = 300.0


async def render_metrics(db: Database) -> bytes:
    """The queue's metrics in the Prometheus text format (one read-only transaction)."""
    registry = CollectorRegistry(auto_describe=False)

    def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
        return Gauge(f"valuerank_{name}", doc, labels, registry=registry)

    by_status = gauge("queue_jobs", "Jobs per status.", ("status",))
    by_provider = gauge(
        "queue_provider_jobs", "Queued and running jobs per provider.", ("provider", "status")
    )
    in_flight = gauge("queue_in_flight", "Jobs running now.")
    oldest = gauge("queue_oldest_waiting_seconds", "Longest wait of a due queued job.")
    errors = gauge("queue_job_errors", "Recorded job errors per category.", ("category",))
    recent = gauge(
        "queue_job_errors_recent",
        f"Job errors per category in the last {RECENT_SECONDS:g} seconds.",
        ("category",),
    )
    notifications = gauge("outbox_notifications", "Outbox notifications per status.", ("status",))

    async with db.transaction() as conn:
        dialect = conn.dialect.name
        counts = {s.value: 0 for s in JobStatus}
        rows = await conn.execute(
            select(jobs.c.status, jobs.c.provider, func.count()).group_by(
                jobs.c.status, jobs.c.provider
            )
        )
        for status, provider, n in rows:
            counts[status] = counts.get(status, 0) + int(n)
            if status in (JobStatus.QUEUED.value, JobStatus.RUNNING.value):
                by_provider.labels(provider or "", status).inc(int(n))
        for status, n in counts.items():
            by_status.labels(status).set(n)
        in_flight.set(counts.get(JobStatus.RUNNING.value, 0))

        waited = await conn.scalar(
            select(func.max(seconds_since(dialect, jobs.c.run_at))).where(
                jobs.c.status == JobStatus.QUEUED.value, jobs.c.run_at <= db_now(dialect)
            )
        )
        oldest.set(max(float(waited or 0.0), 0.0))

        totals = {c.value: 0 for c in ErrorCategory}
        lately = dict(totals)
        since = db_now_plus(dialect, -RECENT_SECONDS)
        rows = await conn.execute(
            select(
                job_errors.c.category,
                func.count(),
                func.sum(case((job_errors.c.created_at > since, 1), else_=0)),
            ).group_by(job_errors.c.category)
        )
        for category, n, n_recent in rows:
            totals[category] = int(n)
            lately[category] = int(n_recent or 0)
        for category in totals:
            errors.labels(category).set(totals[category])
            recent.labels(category).set(lately[category])

        by_outbox = {s: 0 for s in OUTBOX_STATUSES}
        rows = await conn.execute(select(outbox.c.status, func.count()).group_by(outbox.c.status))
        by_outbox.update({status: int(n) for status, n in rows})
        for status, n in by_outbox.items():
            notifications.labels(status).set(n)

        last = (
            await conn.execute(
                select(
                    seconds_since(dialect, maintenance_runs.c.finished_at),
                    maintenance_runs.c.status,
                )
                .where(maintenance_runs.c.kind == "full")  # the scheduled passes
                .order_by(maintenance_runs.c.started_at.desc(), maintenance_runs.c.id.desc())
                .limit(1)
            )
        ).first()
    if last is not None:
        age, status = last
        gauge(
            "maintenance_last_run_age_seconds", "Seconds since the last maintenance run ended."
        ).set(max(float(age), 0.0))
        gauge("maintenance_last_run_succeeded", "1 if the last maintenance run succeeded.").set(
            1 if status == "succeeded" else 0
        )
    return generate_latest(registry)
