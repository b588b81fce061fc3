"""Error classification: pure functions, plain values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from valuerank.providers.base import (
    ProviderError,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)
from valuerank.providers.classify import (
    DEFAULT_RETRY_AFTER,
    REFUSAL_REASONS,
    classify_status,
    int_field,
    json_body,
    rate_limit_headers,
)

NOW = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


# The header parsing itself: tests/test_ratelimit_headers.py (one parser, shared with the queue).


@pytest.mark.parametrize(
    ("status", "headers", "expected", "retry_after"),
    [
        (429, {"Retry-After": "7"}, ProviderRateLimited, 7.0),
        (429, {}, ProviderRateLimited, DEFAULT_RETRY_AFTER),
        (529, {}, ProviderRateLimited, DEFAULT_RETRY_AFTER),
        (529, {"retry-after": "20"}, ProviderRateLimited, 20.0),
        (503, {"Retry-After": "5"}, ProviderRateLimited, 5.0),
        (503, {"x-ratelimit-reset-requests": "2s"}, ProviderRateLimited, 2.0),
        (503, {}, ProviderTransient, None),
        (500, {}, ProviderTransient, None),
        (502, {"Retry-After": "5"}, ProviderTransient, None),
        (504, {}, ProviderTransient, None),
        (408, {}, ProviderTransient, None),
        (409, {}, ProviderTransient, None),
        (499, {}, ProviderTransient, None),
        (None, {}, ProviderTransient, None),
        (400, {}, ProviderPermanent, None),
        (401, {}, ProviderPermanent, None),
        (403, {}, ProviderPermanent, None),
        (404, {}, ProviderPermanent, None),
        (413, {}, ProviderPermanent, None),
        (422, {}, ProviderPermanent, None),
    ],
)
def test_classify_status(
    status: int | None,
    headers: dict[str, str],
    expected: type[ProviderError],
    retry_after: float | None,
) -> None:
    error = classify_status(status, "boom", headers, provider="openai", now=NOW)
    assert type(error) is expected
    assert error.status == status
    assert str(error).startswith("openai: ")
    assert "boom" in str(error)
    if retry_after is not None:
        assert isinstance(error, ProviderRateLimited)
        assert error.retry_after == retry_after
        assert error.headers == rate_limit_headers(headers)


def test_the_default_wait_is_one_second() -> None:
    assert DEFAULT_RETRY_AFTER == 1.0


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens (context_length_exceeded)",
        "prompt is too long: 250000 tokens > 200000 maximum",
        "the request exceeds the available context size (exceed_context_size_error)",
        "Input is longer than the model's context window",
    ],
)
@pytest.mark.parametrize("status", [400, 413, 500])
def test_context_length_is_permanent_whatever_the_status(status: int, message: str) -> None:
    assert type(classify_status(status, message)) is ProviderPermanent


def test_a_token_rate_limit_is_not_mistaken_for_context_length() -> None:
    error = classify_status(429, "Rate limit reached: too many tokens per min", {})
    assert isinstance(error, ProviderRateLimited)


def test_an_exhausted_billing_quota_is_permanent() -> None:
    error = classify_status(429, "You exceeded your current quota (insufficient_quota)")
    assert type(error) is ProviderPermanent
    assert error.status == 429


def test_refusal_reasons() -> None:
    assert {"refusal", "content_filter"} == REFUSAL_REASONS


def test_json_body() -> None:
    assert json_body("p", b'{"a": 1}') == {"a": 1}
    with pytest.raises(ProviderTransient, match=r"p: malformed response body \(not JSON\)"):
        json_body("p", b"<html>")
    with pytest.raises(ProviderTransient, match=r"not a JSON object"):
        json_body("p", "[1]")


def test_int_field() -> None:
    assert int_field({"n": 5}, "n") == 5
    assert int_field({"n": True}, "n") == 0
    assert int_field({"n": "5"}, "n") == 0
    assert int_field(None, "n") == 0
