"""/api/users: the members of the caller's organisation and their roles (admins change them).

A user of another organisation is 404, like one that does not exist.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from valuerank.accounts import (
    Role,
    add_member,
    get_member,
    list_members,
    remove_member,
    set_role,
)
from valuerank.api.deps import Admin, Viewer
from valuerank.api.envelope import ok
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page

router = APIRouter(prefix="/api/users", tags=["users"])


class NewMemberBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    email: str = Field(min_length=3, max_length=320)
    role: Role = Field(strict=False)  # the value, e.g. "member"
    name: str = Field(default="", max_length=200)
    password: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="Only for a new user (12+ characters); without one, the user signs in "
        "with API tokens.",
    )


class RoleBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    role: Role = Field(strict=False)  # the value, e.g. "member"


@router.get("")
async def list_members_route(ctx: Viewer, limit: Limit = 50, cursor: Cursor = None) -> JSONResponse:
    """The organisation's members by email, with their roles."""
    after = decode_cursor(cursor, arity=1)[0] if cursor else None
    async with ctx.db.transaction() as conn:
        members = await list_members(conn, ctx.org_id, after=after, limit=limit + 1)
    items = [m.to_dict() for m in members]
    return ok(page("users", items, limit=limit, key=lambda item: [item["email"]]))


@router.post("", status_code=201)
async def add_member_route(body: NewMemberBody, ctx: Admin) -> JSONResponse:
    """Add a member (creating the user if the email is new). 409 MEMBER_EXISTS if already one."""
    async with ctx.db.transaction(immediate=True) as conn:
        member = await add_member(
            conn, ctx.org_id, body.email, body.role, name=body.name, password=body.password
        )
    return ok(member.to_dict(), status_code=201)


@router.get("/{user_id}")
async def get_member_route(user_id: str, ctx: Viewer) -> JSONResponse:
    """A member of the organisation: email, name and role."""
    async with ctx.db.transaction() as conn:
        member = await get_member(conn, ctx.org_id, user_id)
    return ok(member.to_dict())


@router.patch("/{user_id}")
async def set_role_route(user_id: str, body: RoleBody, ctx: Admin) -> JSONResponse:
    """Change a member's role; it applies to their next request (tokens included). The last
    admin cannot be demoted (409 LAST_ADMIN)."""
    async with ctx.db.transaction(immediate=True) as conn:
        member = await set_role(conn, ctx.org_id, user_id, body.role)
    ctx.app.tokens.forget()  # committed: their tokens act with the new role from now on
    return ok(member.to_dict())


@router.delete("/{user_id}")
async def remove_member_route(user_id: str, ctx: Admin) -> JSONResponse:
    """Remove a member from the organisation: their tokens and sessions here are revoked."""
    async with ctx.db.transaction(immediate=True) as conn:
        member = await remove_member(conn, ctx.org_id, user_id)
    ctx.app.tokens.forget()  # committed: their tokens are refused from now on
    return ok({**member.to_dict(), "removed": True})
