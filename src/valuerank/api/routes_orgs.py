"""/api/orgs: the organisations the caller may act in, founding a new one, and the current
organisation's defaults for new runs (judges, summary model)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.accounts import create_org_with_admin
from valuerank.api.deps import Admin, ForbiddenError, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import Body
from valuerank.api.routes_auth import account_of
from valuerank.api.run_bodies import ModelId
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.accounts import OrgList
from valuerank.org_defaults import MAX_JUDGES, OrgDefaults, get_org_defaults, set_org_defaults
from valuerank.shapes import dump

router = APIRouter(prefix="/api/orgs", tags=["organisations"])


class NewOrgBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    # A name derives a slug from its ASCII letters and digits: it needs one (no NUL either).
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00]*[A-Za-z0-9][^\x00]*$")
    slug: str | None = Field(
        default=None,
        max_length=64,
        # check_slug's rule, around the blanks create_org trims.
        pattern=r"^\s*[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?\s*$",
        description="Default: derived from the name.",
    )


class DefaultsBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    judges: list[ModelId] = Field(max_length=MAX_JUDGES, description="Empty: no default judges.")
    summary_model: ModelId | None = Field(default=None, description="Null: no default.")
    allow_unknown_models: bool = Field(
        default=False, description="Models the registry does not know (a known provider's)."
    )


@router.get("/defaults", response_model=Envelope[OrgDefaults])
async def get_defaults_route(ctx: Viewer) -> JSONResponse:
    """The judges and summary model a run created without naming any gets (in the
    organisation the caller acts in)."""
    async with ctx.db.transaction() as conn:
        return ok(dump(await get_org_defaults(conn, ctx.org_id)))


@router.put("/defaults", response_model=Envelope[OrgDefaults])
async def put_defaults_route(body: DefaultsBody, ctx: Admin) -> JSONResponse:
    """Replace the organisation's defaults (admins only). Every model is checked as a run's
    are: 422 UNKNOWN_MODEL for one the registry does not know, INVALID_INPUT for one listed
    twice."""
    async with ctx.db.transaction(immediate=True) as conn:
        stored = await set_org_defaults(
            conn,
            ctx.org_id,
            OrgDefaults(tuple(body.judges), body.summary_model),
            allow_unknown=body.allow_unknown_models,
        )
    return ok(dump(stored))


@router.get("", response_model=Envelope[OrgList])
async def list_orgs_route(ctx: Viewer) -> JSONResponse:
    """The caller's organisations with the role held in each (a token: its own only). Not
    paginated: the list is bounded by the user's memberships (`next_cursor` is always null)."""
    items = [m.to_dict() for m in (await account_of(ctx)).orgs]
    return ok({"orgs": items, "count": len(items), "next_cursor": None})


@router.post("", status_code=201)
async def create_org_route(body: NewOrgBody, ctx: Admin) -> JSONResponse:
    """Found an organisation (admins only); the caller becomes its first admin."""
    if ctx.principal.user_id is None:
        raise ForbiddenError("an anonymous reader cannot found organisations")
    async with ctx.db.transaction(immediate=True) as conn:
        membership = await create_org_with_admin(
            conn, ctx.principal.user_id, body.name, slug=body.slug
        )
    return ok(membership.to_dict(), status_code=201)
