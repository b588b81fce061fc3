"""The Anthropic adapter over HTTP against a fake Messages API on loopback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from valuerank.providers.anthropic_adapter import DEFAULT_MAX_TOKENS, AnthropicProvider
from valuerank.providers.base import (
    CompletionRequest,
    Message,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)

if TYPE_CHECKING:
    from tests.providers.fake_servers import AnthropicServer

KEY = "sk-ant-test-0123"
REQUEST = CompletionRequest(
    model="claude-test",
    messages=(
        Message("system", "You are a careful ethicist."),
        Message("system", "Answer with a rating."),
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
async def provider(anthropic_endpoint: AnthropicServer) -> AsyncIterator[AnthropicProvider]:
    adapter = AnthropicProvider("anthropic", KEY, anthropic_endpoint.base_url, timeout=5.0)
    yield adapter
    await adapter.aclose()


async def test_sends_the_request_the_api_expects(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    await provider.complete(REQUEST)
    [sent] = anthropic_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    # The key as x-api-key (older SDKs) or a bearer token (anthropic 2.x).
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert "anthropic-version" in sent.headers
    # System messages joined into `system`; the seed has nowhere to go and is dropped.
    assert sent.body == {
        "model": "claude-test",
        "system": "You are a careful ethicist.\n\nAnswer with a rating.",
        "messages": [
            {"role": "user", "content": "Keep the promise or help the stranger? Rate 1-5."},
            {"role": "assistant", "content": "Rating: 2"},
            {"role": "user", "content": "Explain briefly."},
        ],
        "max_tokens": 256,
        "temperature": 0.3,
    }


async def test_max_tokens_defaults_and_unset_parameters_are_not_sent(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    await provider.complete(CompletionRequest(model="m", messages=(Message("user", "hi"),)))
    assert anthropic_server.last.body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": DEFAULT_MAX_TOKENS,
    }
    assert DEFAULT_MAX_TOKENS == 1024


async def test_json_schema_becomes_an_output_format(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    schema = {"type": "object", "properties": {"rating": {"type": "integer"}}}
    await provider.complete(
        CompletionRequest(model="m", messages=(Message("user", "x"),), json_schema=schema)
    )
    assert anthropic_server.last.body["output_config"] == {
        "format": {"type": "json_schema", "schema": schema}
    }


async def test_returns_text_usage_latency_headers_and_raw(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.script(
        anthropic_server.ok("Rating: 1\nNever.", input_tokens=90, output_tokens=12)
    )
    completion = await provider.complete(REQUEST)
    assert completion.text == "Rating: 1\nNever."
    assert completion.finish_reason == "stop"  # end_turn, in the shared vocabulary
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (90, 12)
    assert completion.latency_ms > 0
    assert completion.rate_limit_headers == {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2030-01-01T00:00:00Z",
    }
    assert completion.raw["id"] == "msg_fake"
    assert completion.raw["stop_reason"] == "end_turn"


async def test_only_text_blocks_make_the_text_and_cache_tokens_count_as_input(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    body = (
        b'{"id": "m", "type": "message", "role": "assistant", "model": "c",'
        b' "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},'
        b' {"type": "text", "text": "Rating: "}, {"type": "text", "text": "3"}],'
        b' "stop_reason": "max_tokens",'
        b' "usage": {"input_tokens": 5, "cache_read_input_tokens": 100,'
        b' "cache_creation_input_tokens": 20, "output_tokens": 9}}'
    )
    anthropic_server.script(anthropic_server.raw(body))
    completion = await provider.complete(REQUEST)
    assert completion.text == "Rating: 3"
    assert completion.finish_reason == "length"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (125, 9)


async def test_a_refusal_stop_reason_is_an_answer_not_an_error(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.script(anthropic_server.refusal("I won't rank that."))
    completion = await provider.complete(REQUEST)
    assert completion.text == "I won't rank that."
    assert completion.finish_reason == "refusal"


async def test_429_with_retry_after_is_rate_limited_and_not_retried(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.script(
        anthropic_server.error(
            429,
            "Number of request tokens has exceeded your per-minute rate limit",
            headers={"retry-after": "12", "anthropic-ratelimit-tokens-remaining": "0"},
        )
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.retry_after == 12.0
    assert caught.value.status == 429
    assert "per-minute rate limit" in str(caught.value)
    assert "rate_limit_error" in str(caught.value)
    assert caught.value.headers == {
        "retry-after": "12",
        "anthropic-ratelimit-tokens-remaining": "0",
    }
    assert len(anthropic_server.requests) == 1


async def test_429_wait_from_the_rfc3339_reset_of_the_exhausted_limit(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    now = datetime.now(UTC)
    anthropic_server.script(
        anthropic_server.error(
            429,
            "rate limited",
            headers={
                "anthropic-ratelimit-requests-remaining": "10",
                "anthropic-ratelimit-requests-reset": (now + timedelta(seconds=5)).isoformat(),
                "anthropic-ratelimit-output-tokens-remaining": "0",
                "anthropic-ratelimit-output-tokens-reset": (
                    (now + timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
                ),
            },
        )
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert 37.0 <= caught.value.retry_after <= 40.0


async def test_529_overloaded_is_rate_limited_with_the_default_wait(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.script(anthropic_server.error(529, "Overloaded"))
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.status == 529
    assert caught.value.retry_after == 1.0
    assert "overloaded_error" in str(caught.value)
    assert len(anthropic_server.requests) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, ProviderTransient),
        (503, ProviderTransient),
        (400, ProviderPermanent),
        (401, ProviderPermanent),
        (403, ProviderPermanent),
        (404, ProviderPermanent),
    ],
)
async def test_statuses_map_to_error_classes_without_retrying(
    provider: AnthropicProvider,
    anthropic_server: AnthropicServer,
    status: int,
    error: type[Exception],
) -> None:
    anthropic_server.script(anthropic_server.error(status, f"failure {status}"))
    with pytest.raises(error) as caught:
        await provider.complete(REQUEST)
    assert type(caught.value) is error
    assert getattr(caught.value, "status", None) == status
    assert len(anthropic_server.requests) == 1


async def test_prompt_too_long_is_permanent(
    provider: AnthropicProvider, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.script(
        anthropic_server.error(400, "prompt is too long: 250000 tokens > 200000 maximum")
    )
    with pytest.raises(ProviderPermanent, match="prompt is too long"):
        await provider.complete(REQUEST)


async def test_a_slow_server_times_out_as_transient_once(
    anthropic_server: AnthropicServer,
) -> None:
    adapter = AnthropicProvider("anthropic", KEY, anthropic_server.base_url, timeout=1.0)
    anthropic_server.script(anthropic_server.slow(10.0))
    started = time.perf_counter()
    try:
        with pytest.raises(ProviderTransient, match="timed out"):
            await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()
    # Cut by the 1 s timeout, not by the server answering after 10 s (margin for a busy box).
    assert time.perf_counter() - started < 8.0
    assert len(anthropic_server.requests) == 1


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"id": "x", "content": [', "not JSON"),
        (b'{"id": "x", "type": "message"}', "no content"),
    ],
)
async def test_a_malformed_body_is_transient_and_says_why(
    provider: AnthropicProvider, anthropic_server: AnthropicServer, body: bytes, detail: str
) -> None:
    anthropic_server.script(anthropic_server.raw(body))
    with pytest.raises(ProviderTransient, match=f"malformed response body \\({detail}"):
        await provider.complete(REQUEST)
    assert len(anthropic_server.requests) == 1
