"""/health (the one open route) and /metrics (Prometheus text, authenticated)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from sqlalchemy import text

from valuerank import __version__
from valuerank.api.deps import Context, Viewer
from valuerank.api.envelope import ok
from valuerank.queue.metrics import CONTENT_TYPE, render_metrics

router = APIRouter(tags=["system"])


@router.get("/health")
async def health(ctx: Context) -> JSONResponse:
    """Liveness and database reachability; open to all, says nothing secret."""
    async with ctx.db.transaction() as conn:
        await conn.execute(text("SELECT 1"))
    return ok({"status": "ok", "version": __version__})


@router.get("/metrics", response_class=Response)
async def metrics(ctx: Viewer) -> Response:
    """The queue's metrics in the Prometheus text format."""
    return Response(await render_metrics(ctx.db), media_type=CONTENT_TYPE)
