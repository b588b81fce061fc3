"""The shapes of a provider registration (providers/registry.py): an adapter kind, the presets
(provider prefixes) it serves, and their catalog models. Pure data: no SDK, no registry state.

Every SDK-backed preset's base URL can be overridden by `VALUERANK_<NAME>_BASE_URL` (a proxy,
a self-hosted server on another port, or a fake server in end-to-end tests).

Catalog prices are USD per million input/output tokens; None means "price unknown", never
"free". Capabilities are what the API supports natively: `system_prompt`: a system message;
`temperature`: the sampling temperature is honoured (reasoning models fix it); `seed`: a
sampling seed; `json_schema`: output constrained to a JSON schema; `json_object`: JSON output
without a schema; `reasoning`: a reasoning model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from valuerank.providers.model_id import InvalidModelId, parse_model_id

CATEGORIES = ("frontier", "small", "open-weights", "local", "synthetic")
CAPABILITIES = ("system_prompt", "temperature", "seed", "json_schema", "json_object", "reasoning")


@dataclass(frozen=True)
class ProviderPreset:
    """What one provider prefix of a model id (`openai` in `openai:gpt-4.1`) means."""

    name: str
    # The adapter kind that builds it: an `AdapterSpec.kind` of the registry.
    kind: str
    # None: the SDK's own default endpoint.
    base_url: str | None = None
    # The environment variable holding the API key; None for providers that need none.
    api_key_env: str | None = None
    # Further variables accepted for the key, after `api_key_env` (e.g. GEMINI_API_KEY).
    api_key_env_aliases: tuple[str, ...] = ()
    # The variable that overrides `base_url`; None for kinds without an endpoint.
    base_url_env: str | None = None
    # The request field carrying the sampling seed, for servers that spell it differently
    # (Mistral: `random_seed`); None when the provider has no seed.
    seed_param: str | None = "seed"
    # Runs on this machine (no key, no internet): a local server or the embedded model.
    local: bool = False

    @property
    def needs_key(self) -> bool:
        return self.api_key_env is not None

    @property
    def api_key_envs(self) -> tuple[str, ...]:
        """Every variable that may hold the key, in the order they are read."""
        primary = (self.api_key_env,) if self.api_key_env else ()
        return primary + self.api_key_env_aliases

    def resolve_base_url(self, environ: Mapping[str, str]) -> str | None:
        """The base URL to use: the override variable when set, else the default."""
        if self.base_url_env:
            override = environ.get(self.base_url_env, "").strip()
            if override:
                return override
        return self.base_url


def sdk_preset(
    name: str,
    kind: str,
    base_url: str | None,
    api_key_env: str | None,
    *,
    aliases: tuple[str, ...] = (),
    seed_param: str | None = "seed",
    local: bool = False,
) -> ProviderPreset:
    """A preset served by an SDK adapter, its endpoint movable by `VALUERANK_<NAME>_BASE_URL`."""
    # A hyphen is no part of a shell variable's name.
    variable = f"VALUERANK_{name.upper().replace('-', '_')}_BASE_URL"
    return ProviderPreset(
        name=name,
        kind=kind,
        base_url=base_url,
        api_key_env=api_key_env,
        api_key_env_aliases=aliases,
        base_url_env=variable,
        seed_param=seed_param,
        local=local,
    )


@dataclass(frozen=True)
class CatalogModel:
    """A model the registry is seeded with. `name` is what the provider's API takes;
    `aliases` are other spellings seen in the CLI's files (`anthropic:claude-3.5-haiku`)."""

    provider: str
    name: str
    display_name: str
    category: str
    capabilities: tuple[str, ...]
    input_price_per_mtok: float | None
    output_price_per_mtok: float | None
    weight: float = 1.0
    active: bool = True
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def id(self) -> str:
        """The model id, `provider:name`, as in the CLI."""
        return f"{self.provider}:{self.name}"

    @property
    def synthetic(self) -> bool:
        return self.category == "synthetic"

    @property
    def priced(self) -> bool:
        return self.input_price_per_mtok is not None and self.output_price_per_mtok is not None

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities


def catalog_entry(
    provider: str,
    name: str,
    display_name: str,
    category: str,
    capabilities: tuple[str, ...],
    prices: tuple[float | None, float | None],
    *,
    aliases: tuple[str, ...] = (),
    description: str = "",
) -> CatalogModel:
    """A catalog model in one line: prices as (input, output) USD per million tokens."""
    return CatalogModel(
        provider,
        name,
        display_name,
        category,
        capabilities,
        input_price_per_mtok=prices[0],
        output_price_per_mtok=prices[1],
        aliases=aliases,
        description=description,
    )


@dataclass(frozen=True)
class AdapterSpec:
    """One adapter kind: how to build its providers, the presets it serves, their models.

    `module` is imported only when a provider of this kind is first built (so listing
    providers or `valuerank --help` never loads an SDK). Its `factory` is called as
    `factory(preset, api_key=..., base_url=..., timeout=...)`, or `factory(model_name)` when
    `builds_per_model` (one provider per model: the embedded and scripted kinds).
    """

    kind: str
    module: str
    factory: str
    presets: tuple[ProviderPreset, ...]
    models: tuple[CatalogModel, ...] = ()
    builds_per_model: bool = False

    def __post_init__(self) -> None:
        if not self.kind or not self.module or not self.factory:
            raise ValueError("an adapter spec needs a kind, a module and a factory")
        if not self.presets:
            raise ValueError(f"adapter {self.kind!r} serves no preset")
        names = [preset.name for preset in self.presets]
        if len(set(names)) != len(names):
            raise ValueError(f"adapter {self.kind!r} lists a preset twice: {names}")
        for preset in self.presets:
            if preset.kind != self.kind:
                raise ValueError(
                    f"preset {preset.name!r} is of kind {preset.kind!r}, not {self.kind!r}"
                )
            if not _is_provider_prefix(preset.name):
                raise ValueError(f"preset name {preset.name!r} cannot prefix a model id")
        spellings = [f"{m.provider}:{n}" for m in self.models for n in (m.name, *m.aliases)]
        if len(set(spellings)) != len(spellings):
            raise ValueError(f"adapter {self.kind!r} lists a model id or alias twice")
        for model in self.models:
            if model.provider not in names:
                raise ValueError(f"model {model.id!r} is of no preset of adapter {self.kind!r}")


def _is_provider_prefix(name: str) -> bool:
    try:
        return parse_model_id(f"{name}:model").provider == name
    except InvalidModelId:
        return False
