"""/api/invitations: the caller's own pending invitations to other organisations, which only
they accept or decline (an admin can invite an existing account, never add it)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict

from valuerank.accounts.invitations import (
    accept_invitation,
    decline_invitation,
    my_invitations,
)
from valuerank.api.deps import ForbiddenError, RequestContext, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import Body

router = APIRouter(prefix="/api/invitations", tags=["users"])


def _user(ctx: RequestContext) -> str:
    if ctx.principal.user_id is None:
        raise ForbiddenError("an anonymous reader has no invitations")
    return ctx.principal.user_id


@router.get("")
async def my_invitations_route(ctx: Viewer) -> JSONResponse:
    """Your pending invitations: organisation, role offered, when. Not paginated: only
    pending ones are kept (`next_cursor` is always null)."""
    async with ctx.db.transaction() as conn:
        pending = await my_invitations(conn, _user(ctx))
    items = [i.to_dict() for i in pending]
    return ok({"invitations": items, "count": len(items), "next_cursor": None})


class DecisionBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    decision: Literal["accept", "decline"]


@router.post("/{invitation_id}")
async def answer_route(invitation_id: str, body: DecisionBody, ctx: Viewer) -> JSONResponse:
    """Answer an invitation: `accept` joins the organisation with the role offered (switch
    to it with POST /api/auth/switch), `decline` deletes it. Either way it is used up;
    someone else's invitation is 404, like one that does not exist."""
    async with ctx.db.transaction(immediate=True) as conn:
        if body.decision == "accept":
            membership = await accept_invitation(conn, _user(ctx), invitation_id)
            return ok({**membership.to_dict(), "accepted": True})
        declined = await decline_invitation(conn, _user(ctx), invitation_id)
    return ok({**declined.to_dict(), "declined": True})
