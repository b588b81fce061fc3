"""What each provider prefix of a model id means: which adapter, where, and which key.

Presets are declared with their adapter in providers/registry.py (the one place); these are
the lookups. Every SDK-backed preset's base URL can be overridden by
`VALUERANK_<NAME>_BASE_URL` (a proxy, a self-hosted server on another port, or a fake server
in end-to-end tests).
"""

from __future__ import annotations

from collections.abc import Mapping

from valuerank.providers.registry import PRESETS_BY_NAME
from valuerank.providers.specs import ProviderPreset


class UnknownProvider(ValueError):
    """A model id whose provider prefix no preset knows."""


# Every registered preset by name: a live read-only view (adapters registered later show).
PRESETS: Mapping[str, ProviderPreset] = PRESETS_BY_NAME


def known_providers() -> tuple[str, ...]:
    return tuple(sorted(PRESETS))


def preset_for(provider_name: str) -> ProviderPreset:
    """The preset of a model id's provider prefix (`openai` in `openai:gpt-4.1`)."""
    try:
        return PRESETS[provider_name]
    except KeyError:
        raise UnknownProvider(
            f"unknown provider {provider_name!r}; known providers: {', '.join(known_providers())}"
        ) from None


__all__ = ["PRESETS", "ProviderPreset", "UnknownProvider", "known_providers", "preset_for"]
