"""Seed data of the model registry: the models ValueRank knows out of the box, and lookups.

Each adapter declares its models with its presets in providers/registry.py (the one place);
`CATALOG` is the built-in adapters' models, and the lookups read every registered adapter's
unless given a catalog. Prices are USD per million input/output tokens as of `PRICES_AS_OF`;
the registry (the `models` table) is where they are corrected, this list only seeds it.
None means "price unknown", never "free". Fields and capabilities: providers/specs.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from valuerank.providers.registry import (
    BUILTIN_ADAPTERS,
    PRICES_AS_OF,
    SCRIPTED_PERSONAS,
    registered_models,
)
from valuerank.providers.specs import CAPABILITIES, CATEGORIES, CatalogModel

# The built-in adapters' models (what `registered_models()` is when nothing else registered).
CATALOG: tuple[CatalogModel, ...] = tuple(m for spec in BUILTIN_ADAPTERS for m in spec.models)


def catalog_model(
    model_id: str, catalog: Iterable[CatalogModel] | None = None
) -> CatalogModel | None:
    """The catalog entry of `provider:name` (aliases count, query strings are ignored), in
    `catalog` or else every registered adapter's models."""
    provider, _, name = model_id.strip().partition(":")
    name = name.split("?", 1)[0]
    for model in registered_models() if catalog is None else catalog:
        if model.provider == provider and (name == model.name or name in model.aliases):
            return model
    return None


def models_for_provider(
    provider: str, catalog: Iterable[CatalogModel] | None = None
) -> tuple[CatalogModel, ...]:
    models = registered_models() if catalog is None else catalog
    return tuple(model for model in models if model.provider == provider)


def active_models(catalog: Iterable[CatalogModel] | None = None) -> tuple[CatalogModel, ...]:
    models = registered_models() if catalog is None else catalog
    return tuple(model for model in models if model.active)


__all__ = [
    "CAPABILITIES",
    "CATALOG",
    "CATEGORIES",
    "PRICES_AS_OF",
    "SCRIPTED_PERSONAS",
    "CatalogModel",
    "active_models",
    "catalog_model",
    "models_for_provider",
    "registered_models",
]
