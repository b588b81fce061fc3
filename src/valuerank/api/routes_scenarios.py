"""Scenario variants of a definition version, as `valuerank scenarios expand` makes them.

`GET /api/definitions/{id}/scenarios` pages through them (optionally a nested deterministic
sample: a percentage or a count, with a seed); `POST /api/scenarios/expand` answers the
whole expansion with the CLI's scenarios YAML. Expansion writes nothing, so both need only
the viewer role; another organisation's definition is 404 DEFINITION_NOT_FOUND.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BeforeValidator, ConfigDict, Field, model_validator

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import Body, forbid_nul_in_schema, whole_number
from valuerank.api.pagination import Cursor, Limit, decode_cursor, items_after, page
from valuerank.definitions import service
from valuerank.definitions.sampling import MAX_SEED
from valuerank.errors import InvalidInputError
from valuerank.formats import serialize_scenarios
from valuerank.formats.scenarios_model import Scenario

router = APIRouter(tags=["scenarios"])

# Expansions larger than this are refused (the CLI has no such limit).
MAX_SCENARIOS = 100_000

Mode = Literal["first", "all", "random"]
MODE_HELP = (
    "first: the first option of each level (as the CLI); all: every option; "
    "random: one random option per level (seeded by `seed`)."
)


def _one_sample_schema(schema: dict[str, Any]) -> None:
    forbid_nul_in_schema(schema)  # what Body's own schema hook does
    # What _one_sample enforces: not both a percentage and a size (a null is "not given").
    schema["not"] = {
        "required": ["sample_percentage", "sample_size"],
        "properties": {"sample_percentage": {"type": "number"}, "sample_size": {"type": "integer"}},
    }


class ExpandBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_one_sample_schema)

    definition_id: str = Field(min_length=1, max_length=100)
    mode: Mode = Field(default="first", description=MODE_HELP)
    # Bounds inside the Annotated (before the 20.0 → 20 validator): the schema keeps them.
    seed: Annotated[int, Field(ge=0, le=MAX_SEED), BeforeValidator(whole_number)] | None = Field(
        default=None, description="Seed of mode random."
    )
    sample_percentage: float | None = Field(default=None, gt=0, le=100)
    sample_size: (
        Annotated[int, Field(ge=1, le=MAX_SCENARIOS), BeforeValidator(whole_number)] | None
    ) = None
    sample_seed: Annotated[int, Field(ge=0, le=MAX_SEED), BeforeValidator(whole_number)] | None = (
        Field(default=None, description="Seed of the sample (default: drawn).")
    )

    @model_validator(mode="after")
    def _one_sample(self) -> ExpandBody:
        if self.sample_percentage is not None and self.sample_size is not None:
            raise ValueError("give sample_percentage or sample_size, not both")
        return self


def scenario_item(scenario: Scenario) -> dict[str, Any]:
    return {"id": scenario.id, **scenario.to_mapping()}


def _sampling(
    percentage: float | None, size: int | None, seed: int | None, total: int, selected: int
) -> dict[str, Any]:
    return {
        "total": total,
        "selected": selected,
        "sample_percentage": percentage,
        "sample_size": size,
        "sample_seed": seed,
    }


@router.get("/api/definitions/{definition_id}/scenarios")
async def list_scenarios_route(
    definition_id: str,
    ctx: Viewer,
    limit: Limit = 50,
    cursor: Cursor = None,
    mode: Annotated[Mode, Query(description=MODE_HELP)] = "first",
    seed: Annotated[int | None, Query(ge=0, le=MAX_SEED)] = None,
    sample_percentage: Annotated[float | None, Query(gt=0, le=100)] = None,
    sample_size: Annotated[int | None, Query(ge=1, le=MAX_SCENARIOS)] = None,
    sample_seed: Annotated[
        int | None,
        Query(
            ge=0,
            le=MAX_SEED,
            description="Seed of the sample (default: drawn, then kept "
            "in the cursor so every page is of the same sample).",
        ),
    ] = None,
) -> JSONResponse:
    """The version's scenario variants in file order, a page at a time, each with its id,
    subject and body; with `sample_percentage` or `sample_size`, only the sampled ones."""
    if sample_percentage is not None and sample_size is not None:
        raise InvalidInputError("give sample_percentage or sample_size, not both")
    after: str | None = None
    if cursor is not None:
        last, kept_seed = decode_cursor(cursor, arity=2)
        if not isinstance(last, str) or not (
            kept_seed is None or (isinstance(kept_seed, int) and 0 <= kept_seed <= MAX_SEED)
        ):
            raise InvalidInputError("the cursor is not one this server wrote", hint="omit it")
        after = last
        sample_seed = kept_seed if sample_seed is None else sample_seed
    async with ctx.db.transaction() as conn:
        result = await service.expand_scenarios(
            conn,
            ctx.org_id,
            definition_id,
            mode=mode,
            seed=seed,
            sample_percentage=sample_percentage,
            sample_size=sample_size,
            sample_seed=sample_seed,
            max_scenarios=MAX_SCENARIOS,
        )
    chosen = result.file.scenarios
    rest = items_after(chosen, lambda sc: sc.id, after)[: limit + 1]
    # The cursor keeps the sample's seed: every page is of the same (possibly drawn) sample.
    listed = page(
        "scenarios",
        [scenario_item(sc) for sc in rest],
        limit=limit,
        key=lambda item: [item["id"], result.sample_seed],
    )
    return ok(
        {
            "definition_id": definition_id,
            "mode": mode,
            **_sampling(
                sample_percentage, sample_size, result.sample_seed, result.total, len(chosen)
            ),
            **listed,
        }
    )


@router.post("/api/scenarios/expand")
async def expand_route(body: ExpandBody, ctx: Viewer) -> JSONResponse:
    """The whole expansion of a definition version (optionally sampled), as
    `valuerank scenarios expand --json` reports it, with the scenarios YAML (`yaml`, the
    CLI's `exp-NNN.*.yaml`) and the scenarios themselves. Writes nothing."""
    async with ctx.db.transaction() as conn:
        stored = await service.get_definition(conn, ctx.org_id, body.definition_id)
        result = await service.expand_scenarios(
            conn,
            ctx.org_id,
            stored.version.id,
            mode=body.mode,
            seed=body.seed,
            sample_percentage=body.sample_percentage,
            sample_size=body.sample_size,
            sample_seed=body.sample_seed,
            max_scenarios=MAX_SCENARIOS,
        )
    chosen = result.file.scenarios
    return ok(
        {
            "definition_id": stored.version.id,
            "mode": body.mode,
            **_sampling(
                body.sample_percentage,
                body.sample_size,
                result.sample_seed,
                result.total,
                len(chosen),
            ),
            "scenario_ids": [sc.id for sc in chosen],
            "scenarios": [scenario_item(sc) for sc in chosen],
            "yaml": serialize_scenarios(result.file),
        }
    )
