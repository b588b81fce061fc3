"""The model registry on SQLite and PostgreSQL: idempotent seeding that keeps people's edits,
lookups (aliases, query strings), updates with validation, and prices."""

from __future__ import annotations

import asyncio
import math
import sqlite3

import pytest

from valuerank.db import Database
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.providers.catalog import CATALOG, catalog_model
from valuerank.providers.costs import estimate_run_cost
from valuerank.providers.model_id import ModelId
from valuerank.registry import (
    get_model,
    list_models,
    price_list,
    prices_for,
    seed_models,
    update_model,
    upsert_model,
)
from valuerank.registry.service import ensure_registry


async def _seeded(db: Database) -> None:
    async with db.transaction() as conn:
        await seed_models(conn)


async def test_seed_inserts_the_catalog_once(db: Database) -> None:
    async with db.transaction() as conn:
        first = await seed_models(conn)
    assert first.inserted == tuple(m.id for m in CATALOG) and first.existing == 0
    async with db.transaction() as conn:
        again = await seed_models(conn)
        listed = await list_models(conn)
    assert again.inserted == () and again.existing == len(CATALOG)
    assert again.to_dict() == {"inserted": [], "existing": len(CATALOG)}
    assert len(listed) == len(CATALOG)
    assert [m.id for m in listed] == sorted(
        (m.id for m in CATALOG), key=lambda i: tuple(i.split(":", 1))
    )
    by_id = {m.id: m for m in listed}
    for entry in CATALOG:
        row = by_id[entry.id]
        assert (row.provider, row.name, row.display_name) == (
            entry.provider,
            entry.name,
            entry.display_name,
        )
        assert row.category == entry.category and row.capabilities == entry.capabilities
        assert row.weight == entry.weight and row.active == entry.active
        assert row.input_price_per_mtok == entry.input_price_per_mtok
        assert row.output_price_per_mtok == entry.output_price_per_mtok


async def test_seed_adds_only_missing_models(db: Database) -> None:
    some = CATALOG[:3]
    async with db.transaction() as conn:
        assert (await seed_models(conn, some)).inserted == tuple(m.id for m in some)
    async with db.transaction() as conn:
        result = await seed_models(conn)
    assert result.existing == 3
    assert result.inserted == tuple(m.id for m in CATALOG[3:])
    async with db.transaction() as conn:
        assert (await seed_models(conn, [])).inserted == ()


async def test_edits_survive_a_reseed(db: Database) -> None:
    await _seeded(db)
    async with db.transaction() as conn:
        await update_model(
            conn,
            "openai:gpt-4.1",
            weight=2.5,
            active=False,
            input_price_per_mtok=1.0,
            output_price_per_mtok=None,
            display_name="GPT-4.1 (ours)",
            category="small",
            capabilities=["system_prompt"],
        )
    async with db.transaction() as conn:
        assert (await seed_models(conn)).inserted == ()
        model = await get_model(conn, "openai:gpt-4.1")
    assert model.weight == 2.5 and model.active is False
    assert model.input_price_per_mtok == 1.0 and model.output_price_per_mtok is None
    assert model.display_name == "GPT-4.1 (ours)" and model.category == "small"
    assert model.capabilities == ("system_prompt",)


async def test_list_filters(db: Database) -> None:
    await _seeded(db)
    async with db.transaction() as conn:
        await update_model(conn, "openai:gpt-4o", active=False)
        openai = await list_models(conn, provider="OpenAI")
        active = await list_models(conn, provider="openai", active_only=True)
        everything_active = await list_models(conn, active_only=True)
        none = await list_models(conn, provider="nosuch")
    expected = sorted(m.name for m in CATALOG if m.provider == "openai")
    assert [m.name for m in openai] == expected
    assert [m.name for m in active] == [n for n in expected if n != "gpt-4o"]
    assert all(m.active for m in everything_active)
    assert len(everything_active) == len([m for m in CATALOG if m.active]) - 1
    assert none == []


