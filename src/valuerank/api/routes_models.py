"""/api/models: the model registry (shared by every organisation), as `valuerank models`.

List (by provider; active ones unless `include_inactive`), show one (`provider:name`, aliases
allowed), and `POST /api/models/check`: the check run creation applies to its models
(UNKNOWN_MODEL naming every problem), for a client that wants to know first. All reads: the
viewer role. Changing the registry (`PUT` registers or changes a model, `PATCH` changes a
registered one, as `valuerank models add|set`; `POST /api/models/seed` adds the catalog's
missing models, as `valuerank models seed`) acts on every organisation's runs and
consensus weights: an admin of the default organisation. These paths are in the `models`
rate-limit class.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema
from starlette.exceptions import HTTPException as StarletteHTTPException

from valuerank.api.deps import SystemAdmin, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body, forbid_nul_in_schema
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page
from valuerank.errors import InvalidInputError
from valuerank.providers.model_id import MODEL_ID_PATTERN
from valuerank.providers.presets import known_providers
from valuerank.registry import get_model, list_models, seed_models, update_model, upsert_model
from valuerank.registry.check import check_model_specs
from valuerank.registry.service import (
    MAX_CATEGORY,
    MAX_DISPLAY_NAME,
    ModelNotFoundError,
    ensure_registry,
)

router = APIRouter(prefix="/api/models", tags=["models"])

ModelSpec = Annotated[str, Field(min_length=3, max_length=500, pattern=MODEL_ID_PATTERN)]
# Documented, not enforced by FastAPI: the routes answer a malformed id, or one of a
# provider this version does not know, with their own INVALID_INPUT saying why. (The check's
# body keeps MODEL_ID_PATTERN: it reports unknown providers as UNKNOWN_MODEL on purpose.)
KNOWN_PROVIDER_MODEL_ID = "^(?:{}):{}".format(
    "|".join(re.escape(name) for name in known_providers()), MODEL_ID_PATTERN.split(":", 1)[1]
)
PathModelId = Annotated[
    str,
    Path(
        description="`provider:name` (a known provider).",
        json_schema_extra={"pattern": KNOWN_PROVIDER_MODEL_ID},
    ),
]
Price = Annotated[
    float | None, Field(ge=0, le=1e6, description="USD per million tokens; null: unknown.")
]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # "default: null" would offer the null the field refuses


class ModelChanges(Body):
    """The fields to set; the ones left out keep their value (a new model starts from its
    catalog entry, else from the model name, weight 1, active, prices unknown)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # `| SkipJsonSchema[None]`: left out is "keep"; a null is refused by changes(), so the
    # schema does not offer one (the constraints sit on the non-null type).
    display_name: (
        Annotated[str, Field(min_length=1, max_length=MAX_DISPLAY_NAME, pattern=NO_NUL)]
        | SkipJsonSchema[None]
    ) = Field(default=None, description="Shown to people.", json_schema_extra=_no_default)
    category: (
        Annotated[str, Field(min_length=1, max_length=MAX_CATEGORY, pattern=NO_NUL)]
        | SkipJsonSchema[None]
    ) = Field(
        default=None,
        description="frontier, small, open-weights, local, synthetic, …",
        json_schema_extra=_no_default,
    )
    weight: Annotated[float, Field(ge=0, le=1000)] | SkipJsonSchema[None] = Field(
        default=None, description="Consensus weight.", json_schema_extra=_no_default
    )
    active: bool | SkipJsonSchema[None] = Field(
        default=None, description="Offered for runs, or hidden.", json_schema_extra=_no_default
    )
    input_price_per_mtok: Price = None
    output_price_per_mtok: Price = None

    def changes(self) -> dict[str, Any]:
        """The fields the client sent; a price sent as null means unknown, the other
        fields sent as null are refused (they have no "unknown")."""
        sent = {name: getattr(self, name) for name in self.model_fields_set}
        nulls = sorted(
            name for name, value in sent.items() if value is None and "price" not in name
        )
        if nulls:
            raise InvalidInputError(
                f"{', '.join(nulls)} cannot be null",
                hint="leave a field out to keep its value",
            )
        return sent


def _at_least_one_field(schema: dict[str, Any]) -> None:
    forbid_nul_in_schema(schema)  # what Body's own schema hook does
    schema["minProperties"] = 1


class ModelPatch(ModelChanges):
    """PATCH's body: as PUT's, but a body that changes nothing is refused."""

    model_config = ConfigDict(json_schema_extra=_at_least_one_field)


class CheckBody(Body):
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


@router.post("/seed")
async def seed_models_route(ctx: SystemAdmin) -> JSONResponse:
    """Add the built-in catalog's models the registry lacks; edited models stay as they are
    (`valuerank models seed`): the ids `inserted` and how many were there already."""
    async with ctx.db.transaction(immediate=True) as conn:
        seeded = await seed_models(conn)
    return ok(seeded.to_dict())


@router.api_route("/seed", methods=["GET", "PUT", "PATCH", "DELETE"], include_in_schema=False)
async def seed_other_methods() -> None:
    """`seed` is no model id either: other methods on it are a 405 (Allow: POST)."""
    raise StarletteHTTPException(405)


@router.api_route("/check", methods=["GET", "PUT", "PATCH", "DELETE"], include_in_schema=False)
async def check_other_methods() -> None:
    """`check` is no model id: other methods on it are a 405 (Allow: POST), not a lookup of
    a model `check` by the `/{model_id:path}` routes below."""
    raise StarletteHTTPException(405)


@router.get("/{model_id:path}")
async def get_model_route(model_id: PathModelId, ctx: Viewer) -> JSONResponse:
    """One registered model by id (`provider:name`; the catalog's aliases allowed).
    404 MODEL_NOT_FOUND when the registry does not have it."""
    await ensure_registry(ctx.db)  # an empty registry gets the catalog
    async with ctx.db.transaction() as conn:
        model = await get_model(conn, model_id)
    return ok(model.to_dict())


@router.put(
    "/{model_id:path}",
    # The 201's envelope schema is filled in by document_envelopes, as the 200's.
    responses={201: {"description": "Registered.", "content": {"application/json": {}}}},
)
async def put_model_route(
    model_id: PathModelId, body: ModelChanges, ctx: SystemAdmin
) -> JSONResponse:
    """Register a model the catalog lacks (201), or change the given fields of a registered
    one (200), like `valuerank models add`. Its provider must be a known one."""
    changes = body.changes()
    await ensure_registry(ctx.db)  # the catalog first: a model added now is not the only one
    async with ctx.db.transaction(immediate=True) as conn:
        try:
            await get_model(conn, model_id)
            created = False
        except ModelNotFoundError:
            created = True
        model = await upsert_model(conn, model_id, **changes)
    return ok(model.to_dict(), status_code=201 if created else 200)


@router.patch("/{model_id:path}")
async def patch_model_route(
    model_id: PathModelId, body: ModelPatch, ctx: SystemAdmin
) -> JSONResponse:
    """Change the given fields of a registered model (weight, active, prices, name,
    category), like `valuerank models set`. 404 MODEL_NOT_FOUND when it is not registered;
    422 when the body changes nothing."""
    changes = body.changes()
    if not changes:
        raise InvalidInputError(
            "nothing to change",
            hint="send display_name, category, weight, active, input_price_per_mtok "
            "or output_price_per_mtok",
        )
    await ensure_registry(ctx.db)  # an empty registry gets the catalog first
    async with ctx.db.transaction(immediate=True) as conn:
        model = await update_model(conn, model_id, **changes)
    return ok(model.to_dict())
