"""OpenAI chat completions, and every OpenAI-compatible server (Ollama, vLLM, llama.cpp,
OpenRouter, Together, Groq, DeepSeek, xAI, Mistral) through `base_url`.

The SDK sends and authenticates; the body is read as plain JSON rather than the SDK's model so
compatible servers with missing or extra fields still work, and so `raw` is what the server said.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.shared_params import ResponseFormatJSONSchema

from valuerank.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderError,
    ProviderTransient,
    Usage,
)
from valuerank.providers.classify import (
    FINISH_REFUSAL,
    classify_status,
    int_field,
    json_body,
    rate_limit_headers,
)
from valuerank.providers.specs import ProviderPreset

# The SDK refuses to start without a key; local servers ignore whatever is sent.
NO_KEY_PLACEHOLDER = "no-key"

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def build_openai_provider(
    preset: ProviderPreset, *, api_key: str | None, base_url: str | None, timeout: float
) -> Provider:
    """The registry's factory (`AdapterSpec.factory`) of every OpenAI-compatible preset."""
    return OpenAIProvider(preset.name, api_key, base_url, timeout, seed_param=preset.seed_param)


class OpenAIProvider:
    """A `Provider` on `openai.AsyncOpenAI` with the SDK's retries off (the queue retries)."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 120.0,
        *,
        seed_param: str | None = "seed",
    ) -> None:
        self.name = name
        self._seed_param = seed_param
        self._client = openai.AsyncOpenAI(
            api_key=api_key or NO_KEY_PLACEHOLDER,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
        )
        # Models that refused `max_tokens` (reasoning models want `max_completion_tokens`).
        self._completion_tokens_models: set[str] = set()

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: CompletionRequest) -> Completion:
        start = time.perf_counter()
        try:
            response = await self._send(request)
        except openai.APIStatusError as exc:
            if not _refuses_max_tokens(request, exc) or (
                request.model in self._completion_tokens_models
            ):
                raise self._status_error(exc) from exc
            # Not a retry of a failure: the same request in the field this model accepts.
            self._completion_tokens_models.add(request.model)
            try:
                response = await self._send(request)
            except openai.APIStatusError as again:
                raise self._status_error(again) from again
        latency_ms = (time.perf_counter() - start) * 1000.0
        headers, body = response
        data = json_body(self.name, body)
        return _completion(self.name, data, latency_ms, headers)

    async def _send(self, request: CompletionRequest) -> tuple[dict[str, str], bytes]:
        """One HTTP request: its rate-limit headers and body. Connection failures and timeouts
        become `ProviderTransient`; error statuses raise the SDK's `APIStatusError`."""
        extra: dict[str, object] = {}
        seed: int | openai.Omit = openai.omit
        if request.seed is not None and self._seed_param == "seed":
            seed = request.seed
        elif request.seed is not None and self._seed_param:
            extra[self._seed_param] = request.seed
        wants_completion_tokens = request.model in self._completion_tokens_models
        max_tokens: int | openai.Omit = openai.omit
        max_completion_tokens: int | openai.Omit = openai.omit
        if request.max_tokens is not None and wants_completion_tokens:
            max_completion_tokens = request.max_tokens
        elif request.max_tokens is not None:
            max_tokens = request.max_tokens
        try:
            response = await self._client.chat.completions.with_raw_response.create(
                model=request.model,
                messages=[_message(m.role, m.content) for m in request.messages],
                temperature=openai.omit if request.temperature is None else request.temperature,
                max_tokens=max_tokens,
                max_completion_tokens=max_completion_tokens,
                seed=seed,
                response_format=(
                    openai.omit
                    if request.json_schema is None
                    else _response_format(request.json_schema)
                ),
                extra_body=extra or None,
            )
        except openai.APITimeoutError as exc:
            raise ProviderTransient(f"{self.name}: request timed out") from exc
        except openai.APIConnectionError as exc:
            raise ProviderTransient(f"{self.name}: connection failed: {exc}") from exc
        return rate_limit_headers(response.headers), response.content

    def _status_error(self, exc: openai.APIStatusError) -> ProviderError:
        return classify_status(
            exc.status_code,
            _error_message(exc),
            exc.response.headers,
            provider=self.name,
        )


def _message(role: str, content: str) -> ChatCompletionMessageParam:
    if role == "system":
        return {"role": "system", "content": content}
    if role == "assistant":
        return {"role": "assistant", "content": content}
    return {"role": "user", "content": content}


def _response_format(schema: Mapping[str, Any]) -> ResponseFormatJSONSchema:
    # The name must match ^[a-zA-Z0-9_-]{1,64}$; take the schema's title when it has one.
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) and title else ""
    return {
        "type": "json_schema",
        "json_schema": {"name": name or "response", "schema": dict(schema)},
    }


def _refuses_max_tokens(request: CompletionRequest, exc: openai.APIStatusError) -> bool:
    """The 400 of a reasoning model asked for `max_tokens` ("use max_completion_tokens")."""
    if exc.status_code != 400 or request.max_tokens is None:
        return False
    text = _error_message(exc)
    return "max_tokens" in text and "max_completion_tokens" in text


def _error_message(exc: openai.APIStatusError) -> str:
    """The server's own words: `error.message` of the body when there is one."""
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message")
            code = error.get("code") or error.get("type")
            if isinstance(message, str) and message:
                return f"{message} ({code})" if isinstance(code, str) and code else message
    if isinstance(body, str) and body:
        return body[:500]
    return exc.message


def _completion(
    provider: str, data: dict[str, Any], latency_ms: float, headers: dict[str, str]
) -> Completion:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = data.get("error")
        if isinstance(error, dict):
            # Some compatible proxies report errors with status 200 and an `error` object.
            code = error.get("code")
            status = code if isinstance(code, int) else None
            error_text = str(error.get("message", error))
            raise classify_status(status, error_text, headers, provider=provider)
        raise ProviderTransient(f"{provider}: malformed response body (no choices)")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ProviderTransient(f"{provider}: malformed response body (choice without message)")
    finish = choice.get("finish_reason")
    finish_reason = finish if isinstance(finish, str) else None
    text = _content_text(message.get("content"))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        # A refusal is an answer to score, not a failure.
        text, finish_reason = refusal, FINISH_REFUSAL
    usage = data.get("usage")
    return Completion(
        text=text,
        finish_reason=finish_reason,
        usage=Usage(
            input_tokens=int_field(usage, "prompt_tokens"),
            output_tokens=int_field(usage, "completion_tokens"),
        ),
        latency_ms=latency_ms,
        rate_limit_headers=headers,
        raw=data,
    )


def _content_text(content: object) -> str:
    """`content` is a string, null (refusals, tool calls), or on some servers a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
