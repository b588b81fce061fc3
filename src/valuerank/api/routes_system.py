"""/health (liveness) and /api/ready (readiness), both open, and /metrics (Prometheus text,
install-wide: the metrics token or an admin of the default organisation)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from sqlalchemy import text

from valuerank import __version__
from valuerank.api.deps import Context, MetricsReader
from valuerank.api.envelope import ok
from valuerank.db.migrate import check_ready
from valuerank.queue.metrics import CONTENT_TYPE, render_metrics

router = APIRouter(tags=["system"])


@router.get("/health")
async def health(ctx: Context) -> JSONResponse:
    """Liveness and database reachability; open to all, says nothing secret."""
    async with ctx.db.transaction() as conn:
        await conn.execute(text("SELECT 1"))
    return ok({"status": "ok", "version": __version__})


@router.get("/api/ready")
async def ready(ctx: Context) -> JSONResponse:
    """Readiness: 200 when the database answers and its schema is at the revision this code
    needs; 503 DATABASE_UNAVAILABLE or SCHEMA_NOT_READY otherwise (route no traffic here yet).
    Open to all, like /health, which stays the liveness check."""
    revision = await check_ready(ctx.db)
    return ok({"status": "ready", "version": __version__, **revision})


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format."}},
)
async def metrics(ctx: MetricsReader) -> Response:
    """The queue's metrics in the Prometheus text format, counted over every organisation:
    for the scraper holding VALUERANK_METRICS_TOKEN (as its Bearer) or an admin of the
    install's default organisation."""
    return Response(await render_metrics(ctx.db), media_type=CONTENT_TYPE)
