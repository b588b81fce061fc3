"""The OpenAI adapter over HTTP against a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from valuerank.providers.base import (
    CompletionRequest,
    Message,
    Provider,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)
from valuerank.providers.openai_adapter import OpenAIProvider

if TYPE_CHECKING:
    from tests.providers.fake_servers import OpenAIServer

KEY = "sk-test-openai-0123"
REQUEST = CompletionRequest(
    model="gpt-test",
    messages=(
        Message("system", "You are a careful ethicist."),
        Message("user", "Keep the promise or help the stranger? Rate 1-5."),
        Message("assistant", "Rating: 2"),
        Message("user", "Explain briefly."),
    ),
    temperature=0.3,
    max_tokens=256,
    seed=42,
)


# One event loop and one adapter for the module: building an SDK client costs ~0.1 s.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider(openai_endpoint: OpenAIServer) -> AsyncIterator[OpenAIProvider]:
    adapter = OpenAIProvider("openai", KEY, openai_endpoint.base_url, timeout=5.0)
    yield adapter
    await adapter.aclose()


async def test_sends_the_request_the_api_expects(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    await provider.complete(REQUEST)
    [sent] = openai_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are a careful ethicist."},
            {"role": "user", "content": "Keep the promise or help the stranger? Rate 1-5."},
            {"role": "assistant", "content": "Rating: 2"},
            {"role": "user", "content": "Explain briefly."},
        ],
        "temperature": 0.3,
        "max_tokens": 256,
        "seed": 42,
    }


async def test_unset_parameters_are_not_sent(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    await provider.complete(CompletionRequest(model="m", messages=(Message("user", "hi"),)))
    assert openai_server.last.body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    }


async def test_returns_text_usage_latency_headers_and_raw(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(openai_server.ok("Rating: 5\nAlways.", input_tokens=123, output_tokens=45))
    completion = await provider.complete(REQUEST)
    assert completion.text == "Rating: 5\nAlways."
    assert completion.finish_reason == "stop"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (123, 45)
    assert completion.latency_ms > 0
    # Only the rate-limit headers, lower-cased; not x-request-id or content-type.
    assert completion.rate_limit_headers == {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-reset-requests": "120ms",
    }
    assert completion.raw["id"] == "chatcmpl-fake"
    assert completion.raw["usage"]["total_tokens"] == 168
    assert completion.synthetic is False
    assert isinstance(provider, Provider) and provider.name == "openai"


async def test_json_schema_becomes_a_json_schema_response_format(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    schema = {
        "title": "Decision record",
        "type": "object",
        "properties": {"rating": {"type": "integer"}},
        "required": ["rating"],
    }
    await provider.complete(
        CompletionRequest(model="m", messages=(Message("user", "x"),), json_schema=schema)
    )
    assert openai_server.last.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Decision_record", "schema": schema},
    }


async def test_a_refusal_is_an_answer_not_an_error(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(openai_server.refusal("I can't help with that."))
    completion = await provider.complete(REQUEST)
    assert completion.text == "I can't help with that."
    assert completion.finish_reason == "refusal"


async def test_a_content_filter_stop_is_an_answer_not_an_error(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(openai_server.completion({"content": "Partial"}, "content_filter"))
    completion = await provider.complete(REQUEST)
    assert (completion.text, completion.finish_reason) == ("Partial", "content_filter")


async def test_429_with_retry_after_is_rate_limited_and_not_retried(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(
        openai_server.error(
            429,
            "Rate limit reached for requests",
            headers={"Retry-After": "7", "x-ratelimit-remaining-requests": "0"},
        )
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.retry_after == 7.0
    assert caught.value.status == 429
    assert "Rate limit reached for requests" in str(caught.value)
    assert caught.value.headers == {"retry-after": "7", "x-ratelimit-remaining-requests": "0"}
    assert len(openai_server.requests) == 1


async def test_429_wait_from_the_exhausted_limits_reset(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(
        openai_server.error(
            429,
            "Rate limit reached for tokens",
            headers={
                "x-ratelimit-remaining-requests": "12",
                "x-ratelimit-reset-requests": "20ms",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "6m0s",
            },
        )
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.retry_after == 360.0


async def test_insufficient_quota_429_is_permanent(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(
        openai_server.error(429, "You exceeded your current quota.", code="insufficient_quota")
    )
    with pytest.raises(ProviderPermanent) as caught:
        await provider.complete(REQUEST)
    assert caught.value.status == 429
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize(
    ("status", "headers", "error", "retry_after"),
    [
        (500, {}, ProviderTransient, None),
        (502, {}, ProviderTransient, None),
        (503, {}, ProviderTransient, None),
        (503, {"Retry-After": "3"}, ProviderRateLimited, 3.0),
        (529, {}, ProviderRateLimited, 1.0),
        (408, {}, ProviderTransient, None),
        (409, {}, ProviderTransient, None),
        (400, {}, ProviderPermanent, None),
        (401, {}, ProviderPermanent, None),
        (403, {}, ProviderPermanent, None),
        (404, {}, ProviderPermanent, None),
        (422, {}, ProviderPermanent, None),
    ],
)
async def test_statuses_map_to_error_classes_without_retrying(
    provider: OpenAIProvider,
    openai_server: OpenAIServer,
    status: int,
    headers: dict[str, str],
    error: type[Exception],
    retry_after: float | None,
) -> None:
    openai_server.script(openai_server.error(status, f"failure {status}", headers=headers))
    with pytest.raises(error) as caught:
        await provider.complete(REQUEST)
    assert type(caught.value) is error
    assert getattr(caught.value, "status", None) == status
    assert f"failure {status}" in str(caught.value)
    if retry_after is not None:
        assert isinstance(caught.value, ProviderRateLimited)
        assert caught.value.retry_after == retry_after
    assert len(openai_server.requests) == 1


async def test_context_length_is_permanent_with_the_servers_message(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    message = "This model's maximum context length is 8192 tokens."
    openai_server.script(openai_server.error(400, message, code="context_length_exceeded"))
    with pytest.raises(ProviderPermanent) as caught:
        await provider.complete(REQUEST)
    assert message in str(caught.value)
    assert "context_length_exceeded" in str(caught.value)


async def test_a_slow_server_times_out_as_transient_once(openai_server: OpenAIServer) -> None:
    adapter = OpenAIProvider("openai", KEY, openai_server.base_url, timeout=1.0)
    openai_server.script(openai_server.slow(10.0))
    started = time.perf_counter()
    try:
        with pytest.raises(ProviderTransient, match="timed out"):
            await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()
    # Cut by the 1 s timeout, not by the server answering after 10 s (margin for a busy box).
    assert time.perf_counter() - started < 8.0
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"id": "x", "choices": [', "not JSON"),
        (b"<html>Bad gateway</html>", "not JSON"),
        (b'["a", "list"]', "not a JSON object"),
        (b'{"id": "x", "object": "chat.completion"}', "no choices"),
        (b'{"id": "x", "choices": []}', "no choices"),
        (b'{"id": "x", "choices": [{"index": 0}]}', "choice without message"),
    ],
)
async def test_a_malformed_body_is_transient_and_says_why(
    provider: OpenAIProvider, openai_server: OpenAIServer, body: bytes, detail: str
) -> None:
    openai_server.script(openai_server.raw(body))
    with pytest.raises(ProviderTransient, match=f"malformed response body \\({detail}"):
        await provider.complete(REQUEST)
    assert len(openai_server.requests) == 1


async def test_an_error_object_with_status_200_is_classified(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    # OpenRouter-style: the upstream's error inside a 200 answer.
    openai_server.script(
        openai_server.raw(
            b'{"error": {"code": 429, "message": "upstream rate limited"}}',
            headers={"Retry-After": "2"},
        )
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.retry_after == 2.0
    assert "upstream rate limited" in str(caught.value)


async def test_nobody_listening_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    adapter = OpenAIProvider("vllm", None, f"http://127.0.0.1:{port}/v1", timeout=2.0)
    try:
        with pytest.raises(ProviderTransient, match="vllm: connection failed"):
            await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()


async def test_reasoning_models_get_max_completion_tokens_after_refusing_max_tokens(
    openai_server: OpenAIServer,
) -> None:
    # Its own adapter: it remembers which models want max_completion_tokens.
    adapter = OpenAIProvider("openai", KEY, openai_server.base_url, timeout=5.0)
    openai_server.script(
        openai_server.error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            code="unsupported_parameter",
        )
    )
    try:
        first = await adapter.complete(REQUEST)
        second = await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()
    assert first.text == second.text
    bodies = [r.body for r in openai_server.requests]
    assert len(bodies) == 3  # the refused one, its resend, and the next call directly
    assert bodies[0]["max_tokens"] == 256 and "max_completion_tokens" not in bodies[0]
    for body in bodies[1:]:
        assert body["max_completion_tokens"] == 256 and "max_tokens" not in body


async def test_an_other_400_is_not_resent(
    provider: OpenAIProvider, openai_server: OpenAIServer
) -> None:
    openai_server.script(openai_server.error(400, "Invalid value for 'temperature'."))
    with pytest.raises(ProviderPermanent):
        await provider.complete(REQUEST)
    assert len(openai_server.requests) == 1


async def test_a_renamed_seed_parameter_travels_in_the_body(openai_server: OpenAIServer) -> None:
    adapter = OpenAIProvider("mistral", KEY, openai_server.base_url, seed_param="random_seed")
    try:
        await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()
    assert openai_server.last.body["random_seed"] == 42
    assert "seed" not in openai_server.last.body


async def test_a_keyless_local_server_gets_a_placeholder_key(openai_server: OpenAIServer) -> None:
    adapter = OpenAIProvider("ollama", None, openai_server.base_url)
    try:
        completion = await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()
    assert completion.text.startswith("Rating: 4")
    assert openai_server.last.headers["authorization"] == "Bearer no-key"
