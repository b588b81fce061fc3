"""Google's Gemini API (generativelanguage v1beta `generateContent`) on `google-genai`.

Retries are off (`HttpRetryOptions(attempts=1)`: the queue retries), and so are the SDK's
automatic function calling and continuation, so one `complete` is exactly one HTTP request.
The SDK hands back the raw HTTP body (`should_return_http_response`), read here as plain JSON
so `raw` is what the server said and a malformed body is a clear transient error.
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from valuerank.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderTransient,
    Usage,
)
from valuerank.providers.classify import (
    FINISH_CONTENT_FILTER,
    FINISH_LENGTH,
    FINISH_STOP,
    classify_status,
    int_field,
    json_body,
    parse_duration,
    rate_limit_headers,
)
from valuerank.providers.specs import ProviderPreset

# v1beta, not the SDK's default v1: it carries every v1 feature plus the newer ones
# (`responseJsonSchema`, thinking), and it is what Google's own examples call.
API_VERSION = "v1beta"

# Gemini's finish reasons in the shared vocabulary (classify.py); others pass lower-cased.
_FINISH = {
    "STOP": FINISH_STOP,
    "MAX_TOKENS": FINISH_LENGTH,
    "SAFETY": FINISH_CONTENT_FILTER,
    "RECITATION": FINISH_CONTENT_FILTER,
    "BLOCKLIST": FINISH_CONTENT_FILTER,
    "PROHIBITED_CONTENT": FINISH_CONTENT_FILTER,
    "SPII": FINISH_CONTENT_FILTER,
    "IMAGE_SAFETY": FINISH_CONTENT_FILTER,
}

# The SDK raises the HTTP library's own errors for timeouts and dropped connections; it may
# run on httpx or httpx2 (GOOGLE_GENAI_HTTP_CLIENT), so both are caught.
_TIMEOUTS = (httpx.TimeoutException, httpx2.TimeoutException)
_TRANSPORT = (httpx.TransportError, httpx2.TransportError)


def _pinned_transport() -> httpx.AsyncHTTPTransport | httpx2.AsyncHTTPTransport:
    """The SDK's async requests go through aiohttp whenever aiohttp is importable (anything
    may install it), whose errors are not the ones caught above; an explicit transport keeps
    them on the httpx flavour the SDK would pick otherwise (GOOGLE_GENAI_HTTP_CLIENT)."""
    if os.environ.get("GOOGLE_GENAI_HTTP_CLIENT", "").strip().lower() == "httpx":
        return httpx.AsyncHTTPTransport()
    return httpx2.AsyncHTTPTransport()


def build_google_provider(
    preset: ProviderPreset, *, api_key: str | None, base_url: str | None, timeout: float
) -> Provider:
    """The registry's factory (`AdapterSpec.factory`) of the `google` preset."""
    return GoogleProvider(preset.name, api_key, base_url, timeout)


class GoogleProvider:
    """A `Provider` on `google.genai.Client(...).aio`."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.name = name
        self._client = genai.Client(
            vertexai=False,
            api_key=api_key,
            http_options=types.HttpOptions(
                base_url=base_url,
                api_version=API_VERSION,
                # Whole milliseconds, at least 1: the SDK reads 0 as "no timeout".
                timeout=max(int(timeout * 1000), 1),
                retry_options=types.HttpRetryOptions(attempts=1),
                async_client_args={"transport": _pinned_transport()},
            ),
        )

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()

    async def complete(self, request: CompletionRequest) -> Completion:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in request.messages
            if m.role != "system"
        ]
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=request.temperature,
            max_output_tokens=request.max_tokens,
            seed=request.seed,
            response_mime_type="application/json" if request.json_schema is not None else None,
            response_json_schema=(
                dict(request.json_schema) if request.json_schema is not None else None
            ),
            should_return_http_response=True,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            automatic_continuation=False,
        )
        start = time.perf_counter()
        try:
            response = await self._client.aio.models.generate_content(
                model=request.model, contents=contents, config=config
            )
        except genai_errors.APIError as exc:
            headers = getattr(exc.response, "headers", None) or {}
            raise classify_status(
                exc.code,
                exc.message or str(exc),
                dict(headers),
                provider=self.name,
                retry_after_hint=_retry_delay(exc.details),
            ) from exc
        except _TIMEOUTS as exc:
            raise ProviderTransient(f"{self.name}: request timed out") from exc
        except _TRANSPORT as exc:
            raise ProviderTransient(f"{self.name}: connection failed: {exc!r}") from exc
        latency_ms = (time.perf_counter() - start) * 1000.0
        http = response.sdk_http_response
        headers = rate_limit_headers((http.headers or {}) if http else {})
        body = (http.body or "") if http else ""
        return _completion(self.name, body, latency_ms, headers)


def _retry_delay(details: Any) -> float | None:
    """`retryDelay` of a `google.rpc.RetryInfo` in an error body ("37s"), in seconds."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, dict)
            and str(item.get("@type", "")).endswith("google.rpc.RetryInfo")
            and isinstance(item.get("retryDelay"), str)
        ):
            return parse_duration(item["retryDelay"])
    return None


def _completion(provider: str, body: str, latency_ms: float, headers: dict[str, str]) -> Completion:
    data = json_body(provider, body)
    usage = data.get("usageMetadata")
    candidates = data.get("candidates")
    text = ""
    finish_reason: str | None = None
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        candidate = candidates[0]
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        # Thought summaries are not the answer.
        text = "".join(
            part["text"]
            for part in (parts if isinstance(parts, list) else [])
            if isinstance(part, dict)
            and isinstance(part.get("text"), str)
            and not part.get("thought")
        )
        finish = candidate.get("finishReason")
        if isinstance(finish, str) and finish != "FINISH_REASON_UNSPECIFIED":
            finish_reason = _FINISH.get(finish, finish.lower())
    else:
        feedback = data.get("promptFeedback")
        if not (isinstance(feedback, dict) and feedback.get("blockReason")):
            raise ProviderTransient(f"{provider}: malformed response body (no candidates)")
        # The prompt itself was blocked: an answer to score (a refusal), not a failure.
        finish_reason = FINISH_CONTENT_FILTER
    return Completion(
        text=text,
        finish_reason=finish_reason,
        usage=Usage(
            input_tokens=int_field(usage, "promptTokenCount"),
            # Thinking tokens are output the model generated (and is billed for).
            output_tokens=int_field(usage, "candidatesTokenCount")
            + int_field(usage, "thoughtsTokenCount"),
        ),
        latency_ms=latency_ms,
        rate_limit_headers=headers,
        raw=data,
    )
