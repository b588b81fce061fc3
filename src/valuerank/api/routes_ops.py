"""/api/system: operations (admins only), as the async-eval-worker seed names them.

Two scopes, decided by what the data belongs to:
- organisation-scoped, for any admin of the organisation: the notification outbox (list and
  filter, dead-letter summary, retry one, drain). Webhooks and their notifications belong to
  one organisation; another organisation's notification is 404 like an unknown one.
- install-wide, for admins of the install's default organisation only (others get 403): the
  whole queue's pause (every organisation's jobs, as `valuerank queue pause`) and status
  (`valuerank queue status --all-orgs`), the
  queue's maintenance (reap expired leases, prune finished jobs, full passes, stale-run
  reaping, the schedule, its history and metrics). The queue, its leases, its retention and
  the maintenance records are shared by every organisation, so an admin of one tenant must
  not prune or inspect another's. Schedule alerts go to the default organisation's webhooks.

The queue settings (maintenance interval, retention, lease) are the workers' own
(`VALUERANK_WORKER_*`), given to `create_app` by `valuerank serve` (`AppContext.queue_settings`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.api.deps import Admin, Context, RequestContext, SystemAdmin
from valuerank.api.envelope import ok
from valuerank.api.fields import Body, WholeNumber
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page
from valuerank.crypto import optional_cipher
from valuerank.pipeline.maintenance import (
    Retention,
    maintain,
    reap_stale_runs_pass,
    schedule_summary,
    schedule_trigger,
)
from valuerank.queue import pause_queue, queue_status, resume_queue
from valuerank.queue.maintenance_history import (
    get_maintenance_run,
    list_maintenance_runs,
    maintenance_metrics,
    prune_jobs_pass,
    reap_jobs_pass,
)
from valuerank.queue.maintenance_schedule import alert_deliveries, notify_anomalies
from valuerank.queue.outbox import dead_letter_summary, deliver_due, list_outbox, retry_delivery
from valuerank.queue.settings import QueueSettings
from valuerank.shapes import dump

router = APIRouter(prefix="/api/system", tags=["system operations"])

OutboxStatus = Literal["pending", "delivered", "dead"]
PassStatus = Literal["succeeded", "failed"]


def _queue_settings(app: Context) -> QueueSettings:
    return app.queue_settings


Settings = Annotated[QueueSettings, Depends(_queue_settings)]


def _retention(ctx: RequestContext) -> Retention:
    """What a pass started here keeps: the app's settings, as the workers' are theirs."""
    return Retention.of(ctx.settings)


def _after(cursor: str | None) -> str | None:
    return str(decode_cursor(cursor, arity=1)[0]) if cursor else None


def _by_id(item: dict[str, Any]) -> list[Any]:
    return [item["id"]]


# -- the notification outbox (organisation-scoped) -------------------------------------------


class DrainBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    limit: WholeNumber = Field(default=50, ge=1, le=500, description="Notifications sent at most.")
    timeout_seconds: float = Field(default=10.0, gt=0, le=60, description="Per delivery.")


@router.get("/notifications/outbox")
async def list_outbox_route(
    ctx: Admin,
    status: Annotated[OutboxStatus | None, Query(description="Only this status.")] = None,
    event_type: Annotated[
        str | None, Query(min_length=1, max_length=100, description="Only this topic.")
    ] = None,
    webhook_id: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> JSONResponse:
    """The organisation's webhook notifications, newest first, filtered by status, event type
    (topic) and webhook; cursor-paginated."""
    async with ctx.db.transaction() as conn:
        entries = await list_outbox(
            conn,
            ctx.org_id,
            status=status,
            topic=event_type,
            webhook_id=webhook_id,
            before_id=_after(cursor),
            limit=limit + 1,
        )
    items = [e.to_dict() for e in entries]
    return ok(page("notifications", items, limit=limit, key=_by_id))


@router.get("/notifications/outbox/dead-letter-summary")
async def dead_letter_summary_route(ctx: Admin) -> JSONResponse:
    """Dead notifications (delivery attempts spent) per event type and webhook: how many,
    since when, the latest error."""
    async with ctx.db.transaction() as conn:
        groups = await dead_letter_summary(conn, ctx.org_id)
    items = [g.to_dict() for g in groups]
    return ok({"groups": items, "count": len(items), "dead": sum(g.count for g in groups)})


@router.post("/notifications/outbox/{outbox_id}/retry")
async def retry_notification_route(outbox_id: str, ctx: Admin) -> JSONResponse:
    """Send a dead notification again (pending, due now, attempts reset). 404
    NOTIFICATION_NOT_FOUND for an unknown id or another organisation's; 422 if not dead."""
    async with ctx.db.transaction(immediate=True) as conn:
        entry = await retry_delivery(conn, ctx.org_id, outbox_id)
    return ok(entry.to_dict())


