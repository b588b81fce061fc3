"""/api/users: the members of the caller's organisation and their roles (admins change them),
and the invitations the organisation's admins sent.

A user of another organisation is 404, like one that does not exist. Adding by email answers
the same whether or not the email has an account: an existing account is only invited (its
user accepts at /api/invitations), so no admin learns anything of someone else's account.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.accounts import (
    Role,
    get_member,
    list_members,
    remove_member,
    set_role,
)
from valuerank.accounts.invitations import invite, org_invitations, withdraw_invitation
from valuerank.accounts.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from valuerank.api.deps import Admin, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NOT_BLANK, SPACE, Body
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page

router = APIRouter(prefix="/api/users", tags=["users"])

# normalize_email's rule as a JSON Schema pattern: one @, no spaces (nor NUL), something on
# each side; the surrounding whitespace it trims.
EMAIL_PATTERN = rf"^[{SPACE}]*[^@{SPACE}\x00]+@[^@{SPACE}\x00]+[{SPACE}]*$"


class NewMemberBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    email: str = Field(min_length=3, max_length=320, pattern=EMAIL_PATTERN)
    role: Role = Field(strict=False)  # the value, e.g. "member"
    name: str = Field(default="", max_length=200)
    password: str | None = Field(
        default=None,
        min_length=MIN_PASSWORD_LENGTH,
        max_length=MAX_PASSWORD_LENGTH,
        pattern=NOT_BLANK,
        description="Only for a new user (12+ characters; ignored for an existing account, "
        "which keeps its own); without one, the user signs in with API tokens.",
    )


class RoleBody(Body):
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


@router.post("", status_code=202)
async def add_member_route(body: NewMemberBody, ctx: Admin) -> JSONResponse:
    """Add someone by email: a new email becomes a member at once; an existing account is
    invited and joins when its user accepts. The answer (202) is the same in both cases, so it
    says nothing about who has an account. 409 MEMBER_EXISTS if a member of this
    organisation already."""
    async with ctx.db.transaction(immediate=True) as conn:
        answer = await invite(
            conn, ctx.org_id, body.email, body.role, name=body.name, password=body.password
        )
    return ok(answer, status_code=202)


@router.get("/invitations")
async def list_invitations_route(ctx: Admin) -> JSONResponse:
    """The organisation's pending invitations (email, role, when): nothing else of those
    accounts until they accept. Not paginated: only pending ones are kept."""
    async with ctx.db.transaction() as conn:
        pending = await org_invitations(conn, ctx.org_id)
    items = [i.to_dict() for i in pending]
    return ok({"invitations": items, "count": len(items), "next_cursor": None})


@router.delete("/invitations/{invitation_id}")
async def withdraw_invitation_route(invitation_id: str, ctx: Admin) -> JSONResponse:
    """Take back a pending invitation of this organisation (another's is 404)."""
    async with ctx.db.transaction(immediate=True) as conn:
        withdrawn = await withdraw_invitation(conn, ctx.org_id, invitation_id)
    return ok({**withdrawn.to_dict(), "withdrawn": True})


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
