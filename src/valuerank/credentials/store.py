"""Provider API keys per organisation: stored encrypted, or read from the environment.

Resolution order for a provider that needs a key (`resolve_api_key`):

1. the organisation's stored key (`valuerank credentials set`), decrypted with
   `VALUERANK_SECRET_KEY` — an organisation's own key wins, so tenants never spend each
   other's (or the operator's) quota by accident;
2. else the provider's environment variable(s) from its preset (`OPENAI_API_KEY`, …);
3. else none (`None`); `require_credentials` turns that into `MISSING_CREDENTIAL` when a run is
   created, naming every provider without a key and the variable to set.

Only the ciphertext and a hint (the key's last four characters) are stored. Listing shows
hints, never keys; no repr, log line or error message here contains a key.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.credentials.embedded_key import secret_key_for
from valuerank.crypto import SecretCipher, SecretUnreadable, cipher_from_secret
from valuerank.db.tables import provider_credentials
from valuerank.errors import InvalidInputError, NotFoundError, ValueRankError
from valuerank.providers.factory import api_key_from_env
from valuerank.providers.model_id import InvalidModelId, ModelId, parse_model_id
from valuerank.providers.presets import ProviderPreset, UnknownProvider, known_providers, preset_for
from valuerank.queue.dialect import iso

CredentialSource = Literal["stored", "environment"]

MASK = "••••"
# Keys shorter than this get no hint: four characters would give away too much of them.
MIN_KEY_LENGTH_FOR_HINT = 12
MAX_KEY_LENGTH = 4096
SET_COMMAND = "valuerank credentials set PROVIDER"


class CredentialUnreadable(SecretUnreadable):
    """A stored API key does not decrypt: the secret key changed (or the row was altered)."""

    code = "CREDENTIAL_UNREADABLE"


class MissingCredentialsError(ValueRankError):
    """Providers of a run that have no API key: neither stored for the org nor in the env.

    `missing` maps each such provider to the environment variables that would supply its key.
    """

    code = "MISSING_CREDENTIAL"
    http_status = 422

    def __init__(self, missing: Mapping[str, tuple[str, ...]]) -> None:
        self.missing = dict(sorted(missing.items()))
        parts = [f"{p} (set {' or '.join(envs)})" for p, envs in self.missing.items()]
        super().__init__(
            f"no API key for {', '.join(parts)}",
            hint="export the variable where the workers run, or store an organisation key "
            f"with `{SET_COMMAND}`",
        )


@dataclass(frozen=True)
class CredentialInfo:
    """What may be shown about a credential: where it comes from and a hint, never the key."""

    provider: str
    source: CredentialSource
    # The key's last four characters ("" for short keys).
    hint: str
    # The variable the provider's key is read from when none is stored.
    env_var: str | None
    # When the stored key was set; None for keys from the environment.
    created_at: datetime | None

    @property
    def masked(self) -> str:
        """`••••abcd`: how a key is shown to people."""
        return MASK + self.hint

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "source": self.source,
            "hint": self.masked,
            "env_var": self.env_var,
            "created_at": iso(self.created_at),  # with its offset on both databases
        }


def key_hint(api_key: str) -> str:
    """The last four characters of a key long enough to spare them, else ""."""
    return api_key[-4:] if len(api_key) >= MIN_KEY_LENGTH_FOR_HINT else ""


def _preset(provider: str) -> ProviderPreset:
    try:
        return preset_for(provider)
    except UnknownProvider:
        raise InvalidInputError(
            f"unknown provider {provider!r}",
            hint=f"known providers: {', '.join(known_providers())}",
        ) from None


def _normalize_provider(provider: str) -> str:
    return provider.strip().lower()


def _clean_key(api_key: str) -> str:
    key = api_key.strip()
    if not key:
        raise InvalidInputError("the API key is empty")
    if any(ch.isspace() for ch in key):
        raise InvalidInputError(
            "the API key contains whitespace", hint="paste only the key, on one line"
        )
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInputError(f"the API key is longer than {MAX_KEY_LENGTH} characters")
    return key


def _cipher(conn: AsyncConnection, cipher: SecretCipher | None, purpose: str) -> SecretCipher:
    if cipher is not None:
        return cipher
    return cipher_from_secret(
        secret_key_for(conn),
        purpose=purpose,
        note="keys in provider environment variables work without it",
    )


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


async def set_credential(
    conn: AsyncConnection,
    org_id: str,
    provider: str,
    api_key: str,
    *,
    cipher: SecretCipher | None = None,
) -> CredentialInfo:
    """Store (or replace) the organisation's key for `provider`, encrypted.

    `cipher` defaults to one built from `VALUERANK_SECRET_KEY`; without a secret key this
    raises `SECRET_KEY_MISSING`, saying how to set one.
    """
    name = _normalize_provider(provider)
    preset = _preset(name)
    if not preset.needs_key:
        raise InvalidInputError(
            f"provider {name!r} needs no API key", hint="nothing to store for it"
        )
    key = _clean_key(api_key)
    box = _cipher(conn, cipher, f"storing an API key for {name}")
    hint = key_hint(key)
    values = {
        "id": str(uuid.uuid4()),
        "org_id": org_id,
        "provider": name,
        "ciphertext": box.encrypt(key),
        "hint": hint,
    }
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(provider_credentials).values(**values)
    upsert = stmt.on_conflict_do_update(
        index_elements=["org_id", "provider"],
        set_={
            "ciphertext": stmt.excluded.ciphertext,
            "hint": stmt.excluded.hint,
            # created_at says when the current key was stored.
            "created_at": func.now(),
        },
    ).returning(provider_credentials.c.created_at)
    created_at = (await conn.execute(upsert)).scalar_one()
    return CredentialInfo(name, "stored", hint, preset.api_key_env, created_at)


async def delete_credential(conn: AsyncConnection, org_id: str, provider: str) -> None:
    """Forget the organisation's stored key for `provider` (NOT_FOUND when there is none)."""
    name = _normalize_provider(provider)
    result = await conn.execute(
        delete(provider_credentials).where(
            provider_credentials.c.org_id == org_id, provider_credentials.c.provider == name
        )
    )
    if result.rowcount == 0:
        raise NotFoundError(
            f"no stored API key for provider {name!r} in this organisation",
            hint="`valuerank credentials list` shows the stored ones",
        )


