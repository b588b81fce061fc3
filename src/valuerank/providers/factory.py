"""Build the `Provider` for a model id's provider prefix, and find or demand its API key."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from valuerank.providers.base import MissingCredential, Provider
from valuerank.providers.presets import ProviderPreset, preset_for
from valuerank.providers.registry import adapter_spec
from valuerank.providers.specs import AdapterSpec

# What a `builds_per_model` adapter's factory is: the model part of the id to a provider.
ModelFactory = Callable[[str], Provider]


class SdkFactory(Protocol):
    """What an SDK adapter's factory is (`AdapterSpec.factory`)."""

    def __call__(
        self,
        preset: ProviderPreset,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
    ) -> Provider: ...


def api_key_from_env(
    provider: str | ProviderPreset, environ: Mapping[str, str] = os.environ
) -> str | None:
    """The provider's API key from the environment (first non-empty of its variables), or None.

    `provider` is a provider name or its preset. None too for providers that need no key
    (local servers, `local`, `scripted`).
    """
    preset = provider if isinstance(provider, ProviderPreset) else preset_for(provider)
    for variable in preset.api_key_envs:
        value = environ.get(variable, "").strip()
        if value:
            return value
    return None


def require_api_key(provider_name: str, api_key: str | None) -> str | None:
    """The key, or `MissingCredential` saying how to provide one when the provider needs it."""
    preset = preset_for(provider_name)
    if api_key and api_key.strip():
        return api_key.strip()
    if not preset.needs_key:
        return None
    variables = " or ".join(preset.api_key_envs)
    raise MissingCredential(
        f"no API key for provider {provider_name!r}: set {variables} in the environment, "
        f"or store one with `valuerank credentials set {provider_name}`"
    )


def build_provider(
    provider_name: str,
    *,
    api_key: str | None,
    base_url: str | None = None,
    timeout: float = 120.0,
    model_name: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Provider:
    """The provider for `provider_name` (the prefix of `provider:model`), built by the
    factory its adapter registered (providers/registry.py).

    `base_url` overrides the preset's (and its `VALUERANK_<NAME>_BASE_URL`). A missing key of a
    provider that needs one raises `MissingCredential`; keys are never read implicitly here,
    the caller passes the stored or `api_key_from_env` one. Kinds that build one provider per
    model (`local`, `scripted`) need `model_name` (the part after the colon).
    """
    preset = preset_for(provider_name)
    spec = adapter_spec(preset.kind)
    if spec.builds_per_model:
        if model_name is None:
            raise ValueError(f"provider {provider_name!r} needs model_name= (the model part)")
        build_for_model: ModelFactory = _factory(spec)
        return build_for_model(model_name)
    key = require_api_key(provider_name, api_key)
    url = base_url or preset.resolve_base_url(environ)
    build: SdkFactory = _factory(spec)
    return build(preset, api_key=key, base_url=url, timeout=timeout)


def _factory(spec: AdapterSpec) -> Any:
    # Imported late: an SDK (or llama.cpp, an optional extra) loads only when its kind is used.
    return getattr(importlib.import_module(spec.module), spec.factory)
