"""The queue page `/queue`: the organisation's queue (jobs per state, the oldest wait, whether
it or the whole queue is paused), the providers' queues (queued, in flight, rate-limit state,
limits, paused), the runs with work under way, the dead jobs with their errors, and — for
admins — the notification outbox's undelivered notifications.

It reads what `GET /api/queue/status`, `/api/providers`, `/api/queue/jobs/failed` and
`/api/system/notifications/outbox` read, through the same services; every button calls that
JSON API (static/queue.js), which checks the role again. The page refreshes itself by
fetching itself every few seconds and swapping the parts that changed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.accounts import Role
from valuerank.api.deps import Viewer
from valuerank.pipeline.dead_jobs import (
    DeadJob,
    FailedGroup,
    PartitionLabel,
    dead_jobs,
    failed_groups,
    partition_labels,
)
from valuerank.providers.presets import known_providers
from valuerank.queue import QueueStatus, queue_status
from valuerank.queue.outbox import DEAD, PENDING, OutboxEntry, list_outbox
from valuerank.queue.providers import provider_views
from valuerank.queue.status import PartitionStatus
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

DEAD_JOBS_SHOWN = 50
NOTIFICATIONS_SHOWN = 50
REFRESH_SECONDS = 3


@dataclass(frozen=True)
class Abilities:
    """Which controls the page shows: the ones the API would allow this principal."""

    member: bool  # retry dead jobs (as rerun-failed)
    admin: bool  # pause the organisation's jobs, see and retry its notifications
    install_admin: bool  # pause the whole queue and providers (admins of the default org)


@dataclass(frozen=True)
class QueueView:
    status: QueueStatus
    providers: list[dict[str, Any]]
    live: list[tuple[PartitionLabel, PartitionStatus]]
    groups: list[FailedGroup]
    dead: list[DeadJob]
    notifications: list[OutboxEntry] | None  # None: not an admin

    @property
    def failed_total(self) -> int:
        return sum(group.count for group in self.groups)


def _shown(view: dict[str, Any]) -> dict[str, Any]:
    """A provider view with its blocking reset as a time (the API gives ISO text), and
    whether it is `notable` — jobs, a pause, limits, caps or a rate-limit state — or idle."""
    until = view["blocked_until"]
    notable = bool(
        view["queue_length"]
        or view["in_flight"]
        or view["paused"]
        or view["limits"]
        or view["caps"]
        or view["rate_limit"] != "none"
    )
    return {
        **view,
        "blocked_until": datetime.fromisoformat(until) if until else None,
        "notable": notable,
    }


async def load_queue_view(conn: AsyncConnection, org_id: str, *, admin: bool) -> QueueView:
    status = await queue_status(conn, org_id=org_id)
    providers = await provider_views(conn, org_id, known_providers())
    labels = await partition_labels(conn, org_id, status.partitions)
    live = [(labels[key], part) for key, part in status.partitions.items()]
    notifications = None
    if admin:
        notifications = await list_outbox(
            conn, org_id, status=[DEAD, PENDING], limit=NOTIFICATIONS_SHOWN
        )
    return QueueView(
        status=status,
        providers=[_shown(p) for p in providers],
        live=live,
        groups=await failed_groups(conn, org_id),
        dead=await dead_jobs(conn, org_id, limit=DEAD_JOBS_SHOWN),
        notifications=notifications,
    )


@router.get("/queue", response_class=HTMLResponse)
async def queue_page(request: Request, ctx: Viewer) -> Response:
    role = ctx.principal.role
    can = Abilities(
        member=role.allows(Role.MEMBER),
        admin=role.allows(Role.ADMIN),
        install_admin=role.allows(Role.ADMIN) and ctx.in_install_org,
    )
    async with ctx.db.transaction() as conn:
        view = await load_queue_view(conn, ctx.org_id, admin=can.admin)
    response = templates.TemplateResponse(
        request,
        "queue.html",
        {"view": view, "can": can, "refresh_seconds": REFRESH_SECONDS},
    )
    response.headers["Cache-Control"] = "no-store"
    return response
