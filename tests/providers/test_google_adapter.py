"""The Google adapter over HTTP against a fake generativelanguage v1beta server on loopback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from valuerank.providers.base import (
    CompletionRequest,
    Message,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)
from valuerank.providers.google_adapter import GoogleProvider

if TYPE_CHECKING:
    from tests.providers.fake_servers import GoogleServer

KEY = "AIza-test-0123"
REQUEST = CompletionRequest(
    model="gemini-test",
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
async def provider(google_endpoint: GoogleServer) -> AsyncIterator[GoogleProvider]:
    adapter = GoogleProvider("google", KEY, google_endpoint.base_url, timeout=5.0)
    yield adapter
    await adapter.aclose()


async def test_sends_the_request_the_api_expects(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    await provider.complete(REQUEST)
    [sent] = google_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1beta/models/gemini-test:generateContent")
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body == {
        "contents": [
            {
                "role": "user",
                "parts": [{"text": "Keep the promise or help the stranger? Rate 1-5."}],
            },
            {"role": "model", "parts": [{"text": "Rating: 2"}]},
            {"role": "user", "parts": [{"text": "Explain briefly."}]},
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are a careful ethicist."}]},
        "generationConfig": {"temperature": 0.3, "maxOutputTokens": 256, "seed": 42},
    }


async def test_unset_parameters_are_not_sent(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    await provider.complete(CompletionRequest(model="m", messages=(Message("user", "hi"),)))
    body = google_server.last.body
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert "systemInstruction" not in body
    assert not body.get("generationConfig")


async def test_json_schema_asks_for_json_output(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    schema = {"type": "object", "properties": {"rating": {"type": "integer"}}}
    await provider.complete(
        CompletionRequest(model="m", messages=(Message("user", "x"),), json_schema=schema)
    )
    config = google_server.last.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema


async def test_returns_text_usage_latency_headers_and_raw(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    google_server.script(
        google_server.ok(
            "Rating: 3\nIt depends.",
            input_tokens=40,
            output_tokens=8,
            headers={"x-ratelimit-remaining-requests": "9", "server-timing": "gfet4t7; dur=5"},
        )
    )
    completion = await provider.complete(REQUEST)
    assert completion.text == "Rating: 3\nIt depends."
    assert completion.finish_reason == "stop"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (40, 8)
    assert completion.latency_ms > 0
    assert completion.rate_limit_headers == {"x-ratelimit-remaining-requests": "9"}
    assert completion.raw["responseId"] == "resp-fake"
    assert completion.raw["usageMetadata"]["totalTokenCount"] == 48


async def test_thoughts_are_not_the_answer_but_count_as_output(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    google_server.script(
        google_server.response(
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {"text": "Weighing both sides...", "thought": True},
                                {"text": "Rating: 5"},
                            ],
                        },
                        "finishReason": "MAX_TOKENS",
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 10,
                    "candidatesTokenCount": 3,
                    "thoughtsTokenCount": 30,
                },
            }
        )
    )
    completion = await provider.complete(REQUEST)
    assert completion.text == "Rating: 5"
    assert completion.finish_reason == "length"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (10, 33)


async def test_a_blocked_prompt_is_an_answer_not_an_error(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    google_server.script(google_server.refusal("SAFETY"))
    completion = await provider.complete(REQUEST)
    assert completion.text == ""
    assert completion.finish_reason == "content_filter"
    assert completion.raw["promptFeedback"] == {"blockReason": "SAFETY"}
    assert completion.usage.input_tokens == 9


async def test_a_safety_stop_is_an_answer_not_an_error(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    google_server.script(google_server.ok("Partial", finish_reason="SAFETY"))
    completion = await provider.complete(REQUEST)
    assert (completion.text, completion.finish_reason) == ("Partial", "content_filter")


async def test_429_wait_comes_from_retry_info_and_is_not_retried(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    google_server.script(
        google_server.error(429, "You exceeded your current rate limit.", retry_delay="17s")
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.retry_after == 17.0
    assert caught.value.status == 429
    assert "You exceeded your current rate limit." in str(caught.value)
    assert len(google_server.requests) == 1


async def test_429_retry_after_header_wins_over_retry_info(
    provider: GoogleProvider, google_server: GoogleServer
) -> None:
    google_server.script(
        google_server.error(429, "slow down", headers={"Retry-After": "4"}, retry_delay="17s")
    )
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(REQUEST)
    assert caught.value.retry_after == 4.0
    assert caught.value.headers == {"retry-after": "4"}


@pytest.mark.parametrize(
    ("status", "retry_delay", "error"),
    [
        (429, None, ProviderRateLimited),
        (503, None, ProviderTransient),
        (503, "2.5s", ProviderRateLimited),
        (500, None, ProviderTransient),
        (400, None, ProviderPermanent),
        (403, None, ProviderPermanent),
        (404, None, ProviderPermanent),
    ],
)
async def test_statuses_map_to_error_classes_without_retrying(
    provider: GoogleProvider,
    google_server: GoogleServer,
    status: int,
    retry_delay: str | None,
    error: type[Exception],
) -> None:
    google_server.script(google_server.error(status, f"failure {status}", retry_delay=retry_delay))
    with pytest.raises(error) as caught:
        await provider.complete(REQUEST)
    assert type(caught.value) is error
    assert getattr(caught.value, "status", None) == status
    assert f"failure {status}" in str(caught.value)
    if isinstance(caught.value, ProviderRateLimited):
        assert caught.value.retry_after == (1.0 if retry_delay is None else 2.5)
    assert len(google_server.requests) == 1


async def test_a_slow_server_times_out_as_transient_once(google_server: GoogleServer) -> None:
    adapter = GoogleProvider("google", KEY, google_server.base_url, timeout=1.0)
    google_server.script(google_server.slow(10.0))
    started = time.perf_counter()
    try:
        with pytest.raises(ProviderTransient, match="timed out"):
            await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()
    # Cut by the 1 s timeout, not by the server answering after 10 s (margin for a busy box).
    assert time.perf_counter() - started < 8.0
    assert len(google_server.requests) == 1


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"candidates": [', "not JSON"),
        (b'{"usageMetadata": {"promptTokenCount": 3}}', "no candidates"),
    ],
)
async def test_a_malformed_body_is_transient_and_says_why(
    provider: GoogleProvider, google_server: GoogleServer, body: bytes, detail: str
) -> None:
    google_server.script(google_server.raw(body))
    with pytest.raises(ProviderTransient, match=f"malformed response body \\({detail}"):
        await provider.complete(REQUEST)
    assert len(google_server.requests) == 1
