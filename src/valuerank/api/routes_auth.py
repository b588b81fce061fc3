"""/api/auth: sign in (a session cookie and its CSRF token), sign out, who am I, and switching
a session to another of the user's organisations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.accounts import (
    Identity,
    InvalidCredentialsError,
    WhoAmI,
    password_login,
    revoke_session,
    switch_org,
    who_am_i,
)
from valuerank.api.access_policy import AccessPolicy
from valuerank.api.cookies import clear_session_cookies, set_session_cookies
from valuerank.api.deps import Context, RequestContext, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import Body
from valuerank.api.ratelimit import LoginThrottle, client_host
from valuerank.queue.dialect import iso

router = APIRouter(prefix="/api/auth", tags=["auth"])


class LoginBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)
    org: str | None = Field(
        default=None, max_length=64, description="Organisation slug or id (default: yours)."
    )


class SwitchBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    org: str = Field(min_length=1, max_length=64, description="Organisation slug or id.")


def get_throttle(app: Context) -> LoginThrottle:
    return app.login_throttle


def get_policy(app: Context) -> AccessPolicy:
    return app.access_policy


Throttle = Annotated[LoginThrottle, Depends(get_throttle)]
Policy = Annotated[AccessPolicy, Depends(get_policy)]


async def account_of(ctx: RequestContext) -> WhoAmI:
    """The principal's user, organisation and organisations (a token's: its own only)."""
    principal = ctx.principal
    async with ctx.db.transaction() as conn:
        return await who_am_i(
            conn,
            principal.org_id,
            principal.role,
            principal.user_id,
            token_bound=principal.via == "token",
        )


async def _me(ctx: RequestContext, csrf_token: str | None) -> dict[str, Any]:
    principal = ctx.principal
    who = await account_of(ctx)
    return {
        "user": who.user.to_dict() if who.user else None,
        "org": who.org.to_dict(),
        "role": principal.role.value,
        "via": principal.via,
        "token_id": principal.token_id,
        "session_id": principal.session_id,
        "csrf_token": csrf_token,
        "orgs": [m.to_dict() for m in who.orgs],
    }


def _csrf(request: Request) -> str | None:
    value: str | None = request.scope.get("state", {}).get("csrf_token")
    return value


@router.post("/login")
async def login(
    body: LoginBody, request: Request, app: Context, throttle: Throttle, policy: Policy
) -> JSONResponse:
    """Sign in with email and password: sets the session cookie (HttpOnly) and the CSRF
    cookie, and answers the CSRF token to send as `X-CSRF-Token` on unsafe requests.

    Failed logins are limited per account and per address (429 RATE_LIMITED, Retry-After).
    """
    address = client_host(request.scope)
    await throttle.check(body.email, address)
    try:
        async with app.db.transaction(immediate=True) as conn:
            opened = await password_login(
                conn,
                body.email,
                body.password,
                org=body.org,
                default_org_id=app.org_id,
                ttl_seconds=policy.session_seconds,
            )
            identity: Identity = opened.identity
            who = await who_am_i(
                conn, identity.org_id, identity.role, identity.user_id, token_bound=False
            )
    except InvalidCredentialsError:
        await throttle.failed(body.email, address)
        raise
    assert identity.csrf_token is not None and who.user is not None
    response = ok(
        {
            "user": who.user.to_dict(),
            "org": who.org.to_dict(),
            "role": identity.role.value,
            "via": "session",
            "session_id": identity.session_id,
            "csrf_token": identity.csrf_token,
            "expires_at": iso(opened.expires_at),
            "orgs": [m.to_dict() for m in who.orgs],
        }
    )
    set_session_cookies(
        response, request.scope, opened.secret, identity.csrf_token, policy.session_seconds
    )
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/logout")
async def logout(request: Request, ctx: Viewer) -> JSONResponse:
    """End this browser session (its cookie opens nothing any more) and clear its cookies.
    Other credentials have nothing to sign out of (`signed_out: false`)."""
    session_id = ctx.principal.session_id if ctx.principal.via == "session" else None
    if session_id is not None:
        async with ctx.db.transaction(immediate=True) as conn:
            await revoke_session(conn, session_id)
    response = ok({"signed_out": session_id is not None})
    clear_session_cookies(response, request.scope)
    return response


@router.get("/me")
async def me(request: Request, ctx: Viewer) -> JSONResponse:
    """Who is asking: user, organisation, role, how (`token`, `session`, `local`,
    `anonymous`), the organisations the user may act in, and a browser's CSRF token."""
    response = ok(await _me(ctx, _csrf(request)))
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/switch")
async def switch(body: SwitchBody, request: Request, ctx: Viewer) -> JSONResponse:
    """Move this browser session to another of the user's organisations (by slug or id).
    An organisation the user does not belong to is 404; API tokens cannot switch (403
    SESSION_REQUIRED)."""
    principal = ctx.principal
    identity = Identity(
        principal.org_id,
        principal.user_id or "",
        principal.role,
        token_id=principal.token_id,
        session_id=principal.session_id if principal.via == "session" else None,
    )
    async with ctx.db.transaction(immediate=True) as conn:
        moved = await switch_org(conn, identity, body.org)
    switched = RequestContext(
        ctx.app,
        type(principal)(
            org_id=moved.org_id,
            role=moved.role,
            user_id=moved.user_id,
            via=principal.via,
            session_id=moved.session_id,
        ),
    )
    return ok(await _me(switched, _csrf(request)))
