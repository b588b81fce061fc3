"""An adapter kind of the tests only (`toy-sdk`), registered by test_registry.py: OpenAI-style
chat completions over plain httpx, talking to the fake OpenAI server. It shows that a new
adapter needs its module and one `AdapterSpec`, nothing else. The registry imports it by name
from this directory, and only when a provider of its kind is built (the test checks that).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from valuerank.providers.base import Completion, CompletionRequest, Provider, Usage
from valuerank.providers.classify import classify_status, int_field, json_body
from valuerank.providers.specs import ProviderPreset


class ToyProvider:
    """A `Provider` on an `httpx.AsyncClient`; errors are classified as every adapter's are."""

    def __init__(
        self, name: str, api_key: str | None, base_url: str, timeout: float, seed_param: str | None
    ) -> None:
        self.name = name
        self._seed_param = seed_param
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        # The trailing slash makes httpx append request paths to the base path (`/v1`).
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def complete(self, request: CompletionRequest) -> Completion:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.seed is not None and self._seed_param:
            body[self._seed_param] = request.seed
        start = time.perf_counter()
        try:
            response = await self._client.post("chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise classify_status(None, str(exc), provider=self.name) from exc
        if response.status_code >= 400:
            headers = {k.lower(): v for k, v in response.headers.items()}
            raise classify_status(response.status_code, response.text, headers, provider=self.name)
        data = json_body(self.name, response.content)
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        return Completion(
            text=str(choice["message"].get("content") or ""),
            finish_reason=choice.get("finish_reason"),
            usage=Usage(int_field(usage, "prompt_tokens"), int_field(usage, "completion_tokens")),
            latency_ms=(time.perf_counter() - start) * 1000,
            raw=data,
        )


def build_toy_provider(
    preset: ProviderPreset, *, api_key: str | None, base_url: str | None, timeout: float
) -> Provider:
    """The spec's factory: the registry passes the preset, the key and the resolved URL."""
    if base_url is None:
        raise ValueError(f"{preset.name}: the toy adapter has no default endpoint")
    return ToyProvider(preset.name, api_key, base_url, timeout, preset.seed_param)
