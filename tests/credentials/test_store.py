"""Stored provider credentials on SQLite and PostgreSQL: encrypted at rest, per organisation,
stored key before environment, clear errors, and no key in any repr, message or log."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from valuerank.config import get_settings
from valuerank.credentials import (
    CredentialUnreadable,
    MissingCredentialsError,
    delete_credential,
    list_credentials,
    require_credentials,
    resolve_api_key,
    set_credential,
)
from valuerank.crypto import SecretCipher, SecretKeyMissing, generate_key
from valuerank.db import Database
from valuerank.db.tables import provider_credentials
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.orgs import ensure_org
from valuerank.providers.model_id import ModelId

OPENAI_KEY = "sk-proj-store-test-0123456789-abcd"
ANTHROPIC_KEY = "sk-ant-store-test-9876543210-wxyz"
ENV_KEY = "sk-env-openai-1111222233334444-envk"
NO_ENV: dict[str, str] = {}


@pytest.fixture
def cipher() -> SecretCipher:
    return SecretCipher(generate_key())


@pytest.fixture
def settings_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """VALUERANK_SECRET_KEY set in the environment, read through the settings."""
    key = generate_key()
    monkeypatch.setenv("VALUERANK_SECRET_KEY", key)
    get_settings.cache_clear()
    yield key
    get_settings.cache_clear()


@pytest.fixture
def no_settings_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("VALUERANK_SECRET_KEY", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


async def _other_org(db: Database) -> str:
    async with db.transaction() as conn:
        return await ensure_org(conn, "other")


async def test_the_key_is_encrypted_at_rest(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        info = await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    assert info.provider == "openai" and info.source == "stored" and info.hint == "abcd"
    assert info.created_at is not None
    async with db.transaction() as conn:
        rows = (await conn.execute(select(provider_credentials))).all()
    [row] = rows
    assert row.org_id == org_id and row.provider == "openai" and row.hint == "abcd"
    assert OPENAI_KEY not in row.ciphertext
    assert OPENAI_KEY[:-4] not in str(tuple(row))
    assert cipher.decrypt(row.ciphertext) == OPENAI_KEY
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, "openai", environ=NO_ENV, cipher=cipher) == (
            OPENAI_KEY
        )


async def test_setting_again_replaces_the_key(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        info = await set_credential(
            conn, org_id, " OpenAI ", "  sk-second-key-00000000-zzzz\n", cipher=cipher
        )
    assert info.hint == "zzzz" and info.provider == "openai"
    async with db.transaction() as conn:
        rows = (await conn.execute(select(provider_credentials))).all()
        key = await resolve_api_key(conn, org_id, "openai", environ=NO_ENV, cipher=cipher)
    assert len(rows) == 1
    assert key == "sk-second-key-00000000-zzzz"


async def test_organisations_are_isolated(db: Database, org_id: str, cipher: SecretCipher) -> None:
    other = await _other_org(db)
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, other, "openai", environ=NO_ENV, cipher=cipher) is None
        assert await list_credentials(conn, other) == []
        with pytest.raises(NotFoundError):
            await delete_credential(conn, other, "openai")
    # B's own key does not touch A's.
    async with db.transaction() as conn:
        await set_credential(conn, other, "openai", ANTHROPIC_KEY, cipher=cipher)
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, "openai", environ=NO_ENV, cipher=cipher) == (
            OPENAI_KEY
        )
        assert await resolve_api_key(conn, other, "openai", environ=NO_ENV, cipher=cipher) == (
            ANTHROPIC_KEY
        )
        await delete_credential(conn, other, "openai")
    async with db.transaction() as conn:
        assert [c.provider for c in await list_credentials(conn, org_id)] == ["openai"]


async def test_a_changed_secret_key_makes_stored_keys_unreadable(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    wrong = SecretCipher(generate_key())
    async with db.transaction() as conn:
        with pytest.raises(CredentialUnreadable) as info:
            await resolve_api_key(
                conn, org_id, "openai", environ={"OPENAI_API_KEY": ENV_KEY}, cipher=wrong
            )
    err = info.value
    assert err.code == "CREDENTIAL_UNREADABLE"
    assert "VALUERANK_SECRET_KEY" in err.message and "changed" in err.message
    assert "openai" in err.message
    for text in (str(err), repr(err), str(err.to_dict())):
        assert OPENAI_KEY not in text and ENV_KEY not in text
    # Listing needs no decryption, so it still works.
    async with db.transaction() as conn:
        assert [c.hint for c in await list_credentials(conn, org_id)] == ["abcd"]


async def test_the_secret_key_comes_from_the_settings(
    db: Database, org_id: str, settings_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "anthropic", ANTHROPIC_KEY)
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, "anthropic", environ=NO_ENV) == ANTHROPIC_KEY
    monkeypatch.setenv("VALUERANK_SECRET_KEY", generate_key())
    get_settings.cache_clear()
    async with db.transaction() as conn:
        with pytest.raises(CredentialUnreadable):
            await resolve_api_key(conn, org_id, "anthropic", environ=NO_ENV)


async def test_a_passphrase_secret_works(
    db: Database, org_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", "a passphrase of reasonable length")
    get_settings.cache_clear()
    try:
        async with db.transaction() as conn:
            await set_credential(conn, org_id, "openai", OPENAI_KEY)
        async with db.transaction() as conn:
            assert await resolve_api_key(conn, org_id, "openai", environ=NO_ENV) == OPENAI_KEY
    finally:
        get_settings.cache_clear()


# PostgreSQL: a team server needs the key set explicitly (SQLite has its key file,
# tests/credentials/test_embedded_key.py and tests/api/test_embedded_secret_key.py).
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_without_a_secret_key_storing_fails_but_the_environment_works(
    db: Database, org_id: str, no_settings_secret: None, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        with pytest.raises(SecretKeyMissing) as info:
            await set_credential(conn, org_id, "openai", OPENAI_KEY)
    err = info.value
    assert err.code == "SECRET_KEY_MISSING"
    assert "VALUERANK_SECRET_KEY" in err.message
    assert "valuerank credentials keygen" in (err.hint or "")
    assert OPENAI_KEY not in str(err)
    async with db.transaction() as conn:
        assert await list_credentials(conn, org_id) == []
        env = {"OPENAI_API_KEY": ENV_KEY}
        assert await resolve_api_key(conn, org_id, "openai", environ=env) == ENV_KEY
        await require_credentials(conn, org_id, ["openai:gpt-4.1"], environ=env)
    # A stored key that cannot be opened is an error, never a silent switch to the env key.
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        with pytest.raises(SecretKeyMissing):
            await resolve_api_key(conn, org_id, "openai", environ={"OPENAI_API_KEY": ENV_KEY})


async def test_stored_key_wins_over_the_environment(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    env = {"OPENAI_API_KEY": ENV_KEY, "GEMINI_API_KEY": "gemini-env-key-000000000000"}
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, "openai", environ=env, cipher=cipher) == ENV_KEY
        # The alias variable of a provider counts.
        assert await resolve_api_key(conn, org_id, "google", environ=env, cipher=cipher) == (
            "gemini-env-key-000000000000"
        )
        assert await resolve_api_key(conn, org_id, "anthropic", environ=env, cipher=cipher) is None
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, "openai", environ=env, cipher=cipher) == (
            OPENAI_KEY
        )
        await delete_credential(conn, org_id, "openai")
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, "openai", environ=env, cipher=cipher) == ENV_KEY


@pytest.mark.parametrize("provider", ["local", "scripted", "ollama", "vllm", "llamacpp"])
async def test_providers_without_keys(
    db: Database, org_id: str, cipher: SecretCipher, provider: str
) -> None:
    async with db.transaction() as conn:
        assert await resolve_api_key(conn, org_id, provider, environ=NO_ENV) is None
        with pytest.raises(InvalidInputError, match="needs no API key"):
            await set_credential(conn, org_id, provider, OPENAI_KEY, cipher=cipher)
        await require_credentials(conn, org_id, [f"{provider}:some-model"], environ=NO_ENV)


@pytest.mark.parametrize(
    ("api_key", "message"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("sk-two words-123456", "whitespace"),
        ("x" * 5000, "longer"),
    ],
)
async def test_bad_keys_are_refused_without_echoing_them(
    db: Database, org_id: str, cipher: SecretCipher, api_key: str, message: str
) -> None:
    async with db.transaction() as conn:
        with pytest.raises(InvalidInputError, match=message) as info:
            await set_credential(conn, org_id, "openai", api_key, cipher=cipher)
    if api_key.strip():
        assert api_key.strip() not in str(info.value)


async def test_unknown_providers_are_refused(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        with pytest.raises(InvalidInputError, match="unknown provider"):
            await set_credential(conn, org_id, "nosuch", OPENAI_KEY, cipher=cipher)
        with pytest.raises(InvalidInputError, match="unknown provider"):
            await resolve_api_key(conn, org_id, "nosuch", environ=NO_ENV)


async def test_short_keys_get_no_hint(db: Database, org_id: str, cipher: SecretCipher) -> None:
    async with db.transaction() as conn:
        info = await set_credential(conn, org_id, "groq", "short-key", cipher=cipher)
    assert info.hint == "" and info.masked == "••••"
    async with db.transaction() as conn:
        [row] = (await conn.execute(select(provider_credentials.c.hint))).all()
    assert row.hint == ""


async def test_list_shows_hints_sources_and_never_keys(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
        await set_credential(conn, org_id, "anthropic", ANTHROPIC_KEY, cipher=cipher)
    env = {"OPENAI_API_KEY": ENV_KEY, "GROQ_API_KEY": "gsk-environment-key-0000-groq"}
    async with db.transaction() as conn:
        stored = await list_credentials(conn, org_id)
        both = await list_credentials(conn, org_id, environ=env)
    assert [(c.provider, c.source, c.hint) for c in stored] == [
        ("anthropic", "stored", "wxyz"),
        ("openai", "stored", "abcd"),
    ]
    assert [(c.provider, c.source, c.masked) for c in both] == [
        ("anthropic", "stored", "••••wxyz"),
        ("groq", "environment", "••••groq"),
        ("openai", "stored", "••••abcd"),
    ]
    groq = both[1]
    assert groq.env_var == "GROQ_API_KEY" and groq.created_at is None
    assert both[2].env_var == "OPENAI_API_KEY" and both[2].created_at is not None
    for item in both:
        for text in (repr(item), str(item), str(item.to_dict())):
            for key in (OPENAI_KEY, ANTHROPIC_KEY, ENV_KEY, "gsk-environment-key-0000-groq"):
                assert key not in text
    assert both[0].to_dict()["hint"] == "••••wxyz"


async def test_delete(db: Database, org_id: str, cipher: SecretCipher) -> None:
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        await delete_credential(conn, org_id, "OpenAI")
    async with db.transaction() as conn:
        assert await list_credentials(conn, org_id) == []
        with pytest.raises(NotFoundError) as info:
            await delete_credential(conn, org_id, "openai")
    assert info.value.code == "NOT_FOUND"


async def test_require_credentials_names_every_missing_provider(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    models = [
        "openai:gpt-4.1",
        "openai:gpt-4o",
        "anthropic:claude-sonnet-4-5",
        "google:gemini-2.5-pro",
        "scripted:contrarian?seed=3",
        "local:gemma3-270m",
        "ollama:llama3.2",
    ]
    async with db.transaction() as conn:
        with pytest.raises(MissingCredentialsError) as info:
            await require_credentials(conn, org_id, models, environ=NO_ENV, cipher=cipher)
    err = info.value
    assert err.code == "MISSING_CREDENTIAL"
    assert err.missing == {
        "anthropic": ("ANTHROPIC_API_KEY",),
        "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        "openai": ("OPENAI_API_KEY",),
    }
    for text in ("ANTHROPIC_API_KEY", "GOOGLE_API_KEY or GEMINI_API_KEY", "OPENAI_API_KEY"):
        assert text in err.message
    assert "valuerank credentials set" in (err.hint or "")

    # A stored key and an environment key each satisfy their provider.
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "anthropic", ANTHROPIC_KEY, cipher=cipher)
    env = {"GEMINI_API_KEY": "gemini-env-key-000000000000"}
    async with db.transaction() as conn:
        with pytest.raises(MissingCredentialsError) as info:
            await require_credentials(conn, org_id, models, environ=env, cipher=cipher)
        assert info.value.missing == {"openai": ("OPENAI_API_KEY",)}
        env["OPENAI_API_KEY"] = ENV_KEY
        await require_credentials(conn, org_id, models, environ=env, cipher=cipher)
        await require_credentials(
            conn, org_id, [ModelId("openai", "gpt-4.1")], environ=env, cipher=cipher
        )
        await require_credentials(conn, org_id, [], environ=NO_ENV, cipher=cipher)
    for text in (str(err), repr(err), str(err.to_dict())):
        assert ANTHROPIC_KEY not in text and ENV_KEY not in text


async def test_require_credentials_checks_stored_keys_decrypt(
    db: Database, org_id: str, cipher: SecretCipher
) -> None:
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        with pytest.raises(CredentialUnreadable):
            await require_credentials(
                conn,
                org_id,
                ["openai:gpt-4.1"],
                environ=NO_ENV,
                cipher=SecretCipher(generate_key()),
            )


async def test_require_credentials_rejects_bad_ids(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        with pytest.raises(InvalidInputError, match="not a model id"):
            await require_credentials(conn, org_id, ["gpt-4.1"], environ=NO_ENV)
        with pytest.raises(InvalidInputError, match="unknown provider: nosuch"):
            await require_credentials(conn, org_id, ["nosuch:model"], environ=NO_ENV)


async def test_no_key_reaches_the_logs(
    db: Database, org_id: str, cipher: SecretCipher, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    env = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    async with db.transaction() as conn:
        await set_credential(conn, org_id, "openai", OPENAI_KEY, cipher=cipher)
    async with db.transaction() as conn:
        await resolve_api_key(conn, org_id, "openai", environ=env, cipher=cipher)
        await list_credentials(conn, org_id, environ=env)
        await require_credentials(
            conn,
            org_id,
            ["openai:gpt-4.1", "anthropic:claude-haiku-4-5"],
            environ=env,
            cipher=cipher,
        )
        await delete_credential(conn, org_id, "openai")
    assert OPENAI_KEY not in caplog.text and ANTHROPIC_KEY not in caplog.text
