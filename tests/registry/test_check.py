"""Every model of a run is checked before anything is written: provider, persona, parameters,
local file, registry (unless unknown models are allowed). Both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from valuerank.db import Database
from valuerank.registry import seed_models, update_model
from valuerank.registry.check import check_models
from valuerank.registry.service import UnknownModelError


async def _check(db: Database, *models: str, allow_unknown: bool = False) -> None:
    async with db.transaction() as conn:
        await seed_models(conn)
        await check_models(conn, models, allow_unknown=allow_unknown)


async def _problem(db: Database, *models: str, allow_unknown: bool = False) -> UnknownModelError:
    with pytest.raises(UnknownModelError) as info:
        await _check(db, *models, allow_unknown=allow_unknown)
    assert info.value.code == "UNKNOWN_MODEL"
    return info.value


async def test_known_models_pass(db: Database) -> None:
    await _check(
        db,
        "scripted:utilitarian",
        "scripted:contrarian?latency_ms=5&seed=3",
        "openai:gpt-4.1",
        "anthropic:claude-sonnet-4-5",
        "local:gemma3-270m",
    )


async def test_an_unknown_persona_names_the_model_and_the_personas(db: Database) -> None:
    error = await _problem(db, "scripted:alpha")
    assert "scripted:alpha" in error.message and "'alpha'" in error.message
    for persona in ("utilitarian", "contrarian", "refuser"):
        assert persona in error.message
    # Allowing unknown models never makes an impossible one possible.
    await _problem(db, "scripted:alpha", allow_unknown=True)


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("scripted:utilitarian?bogus=1", "unknown parameter 'bogus'"),
        ("scripted:utilitarian?error_rate=2", "error_rate='2'"),
        ("foo:bar", "unknown provider 'foo'"),
        ("not-a-model-id", "is not 'provider:model'"),
        ("local:gemma-9000", "unknown local model 'gemma-9000'"),
    ],
)
async def test_impossible_models_are_refused(db: Database, model: str, said: str) -> None:
    assert said in (await _problem(db, model)).message


async def test_a_local_gguf_must_exist(db: Database, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.gguf"
    error = await _problem(db, f"local:{missing}")
    assert f"local model file not found: {missing}" in error.message


async def test_a_model_the_registry_does_not_know_needs_the_flag(db: Database) -> None:
    error = await _problem(db, "openai:gpt-9")
    assert "'openai:gpt-9' is not in the registry" in error.message
    assert "gpt-4.1" in error.message  # the registered choices are listed
    assert error.hint is not None and "--allow-unknown-model" in error.hint
    await _check(db, "openai:gpt-9", allow_unknown=True)


async def test_every_problem_is_reported_at_once(db: Database) -> None:
    error = await _problem(db, "scripted:alpha", "scripted:utilitarian", "openai:gpt-9")
    assert "scripted:alpha" in error.message and "openai:gpt-9" in error.message
    assert "scripted:utilitarian" not in error.message


async def test_an_inactive_model_is_refused(db: Database) -> None:
    async with db.transaction() as conn:
        await seed_models(conn)
        await update_model(conn, "openai:gpt-4.1", active=False)
    error = await _problem(db, "openai:gpt-4.1")
    assert "inactive" in error.message and "--active" in error.message
