"""/api/credentials: the organisation's provider API keys, stored encrypted
(VALUERANK_SECRET_KEY). A key is never answered: only its last four characters, and none of
a key the server's environment supplies."""

from __future__ import annotations

import os
from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.api.deps import Admin, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import SPACE, Body
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.accounts import CredentialList
from valuerank.credentials import delete_credential, list_credentials, set_credential
from valuerank.credentials.store import MAX_KEY_LENGTH
from valuerank.providers.presets import known_providers, preset_for

router = APIRouter(prefix="/api/credentials", tags=["credentials"])

# Documented, not enforced by FastAPI: the store answers any other name (unknown, or a
# provider that needs no key, e.g. a local server) with INVALID_INPUT saying why.
KEYED = [name for name in known_providers() if preset_for(name).needs_key]
Provider = Annotated[
    str, Path(description="A provider that takes an API key.", json_schema_extra={"enum": KEYED})
]


class KeyBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    # No blanks inside (the store trims the key, then refuses any whitespace left).
    api_key: str = Field(
        min_length=1, max_length=MAX_KEY_LENGTH, pattern=rf"^[{SPACE}]*[^{SPACE}\x00]+[{SPACE}]*$"
    )

    def __repr__(self) -> str:
        return "KeyBody(api_key=<hidden>)"


@router.get("", response_model=Envelope[CredentialList])
async def list_credentials_route(ctx: Viewer) -> JSONResponse:
    """Providers with a key: stored for this organisation (masked to the last 4 characters),
    or supplied by the server's environment (masked entirely). Not paginated: one entry per
    provider at most (`next_cursor` is always null)."""
    async with ctx.db.transaction() as conn:
        items = await list_credentials(conn, ctx.org_id, environ=os.environ, env_hints=False)
    data = [item.to_dict() for item in items]
    return ok({"credentials": data, "count": len(data), "next_cursor": None})


@router.put("/{provider}")
async def set_credential_route(provider: Provider, body: KeyBody, ctx: Admin) -> JSONResponse:
    """Store (or replace) the organisation's key for a provider, encrypted. On the embedded
    SQLite default without VALUERANK_SECRET_KEY, the key file beside the database encrypts
    it; elsewhere 503 SECRET_KEY_MISSING when the server has no VALUERANK_SECRET_KEY."""
    async with ctx.db.transaction(immediate=True) as conn:
        info = await set_credential(conn, ctx.org_id, provider, body.api_key)
    return ok(info.to_dict())


@router.delete("/{provider}")
async def delete_credential_route(provider: str, ctx: Admin) -> JSONResponse:
    """Delete the organisation's stored key for a provider (the environment's still applies)."""
    async with ctx.db.transaction(immediate=True) as conn:
        await delete_credential(conn, ctx.org_id, provider)
    return ok({"provider": provider.strip().lower(), "deleted": True})
