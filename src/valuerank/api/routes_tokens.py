"""/api/tokens: API tokens of the caller's organisation. A token is shown once, in the answer
that creates it. Everyone manages their own tokens; admins also see and revoke everyone's
(someone else's token is 404 to a non-admin, like one that does not exist)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.accounts import Role, create_token, list_tokens, revoke_token
from valuerank.accounts.tokens import MAX_EXPIRY_DAYS, MAX_TOKEN_NAME
from valuerank.api.deps import ForbiddenError, RequestContext, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import Body
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page

router = APIRouter(prefix="/api/tokens", tags=["tokens"])


class NewTokenBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(default="", max_length=MAX_TOKEN_NAME)
    expires_in_days: float | None = Field(default=None, gt=0, le=MAX_EXPIRY_DAYS)
    user_id: str | None = Field(
        default=None, max_length=36, description="Another member's (admins only)."
    )


def _caller(ctx: RequestContext) -> str:
    if ctx.principal.user_id is None:
        raise ForbiddenError("an anonymous reader has no tokens")
    return ctx.principal.user_id


def _owner_scope(ctx: RequestContext) -> str | None:
    """Whose tokens the caller may see: everyone's for an admin (None), else their own."""
    caller = _caller(ctx)
    return None if ctx.principal.role.allows(Role.ADMIN) else caller


@router.post("", status_code=201)
async def create_token_route(body: NewTokenBody, ctx: Viewer) -> JSONResponse:
    """A new token acting as its user in this organisation. `token` is in this answer only."""
    caller = _caller(ctx)
    owner = body.user_id or caller
    if owner != caller and not ctx.principal.role.allows(Role.ADMIN):
        raise ForbiddenError(
            "only admins create tokens for other members",
            hint="omit user_id to create one for yourself",
        )
    async with ctx.db.transaction(immediate=True) as conn:
        new = await create_token(
            conn, ctx.org_id, owner, name=body.name, expires_in_days=body.expires_in_days
        )
    response = ok(new.to_dict(), status_code=201)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("")
async def list_tokens_route(
    ctx: Viewer, limit: Limit = 50, cursor: Cursor = None, user_id: str | None = None
) -> JSONResponse:
    """Tokens, newest first (never the tokens themselves: a prefix, name, status, dates).
    Admins see every member's (or one's, with `user_id`); others their own."""
    owner = _owner_scope(ctx)
    if owner is not None and user_id not in (None, owner):
        raise ForbiddenError("only admins list other members' tokens")
    after = decode_cursor(cursor, arity=1)[0] if cursor else None
    async with ctx.db.transaction() as conn:
        tokens = await list_tokens(
            conn, ctx.org_id, user_id=owner or user_id, after=after, limit=limit + 1
        )
    return ok(page("tokens", [t.to_dict() for t in tokens], limit=limit, key=lambda t: [t["id"]]))


@router.delete("/{token_id}")
async def revoke_token_route(token_id: str, ctx: Viewer) -> JSONResponse:
    """Revoke a token now: requests with it (and sessions opened from it) are refused."""
    async with ctx.db.transaction(immediate=True) as conn:
        info = await revoke_token(conn, ctx.org_id, token_id, user_id=_owner_scope(ctx))
    ctx.app.tokens.forget()  # committed: refused from the next request on, here too
    return ok(info.to_dict())
