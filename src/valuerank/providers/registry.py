"""The adapter registry: every adapter kind ValueRank can build, each registered once with the
presets (provider prefixes) it serves and their catalog models. The one place a provider is
declared; `presets`, `catalog` and `factory` read it. No SDK is imported here: `module` names
where the adapter lives, and `factory.build_provider` imports it on first use.

Catalog prices are standard (non-batch, non-cached, short context) rates from the providers'
public price lists as last known to us (`PRICES_AS_OF`); they only seed the registry's
`models` table, where they are corrected. Local and synthetic models really cost 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

from valuerank.providers.specs import (
    AdapterSpec,
    CatalogModel,
    ProviderPreset,
    catalog_entry,
    sdk_preset,
)

PRICES_AS_OF = "2025-12"

_CHAT = ("system_prompt", "temperature")
_OPENAI = (*_CHAT, "seed", "json_schema", "json_object")
_OPENAI_REASONING = ("system_prompt", "seed", "json_schema", "json_object", "reasoning")
_ANTHROPIC = _CHAT
_ANTHROPIC_STRUCTURED = (*_CHAT, "json_schema")
_GOOGLE = (*_CHAT, "seed", "json_schema", "json_object", "reasoning")
_XAI = (*_CHAT, "seed", "json_schema", "json_object")
_LOCAL = (*_CHAT, "seed", "json_schema", "json_object")
_SCRIPTED = (*_CHAT, "seed", "json_schema", "json_object")

# The personas of providers/scripted.py (a test keeps the two lists equal).
SCRIPTED_PERSONAS = (
    "utilitarian",
    "deontologist",
    "contrarian",
    "centrist",
    "agreeable",
    "neutral",
    "random",
    "refuser",
    "rambler",
)
_PERSONA = "Deterministic scripted persona for tests and load tests; no real model wrote it."

_m = catalog_entry

OPENAI = AdapterSpec(
    kind="openai",
    module="valuerank.providers.openai_adapter",
    factory="build_openai_provider",
    presets=(
        sdk_preset("openai", "openai", None, "OPENAI_API_KEY"),
        # OpenAI-compatible servers on this machine: no key (the SDK sends a placeholder).
        sdk_preset("ollama", "openai", "http://127.0.0.1:11434/v1", None, local=True),
        sdk_preset("vllm", "openai", "http://127.0.0.1:8000/v1", None, local=True),
        sdk_preset("llamacpp", "openai", "http://127.0.0.1:8080/v1", None, local=True),
        # Hosted OpenAI-compatible APIs.
        sdk_preset("openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        sdk_preset("together", "openai", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
        sdk_preset("groq", "openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        sdk_preset("deepseek", "openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        sdk_preset("xai", "openai", "https://api.x.ai/v1", "XAI_API_KEY"),
        sdk_preset(
            "mistral",
            "openai",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            seed_param="random_seed",
        ),
    ),
    models=(
        _m("openai", "gpt-5", "GPT-5", "frontier", _OPENAI_REASONING, (1.25, 10.00)),
        _m("openai", "gpt-5-mini", "GPT-5 mini", "small", _OPENAI_REASONING, (0.25, 2.00)),
        _m("openai", "gpt-4.1", "GPT-4.1", "frontier", _OPENAI, (2.00, 8.00)),
        _m("openai", "gpt-4.1-mini", "GPT-4.1 mini", "small", _OPENAI, (0.40, 1.60)),
        _m("openai", "gpt-4o", "GPT-4o", "frontier", _OPENAI, (2.50, 10.00)),
        _m("openai", "gpt-4o-mini", "GPT-4o mini", "small", _OPENAI, (0.15, 0.60)),
        _m("openai", "o4-mini", "o4-mini", "small", _OPENAI_REASONING, (1.10, 4.40)),
        _m("xai", "grok-4", "Grok 4", "frontier", (*_XAI, "reasoning"), (3.00, 15.00)),
        _m("xai", "grok-3", "Grok 3", "frontier", _XAI, (3.00, 15.00)),
        # Open weights served by their makers
        _m(
            "deepseek",
            "deepseek-chat",
            "DeepSeek Chat",
            "open-weights",
            (*_CHAT, "json_object"),
            (0.28, 0.42),
        ),
        _m(
            "mistral",
            "mistral-large-latest",
            "Mistral Large",
            "open-weights",
            (*_CHAT, "seed", "json_schema", "json_object"),
            (0.50, 1.50),
        ),
    ),
)

ANTHROPIC = AdapterSpec(
    kind="anthropic",
    module="valuerank.providers.anthropic_adapter",
    factory="build_anthropic_provider",
    # Anthropic has no seed parameter.
    presets=(sdk_preset("anthropic", "anthropic", None, "ANTHROPIC_API_KEY", seed_param=None),),
    models=(
        _m(
            "anthropic",
            "claude-opus-4-1",
            "Claude Opus 4.1",
            "frontier",
            _ANTHROPIC_STRUCTURED,
            (15.00, 75.00),
        ),
        _m(
            "anthropic",
            "claude-sonnet-4-5",
            "Claude Sonnet 4.5",
            "frontier",
            _ANTHROPIC_STRUCTURED,
            (3.00, 15.00),
        ),
        _m(
            "anthropic",
            "claude-sonnet-4-0",
            "Claude Sonnet 4",
            "frontier",
            _ANTHROPIC,
            (3.00, 15.00),
        ),
        _m("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5", "small", _ANTHROPIC, (1.00, 5.00)),
        _m(
            "anthropic",
            "claude-3-5-haiku-latest",
            "Claude 3.5 Haiku",
            "small",
            _ANTHROPIC,
            (0.80, 4.00),
            aliases=("claude-3.5-haiku", "claude-3-5-haiku"),
        ),
    ),
)

GOOGLE = AdapterSpec(
    kind="google",
    module="valuerank.providers.google_adapter",
    factory="build_google_provider",
    presets=(sdk_preset("google", "google", None, "GOOGLE_API_KEY", aliases=("GEMINI_API_KEY",)),),
    # Prices for prompts up to 200k tokens.
    models=(
        _m("google", "gemini-2.5-pro", "Gemini 2.5 Pro", "frontier", _GOOGLE, (1.25, 10.00)),
        _m("google", "gemini-2.5-flash", "Gemini 2.5 Flash", "small", _GOOGLE, (0.30, 2.50)),
    ),
)

# Embedded: llama.cpp in-process (the `local` extra), imported only when a model is served.
LOCAL = AdapterSpec(
    kind="local",
    module="valuerank.providers.local",
    factory="build_local_provider",
    builds_per_model=True,
    presets=(ProviderPreset(name="local", kind="local", local=True),),
    models=(
        _m(
            "local",
            "gemma3-270m",
            "Gemma 3 270M (local)",
            "local",
            _LOCAL,
            (0.0, 0.0),
            description="Runs in-process through llama.cpp; no key, no network.",
        ),
    ),
)

SCRIPTED = AdapterSpec(
    kind="scripted",
    module="valuerank.providers.scripted",
    factory="build_scripted_provider",
    builds_per_model=True,
    presets=(ProviderPreset(name="scripted", kind="scripted", local=True),),
    models=tuple(
        _m(
            "scripted",
            persona,
            f"Scripted: {persona}",
            "synthetic",
            _SCRIPTED,
            (0.0, 0.0),
            description=_PERSONA,
        )
        for persona in SCRIPTED_PERSONAS
    ),
)

BUILTIN_ADAPTERS: tuple[AdapterSpec, ...] = (OPENAI, ANTHROPIC, GOOGLE, LOCAL, SCRIPTED)


class UnknownAdapter(LookupError):
    """An adapter kind the registry does not hold."""


# The registry's state: the specs by kind, and their presets by provider name (a preset's
# name is unique across every adapter: it is the prefix of a model id). Kinds and presets
# share one set of names: a name is one adapter's kind (and its own preset's, as `openai`),
# or one preset, never a kind of one adapter and a preset of another (a native `mistral`
# adapter beside the OpenAI-compatible `mistral` preset would make `mistral` two things).
_adapters: dict[str, AdapterSpec] = {}
_presets: dict[str, ProviderPreset] = {}
# What readers get: a live, read-only view.
PRESETS_BY_NAME: Mapping[str, ProviderPreset] = MappingProxyType(_presets)


def register_adapter(spec: AdapterSpec) -> None:
    """Add an adapter kind with its presets and models; a kind or preset name already
    registered is refused (nothing is changed then)."""
    if spec.kind in _adapters:
        raise ValueError(f"adapter kind {spec.kind!r} is already registered")
    taken = sorted(p.name for p in spec.presets if p.name in _presets)
    if taken:
        raise ValueError(f"provider names already registered: {', '.join(taken)}")
    clash = _name_clash(spec)
    if clash:
        raise ValueError(clash)
    _adapters[spec.kind] = spec
    _presets.update((preset.name, preset) for preset in spec.presets)


def _name_clash(spec: AdapterSpec) -> str | None:
    """Why `spec` would give a registered name a second meaning (None: it would not)."""
    if spec.kind in _presets:
        owner = _presets[spec.kind].kind
        return (
            f"adapter kind {spec.kind!r} is the name of a provider preset of adapter {owner!r}: "
            "name the kind otherwise (one name means one thing)"
        )
    kinds = sorted(p.name for p in spec.presets if p.name in _adapters)
    if kinds:
        return (
            f"provider names already registered as adapter kinds: {', '.join(kinds)} "
            "(one name means one thing)"
        )
    return None


def unregister_adapter(kind: str) -> AdapterSpec:
    """Remove an adapter kind, its presets and its models; the spec that was registered."""
    spec = adapter_spec(kind)
    del _adapters[kind]
    for preset in spec.presets:
        del _presets[preset.name]
    return spec


@contextmanager
def registered_adapter(spec: AdapterSpec) -> Iterator[AdapterSpec]:
    """`spec` registered for the `with` block only (tests, plugins tried out)."""
    register_adapter(spec)
    try:
        yield spec
    finally:
        unregister_adapter(spec.kind)


def adapter_spec(kind: str) -> AdapterSpec:
    try:
        return _adapters[kind]
    except KeyError:
        raise UnknownAdapter(
            f"unknown adapter kind {kind!r}; registered: {', '.join(sorted(_adapters))}"
        ) from None


def adapter_specs() -> tuple[AdapterSpec, ...]:
    """The registered specs, in registration order."""
    return tuple(_adapters.values())


def registered_models() -> tuple[CatalogModel, ...]:
    """The catalog now: every registered adapter's models, in registration order."""
    return tuple(model for spec in _adapters.values() for model in spec.models)


for _builtin in BUILTIN_ADAPTERS:
    register_adapter(_builtin)
