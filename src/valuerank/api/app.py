"""The FastAPI application: JSON API, server-rendered UI, SSE; authenticated by default.

Middleware, outermost first: security headers → body size limit → authentication → routes.
"""

from __future__ import annotations

from fastapi import FastAPI

from valuerank import __version__
from valuerank.api import routes_assumptions, routes_runs, routes_system, routes_updates
from valuerank.api.auth import AccessToken, AuthMiddleware
from valuerank.api.deps import AppContext
from valuerank.api.errors import install_error_handlers
from valuerank.api.headers import SecurityHeadersMiddleware
from valuerank.api.limits import MAX_BODY_BYTES, BodyLimitMiddleware
from valuerank.db import Database


def create_app(
    db: Database,
    *,
    org_id: str,
    access_token: str,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The app serving organisation `org_id` from `db`, accepting only `access_token`.

    The caller owns `db` (disposes it); set `app.state.valuerank.stopping` before shutting the
    server down so open event streams end.
    """
    from valuerank.web import pages  # the UI sits on top of the API (see ARCHITECTURE.md)

    app = FastAPI(
        title="ValueRank",
        version=__version__,
        docs_url=None,  # Swagger UI and ReDoc load from a CDN; the UI works offline
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.valuerank = AppContext(db=db, org_id=org_id)
    install_error_handlers(app)
    app.include_router(routes_system.router)
    app.include_router(routes_runs.router)
    app.include_router(routes_assumptions.router)
    app.include_router(routes_updates.router)
    pages.install(app)
    app.add_middleware(AuthMiddleware, token=AccessToken(access_token), org_id=org_id)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=max_body_bytes)
    app.add_middleware(SecurityHeadersMiddleware)
    return app
