"""The rule every entry point that creates work for models applies first (CLI, API, demo):
each model must be one this install can serve (`providers.check.model_problem`) and one the
registry knows and has active — unless the caller explicitly allows unknown models (a new
model of a hosted provider, a model served by a local Ollama). All problems are reported
together, each naming its model and the valid choices; nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.providers.check import is_local_file, model_problem
from valuerank.providers.model_id import parse_model_id
from valuerank.registry.service import (
    RegisteredModel,
    UnknownModelError,
    find_model,
    list_models,
    seed_models,
)

# How many registered names an error lists before "…".
_MAX_LISTED = 12


async def _registry_problem(conn: AsyncConnection, model_id: str) -> str | None:
    mid = parse_model_id(model_id)
    if is_local_file(mid):
        return None
    found = await find_model(conn, mid)
    if found is not None:
        if not found.active:
            return (
                f"model {model_id!r} is inactive in the registry "
                f"(activate it: valuerank models set {found.id} --active)"
            )
        return None
    known = [m.name for m in await list_models(conn, provider=mid.provider, active_only=True)]
    listed = ", ".join(known[:_MAX_LISTED]) + (", …" if len(known) > _MAX_LISTED else "")
    choices = (
        f"registered {mid.provider} models: {listed}"
        if known
        else (f"the registry has no {mid.provider} model")
    )
    return f"model {model_id!r} is not in the registry ({choices})"


async def check_models(
    conn: AsyncConnection, model_ids: Iterable[str], *, allow_unknown: bool = False
) -> None:
    """Raise UNKNOWN_MODEL listing every model that cannot be used; return if all can."""
    problems: list[str] = []
    unregistered = False
    for model_id in dict.fromkeys(model_ids):
        problem = model_problem(model_id)
        if problem is None and not allow_unknown:
            problem = await _registry_problem(conn, model_id)
            unregistered = unregistered or problem is not None
        if problem is not None:
            problems.append(problem)
    if not problems:
        return
    hint = None
    if unregistered:
        hint = (
            "see `valuerank models list`; register a model with `valuerank models add`, or "
            "pass --allow-unknown-model to use a model the registry does not know"
        )
    raise UnknownModelError("; ".join(problems), hint=hint)


async def check_model_specs(
    conn: AsyncConnection, model_ids: Iterable[str], *, allow_unknown: bool = False
) -> list[tuple[str, RegisteredModel | None]]:
    """What run creation checks, for a client asking first: the registry is seeded with the
    catalog's missing models, then `check_models` (UNKNOWN_MODEL listing every problem).
    Returns each distinct model with its registry entry (None: allowed though unregistered)."""
    ids = list(dict.fromkeys(model_ids))
    await seed_models(conn)
    await check_models(conn, ids, allow_unknown=allow_unknown)
    found: list[tuple[str, RegisteredModel | None]] = []
    for model_id in ids:
        mid = parse_model_id(model_id)
        found.append((model_id, None if is_local_file(mid) else await find_model(conn, mid)))
    return found