@router.post("/notifications/outbox/drain")
async def drain_outbox_route(ctx: Admin, body: DrainBody | None = None) -> JSONResponse:
    """Deliver the organisation's due notifications now (workers do it every few seconds):
    how many were claimed, delivered, rescheduled, dead-lettered."""
    body = body or DrainBody()
    report = await deliver_due(
        ctx.db,
        limit=body.limit,
        timeout=body.timeout_seconds,
        cipher=optional_cipher(ctx.settings.secret_key),
        org_id=ctx.org_id,
    )
    return ok(
        {
            "claimed": report.claimed,
            "delivered": report.delivered,
            "retried": report.retried,
            "dead": report.dead,
            "lost": report.lost,
        }
    )


# -- the queue's maintenance (install-wide) -------------------------------------------------


class PruneBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    retention_days: float | None = Field(
        default=None,
        gt=0,
        le=36500,
        description="Finished jobs older than this are deleted (default: the workers' "
        "VALUERANK_WORKER_RETENTION_DAYS).",
    )
    batch: WholeNumber = Field(default=5000, ge=1, le=100_000, description="Jobs deleted at most.")


class TriggerBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    force: bool = Field(default=False, description="Run even if a pass ran recently.")


@router.post("/queue/pause")
async def pause_whole_queue_route(ctx: SystemAdmin) -> JSONResponse:
    """Stop claiming every organisation's jobs (`valuerank queue pause`); running jobs finish.
    `changed` is false if it was paused already."""
    async with ctx.db.transaction(immediate=True) as conn:
        changed = await pause_queue(conn)
    return ok({"paused": True, "changed": changed})


@router.get("/queue/status")
async def whole_queue_status_route(ctx: SystemAdmin) -> JSONResponse:
    """`valuerank queue status --all-orgs --json`: every organisation's jobs per state, per
    provider and per live run; the oldest wait; whether the whole queue is paused."""
    async with ctx.db.transaction() as conn:
        status = await queue_status(conn, org_id=None)
    return ok(dump(status))


@router.post("/queue/resume")
async def resume_whole_queue_route(ctx: SystemAdmin) -> JSONResponse:
    """Claim jobs again after `POST /api/system/queue/pause` (`valuerank queue resume`)."""
    async with ctx.db.transaction(immediate=True) as conn:
        changed = await resume_queue(conn)
    return ok({"paused": False, "changed": changed})


@router.post("/queue/jobs/reap-stale")
async def reap_stale_jobs_route(ctx: SystemAdmin, settings: Settings) -> JSONResponse:
    """Reap now the jobs whose lease expired (their worker died) or that ran too long: back to
    the queue, or failed when their attempts are spent. Recorded as a maintenance pass."""
    done = await reap_jobs_pass(ctx.db, settings, trigger="api")
    return ok(done.to_dict())


@router.post("/queue/jobs/prune")
async def prune_jobs_route(
    ctx: SystemAdmin, settings: Settings, body: PruneBody | None = None
) -> JSONResponse:
    """Delete finished jobs (succeeded, failed, cancelled) older than the retention, with their
    errors (events are kept); `more` says another call has more to delete."""
    body = body or PruneBody()
    retention = body.retention_days or settings.retention_days
    done = await prune_jobs_pass(ctx.db, retention_days=retention, batch=body.batch, trigger="api")
    return ok(done.to_dict())


@router.post("/queue/maintenance/run")
async def run_maintenance_route(ctx: SystemAdmin, settings: Settings) -> JSONResponse:
    """One full maintenance pass now (after a running one, if any): reap, prune, recount,
    close stale runs. Its record, with what it did."""
    done = await maintain(ctx.db, settings, _retention(ctx), trigger="api", wait=True)
    assert done is not None  # a waiting pass is never skipped
    return ok(done.to_dict())


@router.post("/queue/maintenance/reap-stale-runs")
async def reap_stale_runs_route(ctx: SystemAdmin) -> JSONResponse:
    """Close the runs left `running`/`summarizing` with no job queued or running: `completed`
    if they wrote transcripts, else `failed` with the reason, each with a `run_reaped`
    event (a run still owing judging gets its finalize job back). Recorded as a pass."""
    done = await reap_stale_runs_pass(ctx.db, trigger="api")
    return ok(done.to_dict())