async def test_get_model_by_id_alias_and_query(db: Database) -> None:
    await _seeded(db)
    async with db.transaction() as conn:
        exact = await get_model(conn, "anthropic:claude-3-5-haiku-latest")
        alias = await get_model(conn, "anthropic:claude-3.5-haiku")
        scripted = await get_model(conn, "scripted:contrarian?seed=3")
        typed = await get_model(conn, ModelId("openai", "gpt-4.1"))
    assert alias == exact and alias.id == "anthropic:claude-3-5-haiku-latest"
    assert scripted.id == "scripted:contrarian" and scripted.category == "synthetic"
    assert typed.id == "openai:gpt-4.1"
    data = typed.to_dict()
    assert data["id"] == "openai:gpt-4.1" and data["capabilities"] == list(typed.capabilities)
    assert set(data) >= {"weight", "active", "input_price_per_mtok", "output_price_per_mtok"}


async def test_unknown_and_malformed_ids(db: Database) -> None:
    await _seeded(db)
    async with db.transaction() as conn:
        with pytest.raises(NotFoundError) as info:
            await get_model(conn, "openai:gpt-nonexistent")
        assert "models seed" in (info.value.hint or "")
        with pytest.raises(NotFoundError):
            await update_model(conn, "openai:gpt-nonexistent", weight=1.0)
        with pytest.raises(InvalidInputError):
            await get_model(conn, "no-colon")
        with pytest.raises(InvalidInputError):
            await prices_for(conn, ":missing-provider")


async def test_get_on_an_empty_registry_is_not_found(db: Database) -> None:
    async with db.transaction() as conn:
        with pytest.raises(NotFoundError):
            await get_model(conn, "openai:gpt-4.1")
        assert await prices_for(conn, "openai:gpt-4.1") is None
        assert await list_models(conn) == []


async def test_prices(db: Database) -> None:
    await _seeded(db)
    entry = catalog_model("openai:gpt-4.1")
    assert entry is not None
    async with db.transaction() as conn:
        assert await prices_for(conn, "openai:gpt-4.1") == (
            entry.input_price_per_mtok,
            entry.output_price_per_mtok,
        )
        assert await prices_for(conn, "scripted:random?seed=1") == (0.0, 0.0)
        assert await prices_for(conn, "openai:not-registered") is None
        await update_model(conn, "openai:gpt-4.1", output_price_per_mtok=None)
        assert await prices_for(conn, "openai:gpt-4.1") is None
        await update_model(
            conn, "openai:gpt-4.1", input_price_per_mtok=3, output_price_per_mtok=12.5
        )
        assert await prices_for(conn, "openai:gpt-4.1") == (3.0, 12.5)
        priced = await price_list(conn, ["openai:gpt-4.1", "openai:not-registered"])
    assert [(p.id, p.input_price_per_mtok, p.output_price_per_mtok) for p in priced] == [
        ("openai:gpt-4.1", 3.0, 12.5),
        ("openai:not-registered", None, None),
    ]
    estimate = estimate_run_cost(
        prompts=10, models=priced, prompt_tokens=1000, output_tokens_per_turn=100
    )
    assert estimate.unknown_price_models == ("openai:not-registered",)
    assert estimate.known_cost_usd == pytest.approx(10 * (1000 * 3 + 100 * 12.5) / 1e6)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"weight": -1.0}, "weight"),
        ({"weight": math.nan}, "weight"),
        ({"weight": math.inf}, "weight"),
        ({"input_price_per_mtok": -0.5}, "input price"),
        ({"output_price_per_mtok": math.inf}, "output price"),
        ({"display_name": "  "}, "display_name"),
        ({"category": "x" * 65}, "category"),
        ({"capabilities": ["system_prompt", "telepathy"]}, "telepathy"),
    ],
)
async def test_invalid_updates_are_refused(
    db: Database, changes: dict[str, object], message: str
) -> None:
    await _seeded(db)
    async with db.transaction() as conn:
        before = await get_model(conn, "openai:gpt-4.1")
        with pytest.raises(InvalidInputError, match=message):
            await update_model(conn, "openai:gpt-4.1", **changes)  # type: ignore[arg-type]
        assert await get_model(conn, "openai:gpt-4.1") == before


