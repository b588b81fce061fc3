"""The model catalog: seed data that is complete, consistent and findable by model id."""

from __future__ import annotations

import dataclasses

import pytest
from tests.cli_corpus import Corpus

from valuerank.formats import parse_transcript
from valuerank.providers.catalog import (
    CAPABILITIES,
    CATALOG,
    CATEGORIES,
    SCRIPTED_PERSONAS,
    CatalogModel,
    active_models,
    catalog_model,
    models_for_provider,
)
from valuerank.providers.model_id import parse_model_id
from valuerank.providers.presets import PRESETS

REQUIRED = [
    "openai:gpt-4.1",
    "openai:gpt-4.1-mini",
    "openai:gpt-4o",
    "openai:gpt-4o-mini",
    "openai:o4-mini",
    "openai:gpt-5",
    "openai:gpt-5-mini",
    "anthropic:claude-sonnet-4-5",
    "anthropic:claude-sonnet-4-0",
    "anthropic:claude-3.5-haiku",
    "anthropic:claude-haiku-4-5",
    "anthropic:claude-opus-4-1",
    "google:gemini-2.5-pro",
    "google:gemini-2.5-flash",
    "xai:grok-3",
    "xai:grok-4",
    "deepseek:deepseek-chat",
    "mistral:mistral-large-latest",
    "local:gemma3-270m",
    "scripted:contrarian",
]


@pytest.mark.parametrize("model_id", REQUIRED)
def test_required_models_are_listed(model_id: str) -> None:
    model = catalog_model(model_id)
    assert model is not None, model_id
    assert model.provider == model_id.split(":", 1)[0]
    assert model.active


def test_ids_and_aliases_are_unique_and_valid() -> None:
    spellings = [f"{m.provider}:{name}" for m in CATALOG for name in (m.name, *m.aliases)]
    assert len(spellings) == len(set(spellings))
    for model in CATALOG:
        assert str(parse_model_id(model.id)) == model.id


def test_fields_are_consistent() -> None:
    for model in CATALOG:
        assert model.category in CATEGORIES, model.id
        assert model.capabilities, model.id
        assert set(model.capabilities) <= set(CAPABILITIES), model.id
        assert len(set(model.capabilities)) == len(model.capabilities), model.id
        assert model.weight == 1.0
        assert model.display_name.strip()
        assert model.provider in PRESETS, model.id
        for price in (model.input_price_per_mtok, model.output_price_per_mtok):
            assert price is not None and price >= 0, model.id
        assert model.priced


def test_every_scripted_persona_is_listed() -> None:
    from valuerank.providers.scripted import PERSONAS

    assert tuple(PERSONAS) == SCRIPTED_PERSONAS
    assert tuple(m.name for m in models_for_provider("scripted")) == SCRIPTED_PERSONAS


def test_real_models_cost_money_and_synthetic_ones_are_free() -> None:
    for model in CATALOG:
        free = model.input_price_per_mtok == 0 and model.output_price_per_mtok == 0
        assert free == (model.category in ("local", "synthetic")), model.id
        assert model.synthetic == (model.provider == "scripted"), model.id
        if not free:
            assert model.output_price_per_mtok is not None
            assert model.input_price_per_mtok is not None
            assert model.output_price_per_mtok >= model.input_price_per_mtok, model.id


def test_capabilities_follow_the_providers() -> None:
    for model in models_for_provider("anthropic"):
        assert not model.supports("seed"), model.id  # the API has no seed parameter
        assert model.supports("system_prompt")
    for model_id in ("openai:o4-mini", "openai:gpt-5", "openai:gpt-5-mini"):
        reasoning = catalog_model(model_id)
        assert reasoning is not None
        assert reasoning.supports("reasoning") and not reasoning.supports("temperature")
    gpt = catalog_model("openai:gpt-4.1")
    assert gpt is not None
    assert all(gpt.supports(c) for c in ("json_schema", "seed", "system_prompt", "temperature"))


@pytest.mark.parametrize(
    ("model_id", "prices"),
    [
        ("openai:gpt-4.1", (2.0, 8.0)),
        ("openai:gpt-4.1-mini", (0.4, 1.6)),
        ("openai:gpt-4o-mini", (0.15, 0.6)),
        ("anthropic:claude-sonnet-4-5", (3.0, 15.0)),
        ("anthropic:claude-opus-4-1", (15.0, 75.0)),
        ("google:gemini-2.5-pro", (1.25, 10.0)),
        ("local:gemma3-270m", (0.0, 0.0)),
    ],
)
def test_known_prices(model_id: str, prices: tuple[float, float]) -> None:
    model = catalog_model(model_id)
    assert model is not None
    assert (model.input_price_per_mtok, model.output_price_per_mtok) == prices


def test_lookup() -> None:
    haiku = catalog_model("anthropic:claude-3.5-haiku")
    assert haiku is not None and haiku.name == "claude-3-5-haiku-latest"
    assert catalog_model("anthropic:claude-3-5-haiku-latest") is haiku
    persona = catalog_model("scripted:contrarian?seed=3")
    assert persona is not None and persona.category == "synthetic"
    assert catalog_model(" openai:gpt-4.1 ") is not None
    assert catalog_model("openai:gpt-9") is None
    assert catalog_model("gpt-4.1") is None
    assert catalog_model("xai:gpt-4.1") is None
    assert catalog_model("") is None


def test_lookup_in_another_catalog() -> None:
    custom = (CatalogModel("acme", "m1", "M1", "small", ("system_prompt",), None, None),)
    found = catalog_model("acme:m1", custom)
    assert found is not None and not found.priced
    assert catalog_model("openai:gpt-4.1", custom) is None


def test_helpers() -> None:
    assert {m.provider for m in models_for_provider("openai")} == {"openai"}
    assert len(models_for_provider("openai")) == 7
    assert active_models() == tuple(m for m in CATALOG if m.active)
    inactive = dataclasses.replace(CATALOG[0], active=False)
    assert active_models((inactive, CATALOG[1])) == (CATALOG[1],)


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG[0].weight = 2.0  # type: ignore[misc]


def test_models_of_the_cli_transcripts_are_listed(cli_corpus: Corpus) -> None:
    paths = cli_corpus.transcripts
    assert len(paths) == 3
    for path in paths:
        transcript = parse_transcript(path.read_text(encoding="utf-8"), path.name)
        assert catalog_model(transcript.target_model) is not None, transcript.target_model
