"""Setting and clearing concurrency caps by hand: the global cap, an organisation's, a
provider's or a model's (`valuerank queue caps …`). A cap of 0 is no cap (the cap is removed).

An organisation cap set here is that organisation's own: the workers' default
(`VALUERANK_WORKER_ORG_CONCURRENCY`) neither changes nor lifts it. A provider or model cap is
also what a rate bucket's adaptive `concurrency` keeps (`valuerank queue limits set
--concurrency`): the bucket moves it after a 429 or clean completions.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.queue.slots import (
    GLOBAL_KEY,
    SlotScope,
    list_caps,
    model_key,
    org_key,
    provider_key,
    remove_cap,
    set_cap,
)
from valuerank.shapes import dump


class CapNotFoundError(NotFoundError):
    code = "CAP_NOT_FOUND"


SCOPE_HINT = "name one of: --global, --org ORG, --provider PROVIDER, --model PROVIDER:MODEL"


def cap_target(
    *,
    everything: bool = False,
    org_id: str | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> tuple[SlotScope, str]:
    """The scope and key of the one cap named (INVALID_INPUT for none or several). A model
    names its provider by its prefix (`openai:gpt-4o`) or with `provider`."""
    named = [everything, org_id is not None, provider is not None or model is not None]
    if sum(named) != 1:
        raise InvalidInputError("name exactly one cap", hint=SCOPE_HINT)
    if everything:
        return SlotScope.GLOBAL, GLOBAL_KEY
    if org_id is not None:
        return SlotScope.ORG, org_key(org_id)
    if model is not None:
        if provider is None:
            provider = model.split(":", 1)[0] if ":" in model else None
        if not provider:
            raise InvalidInputError(f"which provider serves {model!r}?", hint=SCOPE_HINT)
        return SlotScope.MODEL, model_key(provider, model)
    assert provider is not None
    return SlotScope.PROVIDER, provider_key(provider)


async def set_concurrency_cap(
    conn: AsyncConnection,
    max_running: int,
    *,
    everything: bool = False,
    org_id: str | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """Create or change one cap; 0 removes it. Returns {key, scope, max (None: no cap)}."""
    if max_running < 0:
        raise InvalidInputError("a cap cannot be negative", hint="0 means no cap")
    scope, key = cap_target(everything=everything, org_id=org_id, provider=provider, model=model)
    if model is not None and provider is None:
        provider = model.split(":", 1)[0]
    await set_cap(conn, scope, max_running, org_id=org_id, provider=provider, model=model)
    return {"key": key, "scope": scope.value, "max": max_running or None}


async def remove_concurrency_cap(
    conn: AsyncConnection,
    *,
    everything: bool = False,
    org_id: str | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> str:
    """Lift one cap; CAP_NOT_FOUND when there is none. Returns its key."""
    _, key = cap_target(everything=everything, org_id=org_id, provider=provider, model=model)
    if not await remove_cap(conn, key):
        raise CapNotFoundError(f"no cap {key}", hint="see `valuerank queue caps list`")
    return key


async def cap_rows(conn: AsyncConnection) -> list[dict[str, Any]]:
    """Every cap as /api/queue/caps answers it (`Cap` is its shape)."""
    return dump(await list_caps(conn))  # type: ignore[no-any-return]
