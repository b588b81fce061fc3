"""The maintenance schedule: when the full pass last ran, when it is next due, what went wrong
(anomalies), and announcing those anomalies to an organisation's webhooks once each.

Workers run a full pass every `maintenance_interval_seconds`, fleet-wide. From the recorded
full passes (`summarize_schedule`, a pure function) an anomaly is:
- `failed_pass`: a full pass that failed (key `failed_pass:<pass id>`);
- `missed_schedule`: more than `tolerance` intervals between two full passes, or between the
  last one and now (key `missed_schedule:<id of the pass before the gap>`, so the gap keeps its
  key when the next pass finally comes).
Status: `never_run` (no full pass recorded), `overdue` (the schedule is being missed now),
`failing` (the last full pass failed), else `ok`.

`notify_anomalies` writes one outbox notification (topic `maintenance.anomaly`) per anomaly
per subscribed webhook of the organisation, and a `maintenance_alerts` row keyed by (org,
anomaly): an anomaly is announced once, whoever asks and however often. An anomaly with no
subscribed webhook is not recorded (a webhook added later still hears of it).
`alert_deliveries` reads back the alerts with their notifications' delivery status.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import maintenance_alerts, outbox
from valuerank.queue.dialect import as_utc, iso, upsert
from valuerank.queue.ids import new_id
from valuerank.queue.maintenance import MaintenanceRun
from valuerank.queue.outbox.notify import enqueue_notifications
from valuerank.queue.outbox.statuses import DEAD, DELIVERED, PENDING

ALERT_TOPIC = "maintenance.anomaly"
DEFAULT_TOLERANCE = 2.0  # intervals between passes before a gap is a missed schedule
FAILED_PASS, MISSED_SCHEDULE = "failed_pass", "missed_schedule"


@dataclass(frozen=True)
class Anomaly:
    key: str
    kind: str  # failed_pass | missed_schedule
    at: datetime  # when it started: the failed pass, or the pass before the gap
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "at": iso(self.at), "detail": self.detail}


@dataclass(frozen=True)
class ScheduleSummary:
    interval_seconds: float
    tolerance: float
    status: str  # ok | overdue | failing | never_run
    last_pass: MaintenanceRun | None
    last_success: MaintenanceRun | None
    next_due: datetime | None
    passes_seen: int
    anomalies: list[Anomaly] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "interval_seconds": self.interval_seconds,
            "tolerance_intervals": self.tolerance,
            "last_pass": None if self.last_pass is None else self.last_pass.to_dict(),
            "last_success_at": None
            if self.last_success is None
            else iso(self.last_success.started_at),
            "next_due": iso(self.next_due),
            "passes_seen": self.passes_seen,
            "anomalies": [a.to_dict() for a in self.anomalies],
        }


def _missed(before: MaintenanceRun, gap: float, interval: float, *, open_: bool) -> Anomaly:
    return Anomaly(
        key=f"{MISSED_SCHEDULE}:{before.id}",
        kind=MISSED_SCHEDULE,
        at=before.started_at,
        detail={
            "after_pass": before.id,
            "gap_seconds": round(gap, 3),
            "interval_seconds": interval,
            "missed_passes": max(int(gap // interval) - 1, 1),
            "ongoing": open_,
        },
    )


def summarize_schedule(
    passes: Sequence[MaintenanceRun],
    *,
    now: datetime,
    interval_seconds: float,
    tolerance: float = DEFAULT_TOLERANCE,
) -> ScheduleSummary:
    """The schedule as the full passes `passes` (any order) show it at `now`."""
    ordered = sorted(passes, key=lambda p: (p.started_at, p.id))
    limit = tolerance * interval_seconds
    anomalies: list[Anomaly] = []
    for earlier, later in itertools.pairwise(ordered):
        gap = (later.started_at - earlier.started_at).total_seconds()
        if gap > limit:
            anomalies.append(_missed(earlier, gap, interval_seconds, open_=False))
    anomalies += [
        Anomaly(
            key=f"{FAILED_PASS}:{p.id}",
            kind=FAILED_PASS,
            at=p.started_at,
            detail={"pass": p.id, "trigger": p.trigger, "error": p.error},
        )
        for p in ordered
        if p.status == "failed"
    ]
    last = ordered[-1] if ordered else None
    status = "never_run"
    next_due = None
    if last is not None:
        next_due = last.started_at + timedelta(seconds=interval_seconds)
        since = (now - last.started_at).total_seconds()
        if since > limit:
            anomalies.append(_missed(last, since, interval_seconds, open_=True))
            status = "overdue"
        else:
            status = "failing" if last.status == "failed" else "ok"
    anomalies.sort(key=lambda a: (a.at, a.key))
    return ScheduleSummary(
        interval_seconds=interval_seconds,
        tolerance=tolerance,
        status=status,
        last_pass=last,
        last_success=next((p for p in reversed(ordered) if p.status == "succeeded"), None),
        next_due=next_due,
        passes_seen=len(ordered),
        anomalies=anomalies,
    )


@dataclass(frozen=True)
class NotifyReport:
    sent: list[str]  # anomaly keys announced now
    already_sent: list[str]
    no_subscriber: list[str]  # no active webhook of the org subscribes to the topic
    notifications: int  # outbox rows written

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": ALERT_TOPIC,
            "sent": self.sent,
            "already_sent": self.already_sent,
            "no_subscriber": self.no_subscriber,
            "notifications": self.notifications,
        }


async def notify_anomalies(
    conn: AsyncConnection, org_id: str, anomalies: Sequence[Anomaly]
) -> NotifyReport:
    """Announce each anomaly not announced to the organisation yet (see the module), in the
    caller's transaction. Concurrent callers: the unique (org, key) row makes one of them win;
    the other sees it as already sent."""
    sent: list[str] = []
    already: list[str] = []
    unsubscribed: list[str] = []
    written = 0
    for anomaly in anomalies:
        alert_id = new_id()
        inserted = await conn.scalar(
            upsert(conn)(maintenance_alerts)
            .values(
                id=alert_id,
                org_id=org_id,
                anomaly_key=anomaly.key,
                kind=anomaly.kind,
                detail=anomaly.detail,
                outbox_ids=[],
            )
            .on_conflict_do_nothing(
                index_elements=[maintenance_alerts.c.org_id, maintenance_alerts.c.anomaly_key]
            )
            .returning(maintenance_alerts.c.id)
        )
        if inserted is None:
            already.append(anomaly.key)
            continue
        payload = {"anomaly": anomaly.to_dict(), "alert_id": alert_id}
        ids = await enqueue_notifications(conn, org_id, ALERT_TOPIC, payload)
        if not ids:
            gone = delete(maintenance_alerts).where(maintenance_alerts.c.id == alert_id)
            await conn.execute(gone)
            unsubscribed.append(anomaly.key)
            continue
        await conn.execute(
            update(maintenance_alerts)
            .where(maintenance_alerts.c.id == alert_id)
            .values(outbox_ids=ids)
        )
        sent.append(anomaly.key)
        written += len(ids)
    return NotifyReport(sent, already, unsubscribed, written)


def _overall(statuses: Sequence[str]) -> str:
    """One word for an alert: `dead` if a notification died, `pending` while one waits,
    `delivered` when all were, `pruned` when none is stored any more (delivered long ago)."""
    if not statuses:
        return "pruned"
    if DEAD in statuses:
        return DEAD
    if PENDING in statuses:
        return PENDING
    return DELIVERED


async def alert_deliveries(
    conn: AsyncConnection, org_id: str, *, before_id: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """The organisation's alerts, newest first, each with its notifications' delivery."""
    query = select(maintenance_alerts).where(maintenance_alerts.c.org_id == org_id)
    if before_id is not None:
        query = query.where(maintenance_alerts.c.id < before_id)
    alerts = list(await conn.execute(query.order_by(maintenance_alerts.c.id.desc()).limit(limit)))
    wanted = {i for a in alerts for i in (a.outbox_ids or [])}
    rows = {}
    if wanted:
        found = await conn.execute(
            select(outbox).where(outbox.c.org_id == org_id, outbox.c.id.in_(sorted(wanted)))
        )
        rows = {r.id: r for r in found}
    items = []
    for alert in alerts:
        notes = [
            {
                "outbox_id": r.id,
                "webhook_id": r.webhook_id,
                "status": r.status,
                "attempts": r.attempts,
                "last_status_code": r.last_status_code,
                "last_error": r.last_error,
                "delivered_at": iso(r.delivered_at),
            }
            for i in alert.outbox_ids or []
            if (r := rows.get(i)) is not None
        ]
        items.append(
            {
                "id": alert.id,
                "anomaly_key": alert.anomaly_key,
                "kind": alert.kind,
                "detail": alert.detail,
                "created_at": iso(as_utc(alert.created_at)),
                "delivery": _overall([n["status"] for n in notes]),
                "notifications": notes,
            }
        )
    return items
