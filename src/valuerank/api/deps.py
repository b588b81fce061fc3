"""What routes get from the app: who is asking (the principal, in one organisation, with a
role), and the app's context (`api/context.py`: the database, the settings given to
`create_app`, the stop signal).

Routes declare the role they need with one of `Viewer`, `Member`, `Admin`: each resolves to a
`RequestContext` whose `org_id` is the principal's organisation (every service call is scoped
by it), and answers 403 FORBIDDEN when the principal's role is weaker. The authentication
middleware sets `request.state.principal`; a request without one never reaches a route.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Depends, WebSocketException
from starlette.requests import HTTPConnection

from valuerank.accounts.roles import Role
from valuerank.api.context import AppContext, app_context
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.errors import ValueRankError

Via = Literal["token", "session", "local", "anonymous", "metrics"]


@dataclass(frozen=True)
class Principal:
    """Who sent the request: a user acting in one organisation with one role.

    `via`: an API token (`token_id`), a browser session (`session_id`; `token_id` too when it
    was opened from a token), the local admin of auto-login, `anonymous` — a viewer with no
    user, on the public-read paths only (`user_id` None) —, or `metrics`: the scraper holding
    VALUERANK_METRICS_TOKEN, admitted on `GET /metrics` only, with no user either.
    """

    org_id: str
    role: Role
    user_id: str | None = None
    via: Via = "token"
    token_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class RequestContext:
    """A route's view of the request: the app's shared parts and the principal."""

    app: AppContext
    principal: Principal

    @property
    def db(self) -> Database:
        return self.app.db

    @property
    def org_id(self) -> str:
        return self.principal.org_id

    @property
    def stopping(self) -> asyncio.Event:
        return self.app.stopping

    @property
    def settings(self) -> Settings:
        """The settings given to `create_app` (never re-read from the environment)."""
        return self.app.settings

    @property
    def in_install_org(self) -> bool:
        """Whether the caller acts in the install's default organisation, whose admins act
        on what every organisation shares (the queue, providers, the model registry)."""
        return self.org_id == self.app.org_id


class ForbiddenError(ValueRankError):
    code = "FORBIDDEN"
    http_status = 403


# HTTPConnection: the same dependencies serve HTTP routes and WebSocket routes.
def get_app_context(request: HTTPConnection) -> AppContext:
    return app_context(request.app)


def get_principal(request: HTTPConnection) -> Principal:
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None:  # the middleware lets no such request through; never trust it
        raise ForbiddenError("no authenticated principal on this request")
    return principal


def require(role: Role) -> Callable[[HTTPConnection], Coroutine[Any, Any, RequestContext]]:
    """A dependency giving the `RequestContext` of a principal holding at least `role`.
    (`async`, though it never waits: FastAPI runs a plain function in a worker thread.)"""

    async def dependency(request: HTTPConnection) -> RequestContext:
        principal = get_principal(request)
        if not principal.role.allows(role) and request.scope["type"] == "websocket":
            # A WebSocket has no HTTP answer to carry 403: it is closed, policy violation.
            raise WebSocketException(code=1008, reason=f"this needs the {role.value} role")
        if not principal.role.allows(role):
            raise ForbiddenError(
                f"this needs the {role.value} role; you are {principal.role.value} "
                "in this organisation",
                hint="ask an admin of the organisation for a stronger role",
            )
        return RequestContext(get_app_context(request), principal)

    dependency.required_role = role  # type: ignore[attr-defined]  # read by the role tests
    return dependency


Viewer = Annotated[RequestContext, Depends(require(Role.VIEWER))]
Member = Annotated[RequestContext, Depends(require(Role.MEMBER))]
Admin = Annotated[RequestContext, Depends(require(Role.ADMIN))]


async def _install_admin(ctx: Admin) -> RequestContext:
    """An admin of the install's default organisation: the one who may act on what every
    organisation shares (the queue's maintenance, providers' limits and pauses)."""
    if not ctx.in_install_org:
        raise ForbiddenError(
            "install-wide operations are for admins of the install's default organisation",
            hint="ask an admin of the default organisation; what belongs to your "
            "organisation alone (its outbox, keys, runs) is open to its admins",
        )
    return ctx


_install_admin.role_label = "admin (default org)"  # type: ignore[attr-defined]  # reference
SystemAdmin = Annotated[RequestContext, Depends(_install_admin)]


async def _metrics_reader(request: HTTPConnection) -> RequestContext:
    """The scraper with VALUERANK_METRICS_TOKEN, or an admin of the install's default
    organisation: /metrics counts every organisation's jobs and outbox, so an admin (or
    viewer) of one organisation may not read it."""
    principal = get_principal(request)
    context = RequestContext(get_app_context(request), principal)
    if principal.via == "metrics":
        return context
    if not principal.role.allows(Role.ADMIN) or not context.in_install_org:
        raise ForbiddenError(
            "this needs the admin role in the install's default organisation, or the metrics token",
            hint="scrape with `Authorization: Bearer <VALUERANK_METRICS_TOKEN>`",
        )
    return context


_metrics_reader.required_role = Role.ADMIN  # type: ignore[attr-defined]  # read by the role tests
_metrics_reader.role_label = "admin (default org) or metrics token"  # type: ignore[attr-defined]
MetricsReader = Annotated[RequestContext, Depends(_metrics_reader)]
# Routes that only need the shared parts (health, the open pages).
Context = Annotated[AppContext, Depends(get_app_context)]