@router.post("/queue/maintenance/schedule-trigger")
async def schedule_trigger_route(
    ctx: SystemAdmin, settings: Settings, body: TriggerBody | None = None
) -> JSONResponse:
    """A scheduler tick (for cron): a full pass if one is due — none started within 90 % of
    the interval — or now anyway with `force`. `ran` false when it was not due."""
    body = body or TriggerBody()
    done = await schedule_trigger(ctx.db, settings, _retention(ctx), force=body.force)
    async with ctx.db.transaction() as conn:
        summary, _ = await schedule_summary(conn, settings)
    return ok(
        {
            "ran": done is not None,
            "pass": None if done is None else done.to_dict(),
            "next_due": summary.to_dict()["next_due"],
        }
    )


Tolerance = Annotated[
    float, Query(ge=1.0, le=100.0, description="Intervals between passes before one is missed.")
]


@router.get("/queue/maintenance/schedule-summary")
async def schedule_summary_route(
    ctx: SystemAdmin, settings: Settings, tolerance: Tolerance = 2.0
) -> JSONResponse:
    """When the scheduled pass last ran, when it is next due, and anomalies (missed schedules,
    failed passes) with stable keys; status ok | overdue | failing | never_run."""
    async with ctx.db.transaction() as conn:
        summary, now = await schedule_summary(conn, settings, tolerance=tolerance)
    return ok({**summary.to_dict(), "now": now.isoformat()})


@router.post("/queue/maintenance/schedule-summary/notify")
async def notify_schedule_route(
    ctx: SystemAdmin, settings: Settings, tolerance: Tolerance = 2.0
) -> JSONResponse:
    """Announce the schedule's anomalies to the organisation's webhooks (topic
    `maintenance.anomaly`, through the outbox): each anomaly once, however often this is
    called; one no webhook subscribes to is not recorded (announced once one does)."""
    async with ctx.db.transaction(immediate=True) as conn:
        summary, _ = await schedule_summary(conn, settings, tolerance=tolerance)
        report = await notify_anomalies(conn, ctx.org_id, summary.anomalies)
    return ok({**report.to_dict(), "anomalies": len(summary.anomalies)})


@router.get("/queue/maintenance/schedule-alert-delivery")
async def alert_delivery_route(
    ctx: SystemAdmin, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    """The announced anomalies, newest first, with the delivery status of their notifications
    (`delivery`: delivered | pending | dead | pruned)."""
    async with ctx.db.transaction() as conn:
        items = await alert_deliveries(conn, ctx.org_id, before_id=_after(cursor), limit=limit + 1)
    return ok(page("alerts", items, limit=limit, key=_by_id))


@router.get("/queue/maintenance/runs")
async def list_passes_route(
    ctx: SystemAdmin,
    kind: Annotated[
        str | None,
        Query(min_length=1, max_length=32, description="full, reap_jobs, prune_jobs, …"),
    ] = None,
    status: PassStatus | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> JSONResponse:
    """Maintenance passes, newest first: kind, trigger (worker, cli, api, schedule), status,
    what each did, errors; cursor-paginated."""
    async with ctx.db.transaction() as conn:
        passes = await list_maintenance_runs(
            conn, kind=kind, status=status, before_id=_after(cursor), limit=limit + 1
        )
    return ok(page("runs", [p.to_dict() for p in passes], limit=limit, key=_by_id))


@router.get("/queue/maintenance/runs/{run_id}")
async def get_pass_route(run_id: str, ctx: SystemAdmin) -> JSONResponse:
    """One maintenance pass; 404 MAINTENANCE_RUN_NOT_FOUND for an unknown id. Passes belong
    to the install, not to an organisation: hence the default organisation's admins only."""
    async with ctx.db.transaction() as conn:
        done = await get_maintenance_run(conn, run_id)
    return ok(done.to_dict())


@router.get("/queue/maintenance/metrics")
async def metrics_route(
    ctx: SystemAdmin,
    window_hours: Annotated[float, Query(gt=0, le=24 * 365, description="Look back.")] = 24.0,
) -> JSONResponse:
    """Figures over the window: passes by kind, trigger and status, the full passes'
    durations, what they reaped and pruned in total, and the last full pass."""
    async with ctx.db.transaction() as conn:
        figures = await maintenance_metrics(conn, window_seconds=window_hours * 3600.0)
    return ok(figures)
