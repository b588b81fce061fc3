"""/api/queue/caps: the concurrency caps over all workers, as `valuerank queue caps …`.

Caps are the install's (one organisation's cap decides how much of the shared fleet it may
take), so they are read and changed by admins of the default organisation only. A cap of 0 is
no cap: `PUT … {"max": 0}` lifts it, as `DELETE` does (which answers 404 CAP_NOT_FOUND when
there is none). An organisation cap set here is that organisation's own: the workers' default
(`VALUERANK_WORKER_ORG_CONCURRENCY`) neither changes nor lifts it. A provider's or a model's
cap is also the one its rate limits' adaptive `concurrency` keeps (`PUT
/api/providers/{provider}/limits`), which moves it after a 429 or clean completions; here it
can be set and lifted without limits (as `valuerank queue caps set --provider`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.api.deps import SystemAdmin
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body, WholeNumber
from valuerank.api.routes_providers import ProviderName
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.caps import CapList, CapRemoved, CapSet
from valuerank.errors import InvalidInputError
from valuerank.orgs import get_org
from valuerank.providers.presets import known_providers
from valuerank.queue import providers
from valuerank.queue.cap_controls import cap_rows, remove_concurrency_cap, set_concurrency_cap

router = APIRouter(prefix="/api/queue/caps", tags=["queue"])

OrgRef = Annotated[
    str,
    Path(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
        description="The organisation's slug or id.",
    ),
]

CapModel = Annotated[
    str,
    Query(
        max_length=300,
        pattern=NO_NUL,
        description="One model's cap (`provider:model`); default: the provider's.",
    ),
]


class CapBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    max: WholeNumber = Field(
        ge=0, le=100_000, description="Jobs running at once over all workers; 0 lifts the cap."
    )


@router.get("", response_model=Envelope[CapList])
async def list_caps_route(ctx: SystemAdmin) -> JSONResponse:
    """Every cap (global, each organisation's, providers', models'): slots in use and the
    maximum; `is_default` marks the organisation caps the workers' default made. Not
    paginated: one page (`next_cursor` is always null)."""
    async with ctx.db.transaction() as conn:
        rows = await cap_rows(conn)
    return ok({"caps": rows, "count": len(rows), "next_cursor": None})


@router.put("/global", response_model=Envelope[CapSet])
async def set_global_cap_route(body: CapBody, ctx: SystemAdmin) -> JSONResponse:
    """Create or change the cap over every job; `{"max": 0}` lifts it."""
    async with ctx.db.transaction(immediate=True) as conn:
        data = await set_concurrency_cap(conn, body.max, everything=True)
    return ok(data)


@router.delete("/global", response_model=Envelope[CapRemoved])
async def remove_global_cap_route(ctx: SystemAdmin) -> JSONResponse:
    """Lift the cap over every job (404 CAP_NOT_FOUND when there is none)."""
    async with ctx.db.transaction(immediate=True) as conn:
        key = await remove_concurrency_cap(conn, everything=True)
    return ok({"key": key, "removed": True})


@router.put("/orgs/{org}", response_model=Envelope[CapSet])
async def set_org_cap_route(org: OrgRef, body: CapBody, ctx: SystemAdmin) -> JSONResponse:
    """Create or change one organisation's cap (its own: the workers' default no longer
    changes it); `{"max": 0}` lifts it. 404 for an unknown organisation.

    A lifted organisation cap is no cap unless the workers run with a default
    (`VALUERANK_WORKER_ORG_CONCURRENCY`): their next claim of its jobs gives it that one."""
    async with ctx.db.transaction(immediate=True) as conn:
        org_id = (await get_org(conn, org)).id
        data = await set_concurrency_cap(conn, body.max, org_id=org_id)
    return ok(data)


@router.delete("/orgs/{org}", response_model=Envelope[CapRemoved])
async def remove_org_cap_route(org: OrgRef, ctx: SystemAdmin) -> JSONResponse:
    """Lift one organisation's cap, its own or the workers' default one (404 CAP_NOT_FOUND
    when it has none); as with `{"max": 0}`, the workers' default, if set, applies again."""
    async with ctx.db.transaction(immediate=True) as conn:
        org_id = (await get_org(conn, org)).id
        key = await remove_concurrency_cap(conn, org_id=org_id)
    return ok({"key": key, "removed": True})


async def _model_of(
    ctx: SystemAdmin, conn: AsyncConnection, provider: str, model: str
) -> str | None:
    """The model named, one of the provider's (404 PROVIDER_NOT_FOUND for an unknown
    provider); None: the provider's own cap."""
    await providers.require_provider(conn, ctx.org_id, provider, known_providers())
    if model and not model.startswith(f"{provider}:"):
        raise InvalidInputError(
            f"{model!r} is not a model of {provider}", hint=f"name it {provider}:MODEL"
        )
    return model or None


@router.put("/providers/{provider}", response_model=Envelope[CapSet])
async def set_provider_cap_route(
    provider: ProviderName, body: CapBody, ctx: SystemAdmin, model: CapModel = ""
) -> JSONResponse:
    """Create or change a provider's cap (or, with `?model=`, one model's); `{"max": 0}`
    lifts it. Its rate limits' adaptive concurrency, if set, moves it on."""
    async with ctx.db.transaction(immediate=True) as conn:
        named = await _model_of(ctx, conn, provider, model)
        data = await set_concurrency_cap(conn, body.max, provider=provider, model=named)
    return ok(data)


@router.delete("/providers/{provider}", response_model=Envelope[CapRemoved])
async def remove_provider_cap_route(
    provider: ProviderName, ctx: SystemAdmin, model: CapModel = ""
) -> JSONResponse:
    """Lift a provider's cap (or, with `?model=`, one model's); 404 CAP_NOT_FOUND when it
    has none."""
    async with ctx.db.transaction(immediate=True) as conn:
        named = await _model_of(ctx, conn, provider, model)
        key = await remove_concurrency_cap(conn, provider=provider, model=named)
    return ok({"key": key, "removed": True})
