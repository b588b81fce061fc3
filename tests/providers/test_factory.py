"""Building providers from provider names, and finding or demanding their API keys."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from valuerank.providers.anthropic_adapter import AnthropicProvider
from valuerank.providers.base import (
    CompletionRequest,
    Message,
    MissingCredential,
    Provider,
    ProviderPermanent,
)
from valuerank.providers.factory import api_key_from_env, build_provider, require_api_key
from valuerank.providers.google_adapter import GoogleProvider
from valuerank.providers.openai_adapter import OpenAIProvider
from valuerank.providers.presets import UnknownProvider, preset_for

if TYPE_CHECKING:
    from tests.providers.fake_servers import AnthropicServer, GoogleServer, OpenAIServer

REQUEST = CompletionRequest(
    model="some-model", messages=(Message("user", "Rate 1-5."),), seed=7, max_tokens=20
)


def test_api_key_from_env_reads_the_providers_variable() -> None:
    environ = {"OPENAI_API_KEY": "  sk-openai  ", "GROQ_API_KEY": "gsk"}
    assert api_key_from_env("openai", environ) == "sk-openai"
    assert api_key_from_env("groq", environ) == "gsk"
    assert api_key_from_env("anthropic", environ) is None


def test_api_key_from_env_accepts_a_preset() -> None:
    assert api_key_from_env(preset_for("xai"), {"XAI_API_KEY": "xai-1"}) == "xai-1"


def test_google_key_falls_back_to_gemini_api_key() -> None:
    assert api_key_from_env("google", {"GEMINI_API_KEY": "gem"}) == "gem"
    assert api_key_from_env("google", {"GOOGLE_API_KEY": "", "GEMINI_API_KEY": "gem"}) == "gem"
    both = {"GOOGLE_API_KEY": "goo", "GEMINI_API_KEY": "gem"}
    assert api_key_from_env("google", both) == "goo"


def test_keyless_providers_have_no_key_in_the_environment() -> None:
    for name in ("ollama", "vllm", "llamacpp", "local", "scripted"):
        assert api_key_from_env(name, {"OPENAI_API_KEY": "sk"}) is None


def test_api_key_from_env_rejects_unknown_providers() -> None:
    with pytest.raises(UnknownProvider):
        api_key_from_env("nope", {})


def test_require_api_key_says_what_to_do() -> None:
    with pytest.raises(MissingCredential) as caught:
        require_api_key("anthropic", None)
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY" in message
    assert "valuerank credentials set anthropic" in message
    assert isinstance(caught.value, ProviderPermanent)


def test_require_api_key_names_every_variable_that_works() -> None:
    with pytest.raises(MissingCredential, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        require_api_key("google", "   ")


def test_require_api_key_passes_keys_and_keyless_providers() -> None:
    assert require_api_key("openai", " sk-1 ") == "sk-1"
    assert require_api_key("ollama", None) is None
    assert require_api_key("vllm", "token") == "token"


async def test_build_provider_picks_the_adapter_of_the_preset() -> None:
    built = [
        build_provider("openai", api_key="sk", environ={}),
        build_provider("anthropic", api_key="sk-ant", environ={}),
        build_provider("google", api_key="AIza", environ={}),
        build_provider("ollama", api_key=None, environ={}),
        build_provider("openrouter", api_key="or", environ={}),
    ]
    try:
        kinds = [type(p) for p in built]
        assert kinds == [
            OpenAIProvider,
            AnthropicProvider,
            GoogleProvider,
            OpenAIProvider,
            OpenAIProvider,
        ]
        assert [p.name for p in built] == ["openai", "anthropic", "google", "ollama", "openrouter"]
        assert all(isinstance(p, Provider) for p in built)
    finally:
        for provider in built:
            await provider.aclose()


def test_build_provider_demands_a_key_first() -> None:
    with pytest.raises(MissingCredential, match="DEEPSEEK_API_KEY"):
        build_provider("deepseek", api_key=None, environ={})


def test_build_provider_rejects_unknown_providers() -> None:
    with pytest.raises(UnknownProvider, match="known providers"):
        build_provider("gpt", api_key="sk")


async def test_a_compatible_preset_talks_to_its_overridden_endpoint(
    openai_server: OpenAIServer,
) -> None:
    provider = build_provider(
        "mistral",
        api_key="mistral-key",
        environ={"VALUERANK_MISTRAL_BASE_URL": openai_server.base_url},
    )
    try:
        completion = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert completion.text.startswith("Rating: 4")
    sent = openai_server.last
    assert sent.headers["authorization"] == "Bearer mistral-key"
    # Mistral spells the seed `random_seed`; the preset tells the adapter.
    assert sent.body["random_seed"] == 7
    assert "seed" not in sent.body


async def test_an_explicit_base_url_wins_over_the_environment(
    openai_server: OpenAIServer,
) -> None:
    provider = build_provider(
        "ollama",
        api_key=None,
        base_url=openai_server.base_url,
        environ={"VALUERANK_OLLAMA_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    try:
        await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert len(openai_server.requests) == 1
    assert openai_server.last.body["seed"] == 7


async def test_anthropic_and_google_presets_reach_their_servers(
    anthropic_server: AnthropicServer, google_server: GoogleServer
) -> None:
    environ = {
        "VALUERANK_ANTHROPIC_BASE_URL": anthropic_server.base_url,
        "VALUERANK_GOOGLE_BASE_URL": google_server.base_url,
    }
    anthropic = build_provider("anthropic", api_key="sk-ant", environ=environ, timeout=5)
    google = build_provider("google", api_key="AIza", environ=environ, timeout=5)
    try:
        assert (await anthropic.complete(REQUEST)).usage.total_tokens == 18
        assert (await google.complete(REQUEST)).usage.total_tokens == 18
    finally:
        await anthropic.aclose()
        await google.aclose()
    assert anthropic_server.last.path == "/v1/messages"
    assert google_server.last.path == "/v1beta/models/some-model:generateContent"
    assert google_server.last.headers["x-goog-api-key"] == "AIza"


@pytest.mark.parametrize("kind", ["local", "scripted"])
def test_embedded_kinds_are_built_lazily_by_their_own_modules(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    sentinel = object()

    def build(model_name: str) -> object:
        calls.append(model_name)
        return sentinel

    module = ModuleType(f"valuerank.providers.{kind}")
    setattr(module, f"build_{kind}_provider", build)
    monkeypatch.setitem(sys.modules, f"valuerank.providers.{kind}", module)
    assert build_provider(kind, api_key=None, model_name="persona?seed=3") is sentinel
    assert calls == ["persona?seed=3"]


def test_embedded_kinds_need_the_model_name() -> None:
    with pytest.raises(ValueError, match="model_name"):
        build_provider("scripted", api_key=None)


async def test_scripted_is_built_by_the_real_module() -> None:
    provider = build_provider("scripted", api_key=None, model_name="contrarian?seed=3")
    try:
        assert isinstance(provider, Provider)
        assert provider.name == "scripted"
        request = CompletionRequest(model="contrarian?seed=3", messages=REQUEST.messages)
        completion = await provider.complete(request)
        assert completion.synthetic
    finally:
        await provider.aclose()
