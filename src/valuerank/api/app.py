"""The FastAPI application: JSON API, server-rendered UI, SSE; authenticated by default.

Middleware, outermost first: the queue hooks in effect → security headers → database
failures (a 503 without a logged traceback) → body size limit → authentication → rate limits
→ routes.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from valuerank import __version__
from valuerank.api import (
    routes_analysis,
    routes_assumptions,
    routes_auth,
    routes_caps,
    routes_credentials,
    routes_definitions,
    routes_eval,
    routes_exchange,
    routes_invitations,
    routes_leaderboard,
    routes_matrix,
    routes_models,
    routes_ops,
    routes_orgs,
    routes_progress,
    routes_providers,
    routes_queue,
    routes_readings,
    routes_report,
    routes_rubrics,
    routes_runs,
    routes_scenarios,
    routes_system,
    routes_tokens,
    routes_transcripts,
    routes_updates,
    routes_users,
    routes_webhooks,
)
from valuerank.api.access_policy import AccessPolicy
from valuerank.api.auth import AuthMiddleware
from valuerank.api.context import AppContext, install_context
from valuerank.api.errors import DatabaseFailureMiddleware, install_error_handlers
from valuerank.api.fields import document_parameters, refuse_nul_parameters
from valuerank.api.headers import SecurityHeadersMiddleware
from valuerank.api.limits import MAX_BODY_BYTES, BodyLimitMiddleware
from valuerank.api.ratelimit import LoginThrottle, RateLimiter, RateLimitMiddleware
from valuerank.api.schemas import ERROR_RESPONSES, document_envelopes
from valuerank.config import Settings, get_settings
from valuerank.db import Database
from valuerank.queue.hooks import QueueHooks, using
from valuerank.queue.settings import QueueSettings
from valuerank.runs.hooks import RUN_HOOKS


class QueueHooksMiddleware:
    """Every request runs with the app's queue hooks in effect: a run cancelled or paused
    through the API ends and notifies as a worker's would (queue/hooks.py)."""

    def __init__(self, app: ASGIApp, *, hooks: QueueHooks) -> None:
        self.app = app
        self.hooks = hooks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with using(self.hooks):
            await self.app(scope, receive, send)


def create_app(
    db: Database,
    *,
    org_id: str,
    settings: Settings | None = None,
    queue_settings: QueueSettings | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    hooks: QueueHooks = RUN_HOOKS,
) -> FastAPI:
    """The app of the install whose default organisation is `org_id`, on `db`.

    `settings` (default: the process's, read here once) decide auto-login, public reads,
    session length, rate limits and everything else the routes read: they reach the routes
    through the app's context (`valuerank.api.context.AppContext`), never from the
    environment again. `queue_settings`: the workers' (`VALUERANK_WORKER_*`, which
    `valuerank serve` passes), for the maintenance routes; default `QueueSettings()`. The
    caller owns `db` (disposes it); set `app_context(app).stopping` before shutting the
    server down so open event streams end.
    """
    from valuerank.mcp.http import install as install_mcp  # MCP sits on the API, as the UI
    from valuerank.web import pages  # the UI sits on the API (docs/architecture.md, "Layers")

    settings = settings or get_settings()
    app = FastAPI(
        title="ValueRank",
        version=__version__,
        docs_url=None,  # Swagger UI and ReDoc load from a CDN; the UI works offline
        redoc_url=None,
        openapi_url="/openapi.json",
        responses=ERROR_RESPONSES,  # every route: its failures in the error envelope
        dependencies=[Depends(refuse_nul_parameters)],  # no NUL in a path or query parameter
    )
    limiter = RateLimiter(settings)
    policy = AccessPolicy.from_settings(settings)
    context = AppContext(
        db=db,
        org_id=org_id,
        settings=settings,
        limiter=limiter,
        access_policy=policy,
        login_throttle=LoginThrottle(limiter),
        queue_settings=queue_settings or QueueSettings(),
    )
    install_context(app, context)
    install_error_handlers(app)
    app.include_router(routes_system.router)
    app.include_router(routes_auth.router)
    app.include_router(routes_orgs.router)
    app.include_router(routes_users.router)
    app.include_router(routes_invitations.router)
    app.include_router(routes_tokens.router)
    app.include_router(routes_credentials.router)
    app.include_router(routes_runs.router)
    app.include_router(routes_assumptions.router)
    app.include_router(routes_updates.router)
    app.include_router(routes_analysis.router)
    app.include_router(routes_report.router)
    app.include_router(routes_definitions.router)
    app.include_router(routes_rubrics.router)
    app.include_router(routes_scenarios.router)
    app.include_router(routes_models.router)
    app.include_router(routes_providers.router)
    app.include_router(routes_exchange.router)
    app.include_router(routes_queue.router)
    app.include_router(routes_caps.router)
    app.include_router(routes_eval.router)
    app.include_router(routes_transcripts.router)
    app.include_router(routes_readings.router)
    app.include_router(routes_matrix.router)
    app.include_router(routes_leaderboard.router)
    app.include_router(routes_progress.router)
    app.include_router(routes_ops.router)
    app.include_router(routes_webhooks.router)
    install_mcp(app, context)  # /mcp: the streamable HTTP transport, API tokens only
    pages.install(app)
    document_envelopes(app)
    document_parameters(app)
    app.add_middleware(RateLimitMiddleware, limiter=limiter)
    app.add_middleware(
        AuthMiddleware,
        db=db,
        org_id=org_id,
        policy=policy,
        limiter=limiter,
        tokens=context.tokens,
    )
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=max_body_bytes,
        max_upload_bytes=settings.max_upload_bytes,
    )
    app.add_middleware(DatabaseFailureMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(QueueHooksMiddleware, hooks=hooks)
    return app
