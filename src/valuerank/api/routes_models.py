"""/api/models: the model registry (shared by every organisation), as `valuerank models`.

List (by provider; active ones unless `include_inactive`), show one (`provider:name`, aliases
allowed), and `POST /api/models/check`: the check run creation applies to its models
(UNKNOWN_MODEL naming every problem), for a client that wants to know first. All reads: the
viewer role. These paths are in the `models` rate-limit class.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page
from valuerank.registry import get_model, list_models
from valuerank.registry.check import check_model_specs
from valuerank.registry.service import ensure_registry

router = APIRouter(prefix="/api/models", tags=["models"])

ModelSpec = Annotated[str, Field(min_length=3, max_length=500, pattern=NO_NUL)]


class CheckBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    models: list[ModelSpec] = Field(
        min_length=1, max_length=100, description="Model ids (`provider:model`), as for a run."
    )
    allow_unknown: bool = Field(
        default=False,
        description="Accept models the registry does not know (their provider must exist).",
    )


@router.get("")
async def list_models_route(
    ctx: Viewer,
    limit: Limit = 50,
    cursor: Cursor = None,
    provider: Annotated[
        str | None, Query(min_length=1, max_length=100, pattern=NO_NUL, description="e.g. openai")
    ] = None,
    include_inactive: bool = False,
) -> JSONResponse:
    """Registered models by provider then name, with weights, capabilities and prices
    (USD per million tokens; null: unknown). An empty registry is seeded from the catalog."""
    after: tuple[str, str] | None = None
    if cursor is not None:
        last_provider, last_name = decode_cursor(cursor, arity=2)
        after = (str(last_provider), str(last_name))
    await ensure_registry(ctx.db)  # an empty registry gets the catalog
    async with ctx.db.transaction() as conn:
        found = await list_models(conn, provider=provider, active_only=not include_inactive)
    # The registry is small and sorted in code (the same order on every database's
    # collation): the page is the models after the cursor's (provider, name).
    rest = [m for m in found if after is None or (m.provider, m.name) > after][: limit + 1]
    return ok(
        page(
            "models",
            [m.to_dict() for m in rest],
            limit=limit,
            key=lambda item: [item["provider"], item["name"]],
        )
    )


@router.post("/check")
async def check_models_route(body: CheckBody, ctx: Viewer) -> JSONResponse:
    """Check model ids the way run creation does: each must be servable here (known
    provider, valid persona or file) and registered and active (unless `allow_unknown`).
    422 UNKNOWN_MODEL names every problem and the valid choices; otherwise each model with its
    registry entry (null when allowed though unregistered)."""
    async with ctx.db.transaction() as conn:
        checked = await check_model_specs(conn, body.models, allow_unknown=body.allow_unknown)
    return ok(
        {
            "valid": True,
            "models": [
                {
                    "model": model,
                    "registered": entry is not None,
                    "entry": None if entry is None else entry.to_dict(),
                }
                for model, entry in checked
            ],
        }
    )


@router.get("/{model_id:path}")
async def get_model_route(model_id: str, ctx: Viewer) -> JSONResponse:
    """One registered model by id (`provider:name`; the catalog's aliases allowed).
    404 MODEL_NOT_FOUND when the registry does not have it."""
    await ensure_registry(ctx.db)  # an empty registry gets the catalog
    async with ctx.db.transaction() as conn:
        model = await get_model(conn, model_id)
    return ok(model.to_dict())
