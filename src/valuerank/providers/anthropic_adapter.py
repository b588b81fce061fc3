"""Anthropic's Messages API on the official SDK, its retries off (the queue retries).

System messages go into `system=`; `max_tokens` is required by the API (1024 when the request
leaves it open). The SDK has no `temperature` argument any more, so it travels in the body
(`extra_body`) for the models that still accept it. Anthropic has no seed; it is ignored.
"""

from __future__ import annotations

import time

import anthropic
from anthropic.types import MessageParam
from anthropic.types.output_config_param import OutputConfigParam

from valuerank.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderTransient,
    Usage,
)
from valuerank.providers.classify import (
    FINISH_LENGTH,
    FINISH_REFUSAL,
    FINISH_STOP,
    FINISH_TOOL_CALLS,
    classify_status,
    int_field,
    json_body,
    rate_limit_headers,
)
from valuerank.providers.specs import ProviderPreset

DEFAULT_MAX_TOKENS = 1024

# Anthropic's stop reasons in the shared vocabulary (classify.py); others pass through.
_FINISH = {
    "end_turn": FINISH_STOP,
    "stop_sequence": FINISH_STOP,
    "max_tokens": FINISH_LENGTH,
    "model_context_window_exceeded": FINISH_LENGTH,
    "tool_use": FINISH_TOOL_CALLS,
    "refusal": FINISH_REFUSAL,
}


def build_anthropic_provider(
    preset: ProviderPreset, *, api_key: str | None, base_url: str | None, timeout: float
) -> Provider:
    """The registry's factory (`AdapterSpec.factory`) of the `anthropic` preset."""
    return AnthropicProvider(preset.name, api_key, base_url, timeout)


class AnthropicProvider:
    """A `Provider` on `anthropic.AsyncAnthropic`."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.name = name
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: CompletionRequest) -> Completion:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages = [_message(m.role, m.content) for m in request.messages if m.role != "system"]
        extra: dict[str, object] = {}
        if request.temperature is not None:
            extra["temperature"] = request.temperature
        output_config: OutputConfigParam | anthropic.Omit = anthropic.omit
        if request.json_schema is not None:
            output_config = {"format": {"type": "json_schema", "schema": dict(request.json_schema)}}
        start = time.perf_counter()
        try:
            response = await self._client.messages.with_raw_response.create(
                model=request.model,
                messages=messages,
                system=system or anthropic.omit,
                max_tokens=DEFAULT_MAX_TOKENS if request.max_tokens is None else request.max_tokens,
                output_config=output_config,
                extra_body=extra or None,
            )
            body = await response.read()
        except anthropic.APIStatusError as exc:
            raise classify_status(
                exc.status_code, _error_message(exc), exc.response.headers, provider=self.name
            ) from exc
        except anthropic.APITimeoutError as exc:
            raise ProviderTransient(f"{self.name}: request timed out") from exc
        except anthropic.APIConnectionError as exc:
            raise ProviderTransient(f"{self.name}: connection failed: {exc}") from exc
        latency_ms = (time.perf_counter() - start) * 1000.0
        headers = rate_limit_headers(response.headers)
        return _completion(self.name, body, latency_ms, headers)


def _message(role: str, content: str) -> MessageParam:
    if role == "assistant":
        return {"role": "assistant", "content": content}
    return {"role": "user", "content": content}


def _error_message(exc: anthropic.APIStatusError) -> str:
    """The server's own words: `error.message` (and `error.type`) of the body."""
    if exc.api_message:
        return f"{exc.api_message} ({exc.type})" if exc.type else exc.api_message
    return exc.message


def _completion(
    provider: str, body: bytes, latency_ms: float, headers: dict[str, str]
) -> Completion:
    data = json_body(provider, body)
    content = data.get("content")
    if not isinstance(content, list):
        error = data.get("error")
        if data.get("type") == "error" and isinstance(error, dict):
            # An error object delivered with a success status (seen behind proxies).
            raise classify_status(
                None, str(error.get("message", error)), headers, provider=provider
            )
        raise ProviderTransient(f"{provider}: malformed response body (no content)")
    # Text blocks only: thinking and tool blocks are not the answer.
    text = "".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
    stop = data.get("stop_reason")
    finish_reason = _FINISH.get(stop, stop) if isinstance(stop, str) else None
    usage = data.get("usage")
    return Completion(
        text=text,
        finish_reason=finish_reason,
        usage=Usage(
            # Cache reads and writes are input the model read too.
            input_tokens=int_field(usage, "input_tokens")
            + int_field(usage, "cache_creation_input_tokens")
            + int_field(usage, "cache_read_input_tokens"),
            output_tokens=int_field(usage, "output_tokens"),
        ),
        latency_ms=latency_ms,
        rate_limit_headers=headers,
        raw=data,
    )
