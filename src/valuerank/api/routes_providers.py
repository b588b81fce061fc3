"""/api/providers: per-provider rate limits, concurrency caps, pause/resume and status.

Limits and pauses belong to the install's queue, shared by every organisation's jobs (as
`valuerank queue limits …` and `valuerank queue pause --provider`): reading them needs the
viewer role, changing them an admin of the default organisation. A limit of 0 (or null) is
no limit. Queue counts (`queue_length`, `in_flight`) are the caller's organisation's jobs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BeforeValidator, ConfigDict, Field

from valuerank.api.deps import SystemAdmin, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body, WholeNumber, whole_number
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page
from valuerank.providers.presets import known_providers
from valuerank.queue import pause_provider, resume_provider
from valuerank.queue import providers as service

router = APIRouter(prefix="/api/providers", tags=["providers"])

ProviderName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="The provider prefix of model ids, e.g. `openai`.",
    ),
]
ModelQuery = Annotated[
    str,
    Query(max_length=300, pattern=NO_NUL, description="One model's limits (default: all)."),
]


class LimitsBody(Body):
    """Every limit left out or 0 is no limit (`{"rpm": 0}` lifts the RPM limit)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: str = Field(
        default="", max_length=300, pattern=NO_NUL, description="Only this model (`provider:m`)."
    )
    rpm: float | None = Field(default=None, ge=0, le=1e9, description="Requests per minute.")
    tpm: float | None = Field(default=None, ge=0, le=1e12, description="Tokens per minute.")
    min_interval_ms: WholeNumber = Field(
        default=0, ge=0, le=3_600_000, description="Request spacing."
    )
    # Bounds inside the Annotated (before the 20.0 → 20 validator): the schema keeps them.
    concurrency: Annotated[int, Field(ge=0, le=100_000), BeforeValidator(whole_number)] | None = (
        Field(
            default=None,
            description="Calls in flight (cut on a 429, grown back when clean).",
        )
    )


@router.get("")
async def list_providers_route(
    ctx: Viewer, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    """Every provider by name: paused, rate-limit state (none/open/exhausted/blocked) and
    blocking reset, limits, concurrency caps, and the organisation's queued/running jobs."""
    after = str(decode_cursor(cursor, arity=1)[0]) if cursor else None
    async with ctx.db.transaction() as conn:
        views = await service.provider_views(conn, ctx.org_id, known_providers())
    rest = [v for v in views if after is None or v["name"] > after][: limit + 1]
    return ok(page("providers", rest, limit=limit, key=lambda item: [item["name"]]))


@router.get("/{provider}")
async def get_provider_route(provider: ProviderName, ctx: Viewer) -> JSONResponse:
    """One provider's status and limits; 404 PROVIDER_NOT_FOUND for an unknown one."""
    async with ctx.db.transaction() as conn:
        [view] = await service.provider_views(conn, ctx.org_id, known_providers(), only=provider)
    return ok(view)


@router.put("/{provider}/limits")
async def set_limits_route(
    provider: ProviderName, body: LimitsBody, ctx: SystemAdmin
) -> JSONResponse:
    """Create or replace the provider's (or, with `model`, one model's) limits, shared by
    every worker: RPM, TPM, spacing, adaptive concurrency (which also caps the provider's or
    model's jobs in flight). Like `valuerank queue limits set`."""
    async with ctx.db.transaction(immediate=True) as conn:
        await service.require_provider(conn, ctx.org_id, provider, known_providers())
        row = await service.set_limits(
            conn,
            provider,
            body.model,
            rpm=body.rpm,
            tpm=body.tpm,
            min_interval_ms=body.min_interval_ms,
            concurrency=body.concurrency,
        )
    return ok(row)


@router.delete("/{provider}/limits")
async def remove_limits_route(
    provider: ProviderName, ctx: SystemAdmin, model: ModelQuery = ""
) -> JSONResponse:
    """Remove the provider's (or one model's) limits: its jobs run unlimited.
    404 LIMITS_NOT_FOUND when it has none."""
    async with ctx.db.transaction(immediate=True) as conn:
        await service.require_provider(conn, ctx.org_id, provider, known_providers())
        key = await service.remove_limits(conn, provider, model)
    return ok({"key": key, "removed": True})


async def _toggle(ctx: SystemAdmin, provider: str, paused: bool) -> JSONResponse:
    async with ctx.db.transaction(immediate=True) as conn:
        await service.require_provider(conn, ctx.org_id, provider, known_providers())
        if paused:
            changed = await pause_provider(conn, provider)
        else:
            changed = await resume_provider(conn, provider)
    return ok({"provider": provider, "paused": paused, "changed": changed})


@router.post("/{provider}/pause")
async def pause_provider_route(provider: ProviderName, ctx: SystemAdmin) -> JSONResponse:
    """Stop claiming the provider's jobs (running ones finish); other providers go on.
    `changed: false` when it was paused already."""
    return await _toggle(ctx, provider, True)


@router.post("/{provider}/resume")
async def resume_provider_route(provider: ProviderName, ctx: SystemAdmin) -> JSONResponse:
    """Claim the provider's jobs again after a pause."""
    return await _toggle(ctx, provider, False)