async def test_update_with_nothing_changes_nothing(db: Database) -> None:
    await _seeded(db)
    async with db.transaction() as conn:
        before = await get_model(conn, "openai:gpt-4.1")
        assert await update_model(conn, "openai:gpt-4.1") == before
        # Through an alias, the canonical row changes.
        after = await update_model(conn, "anthropic:claude-3.5-haiku", weight=0.5)
    assert after.id == "anthropic:claude-3-5-haiku-latest" and after.weight == 0.5


async def test_upsert_registers_custom_models(db: Database) -> None:
    async with db.transaction() as conn:
        custom = await upsert_model(
            conn,
            "openrouter:meta-llama/llama-3.1-70b-instruct",
            display_name="Llama 3.1 70B",
            category="open-weights",
            capabilities=["system_prompt", "temperature", "system_prompt"],
            input_price_per_mtok=0.4,
            output_price_per_mtok=0.4,
        )
    assert custom.id == "openrouter:meta-llama/llama-3.1-70b-instruct"
    assert custom.capabilities == ("system_prompt", "temperature")
    assert custom.weight == 1.0 and custom.active is True and custom.version == ""
    async with db.transaction() as conn:
        bare = await upsert_model(conn, "ollama:llama3.2")
        updated = await upsert_model(
            conn, "openrouter:meta-llama/llama-3.1-70b-instruct", weight=3.0, version="2024-07"
        )
        # Seeding never touches a model it does not know, nor one it knows and finds.
        await seed_models(conn)
        assert await prices_for(conn, "openrouter:meta-llama/llama-3.1-70b-instruct") == (
            0.4,
            0.4,
        )
    assert bare.display_name == "llama3.2" and bare.input_price_per_mtok is None
    assert bare.capabilities == () and bare.category == ""
    assert updated.weight == 3.0 and updated.version == "2024-07"
    assert updated.display_name == "Llama 3.1 70B"


async def test_upsert_of_a_catalog_model_starts_from_the_catalog(db: Database) -> None:
    async with db.transaction() as conn:
        model = await upsert_model(conn, "anthropic:claude-3.5-haiku", weight=0.25)
        result = await seed_models(conn)
    entry = catalog_model("anthropic:claude-3-5-haiku-latest")
    assert entry is not None
    assert model.id == entry.id and model.display_name == entry.display_name
    assert model.input_price_per_mtok == entry.input_price_per_mtok
    assert model.weight == 0.25
    assert entry.id not in result.inserted and result.existing == 1
    async with db.transaction() as conn:
        assert (await get_model(conn, entry.id)).weight == 0.25


async def test_upsert_refuses_unknown_providers_and_query_names(db: Database) -> None:
    async with db.transaction() as conn:
        with pytest.raises(InvalidInputError, match="unknown provider"):
            await upsert_model(conn, "nosuch:model")
        with pytest.raises(InvalidInputError, match="query string"):
            await upsert_model(conn, "scripted:custom?seed=1")
        with pytest.raises(InvalidInputError):
            await upsert_model(conn, "openai:x", weight=-2)
        assert await list_models(conn) == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_reader_seeds_an_empty_registry_after_a_writer_commits(db: Database) -> None:
    """The first page or API read seeds the registry while a worker may be writing. Seeding
    inside the reader's transaction failed at once on SQLite ("database is locked": a read
    snapshot cannot turn into a write after another writer committed); `ensure_registry`
    waits for the writer and seeds in a write transaction of its own."""
    path = db.url.sqlite_path
    assert path is not None
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO orgs (id, slug, name) VALUES ('w', 'writer', 'Writer')")
        seeding = asyncio.create_task(ensure_registry(db))
        await asyncio.sleep(0.5)  # the reader has looked (an empty registry) and waits
        writer.execute("COMMIT")
        await asyncio.wait_for(seeding, 30)
    finally:
        writer.close()
    async with db.transaction() as conn:
        assert len(await list_models(conn)) == len(CATALOG)