async def list_credentials(
    conn: AsyncConnection,
    org_id: str,
    *,
    environ: Mapping[str, str] | None = None,
    env_hints: bool = True,
) -> list[CredentialInfo]:
    """The organisation's stored credentials (provider, hint, created_at), sorted by provider.

    With `environ`, also the providers whose key only comes from that environment
    (source "environment"); `env_hints=False` leaves their hint empty (the operator's keys,
    shown to an organisation over HTTP). Keys are never decrypted here: no secret key is needed.
    """
    rows = (
        await conn.execute(
            select(
                provider_credentials.c.provider,
                provider_credentials.c.hint,
                provider_credentials.c.created_at,
            ).where(provider_credentials.c.org_id == org_id)
        )
    ).all()
    found: dict[str, CredentialInfo] = {}
    for row in rows:
        try:
            env_var = preset_for(row.provider).api_key_env
        except UnknownProvider:
            env_var = None
        found[row.provider] = CredentialInfo(
            row.provider, "stored", row.hint, env_var, row.created_at
        )
    if environ is not None:
        for name in known_providers():
            preset = preset_for(name)
            if name in found or not preset.needs_key:
                continue
            key = api_key_from_env(name, environ)
            if key:
                hint = key_hint(key) if env_hints else ""
                found[name] = CredentialInfo(name, "environment", hint, preset.api_key_env, None)
    return [found[name] for name in sorted(found)]


# Built once: every model call's job reads it.
_CIPHERTEXT = select(provider_credentials.c.ciphertext).where(
    provider_credentials.c.org_id == bindparam("org_id"),
    provider_credentials.c.provider == bindparam("provider"),
)


async def _stored_ciphertext(conn: AsyncConnection, org_id: str, provider: str) -> str | None:
    value = await conn.scalar(_CIPHERTEXT, {"org_id": org_id, "provider": provider})
    return None if value is None else str(value)


async def resolve_api_key(
    conn: AsyncConnection,
    org_id: str,
    provider: str,
    *,
    environ: Mapping[str, str] | None = None,
    cipher: SecretCipher | None = None,
) -> str | None:
    """The key to call `provider` with for this organisation, or None.

    The organisation's stored key wins; else the provider's environment variable (`environ`
    defaults to `os.environ`). Providers that need no key (local servers, `local`,
    `scripted`) give None. A stored key that does not decrypt raises CREDENTIAL_UNREADABLE;
    one that exists while no secret key is set raises SECRET_KEY_MISSING — never a silent
    fallback to another key.
    """
    name = _normalize_provider(provider)
    preset = _preset(name)
    if not preset.needs_key:
        return None
    token = await _stored_ciphertext(conn, org_id, name)
    if token is not None:
        box = _cipher(conn, cipher, f"reading the stored API key for {name}")
        try:
            return box.decrypt(
                token,
                what=f"the stored API key for {name}",
                remedy=f"store the key again with `valuerank credentials set {name}`",
            )
        except SecretUnreadable as exc:
            raise CredentialUnreadable(exc.message, hint=exc.hint) from None
    return api_key_from_env(name, _environ(environ))


async def require_credentials(
    conn: AsyncConnection,
    org_id: str,
    model_ids: Iterable[str | ModelId],
    *,
    environ: Mapping[str, str] | None = None,
    cipher: SecretCipher | None = None,
) -> None:
    """Check, when a run is created, that every model's provider has a key.

    Raises INVALID_INPUT for malformed ids or unknown providers, MISSING_CREDENTIAL naming
    every provider without a key (and its variable), CREDENTIAL_UNREADABLE when a stored key
    no longer decrypts. Keys are checked in this process's environment; workers resolve
    them again when they call the provider.
    """
    providers: set[str] = set()
    invalid: list[str] = []
    for model_id in model_ids:
        if isinstance(model_id, ModelId):
            providers.add(model_id.provider)
            continue
        try:
            providers.add(parse_model_id(model_id).provider)
        except InvalidModelId:
            invalid.append(model_id)
    if invalid:
        raise InvalidInputError(
            f"not a model id: {', '.join(repr(i) for i in invalid)}",
            hint="model ids are 'provider:model', e.g. 'openai:gpt-4.1'",
        )
    unknown = sorted(p for p in providers if p not in known_providers())
    if unknown:
        raise InvalidInputError(
            f"unknown provider{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            hint=f"known providers: {', '.join(known_providers())}",
        )
    env = _environ(environ)
    missing: dict[str, tuple[str, ...]] = {}
    for name in sorted(providers):
        preset = preset_for(name)
        if not preset.needs_key:
            continue
        if await resolve_api_key(conn, org_id, name, environ=env, cipher=cipher) is None:
            missing[name] = preset.api_key_envs
    if missing:
        raise MissingCredentialsError(missing)
