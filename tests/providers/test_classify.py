"""Error classification and rate-limit header parsing: pure functions, plain values."""

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
    parse_duration,
    parse_retry_after,
    parse_timestamp_reset,
    rate_limit_headers,
    retry_after_from_headers,
)

NOW = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_rate_limit_headers_picks_the_three_families_lower_cased() -> None:
    headers = {
        "X-RateLimit-Remaining-Requests": "0",
        "x-ratelimit-reset-tokens": "6m0s",
        "anthropic-ratelimit-tokens-reset": "2030-01-01T00:00:00Z",
        "Retry-After": "7",
        "retry-after-ms": "7000",
        "Content-Type": "application/json",
        "x-request-id": "req-1",
        "ratelimit-policy": "ignored",
    }
    assert rate_limit_headers(headers) == {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-tokens": "6m0s",
        "anthropic-ratelimit-tokens-reset": "2030-01-01T00:00:00Z",
        "retry-after": "7",
        "retry-after-ms": "7000",
    }


def test_rate_limit_headers_accepts_pairs() -> None:
    assert rate_limit_headers([("Retry-After", "1"), ("Server", "x")]) == {"retry-after": "1"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0s", 0.0),
        ("300us", 0.0003),
        ("1.5", 1.5),
        (" 2 ", 2.0),
        ("", None),
        ("soon", None),
        ("5x", None),
        ("1s trailing", None),
        ("-1", None),
    ],
)
def test_parse_duration(text: str, seconds: float | None) -> None:
    result = parse_duration(text)
    assert result == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7.0),
        ("0.25", 0.25),
        ("-3", 0.0),
        ("Tue, 01 Jan 2030 12:00:30 GMT", 30.0),
        ("Tue, 01 Jan 2030 11:00:00 GMT", 0.0),  # already past: go now
        ("tomorrow", None),
        ("", None),
    ],
)
def test_parse_retry_after_seconds_or_http_date(value: str, seconds: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("2030-01-01T12:00:10Z", 10.0),
        ("2030-01-01T12:00:10.500000+00:00", 10.5),
        ("2030-01-01T12:00:10.123456789Z", 10.123456),  # nanoseconds trimmed to micro
        ("2030-01-01T11:00:00Z", 0.0),
        ("not a time", None),
    ],
)
def test_parse_timestamp_reset(value: str, seconds: float | None) -> None:
    result = parse_timestamp_reset(value, now=NOW)
    assert result == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_after_ms_wins_over_everything() -> None:
    headers = {"retry-after-ms": "1500", "Retry-After": "9", "x-ratelimit-reset-tokens": "1m"}
    assert retry_after_from_headers(headers, hint=30.0, now=NOW) == 1.5


def test_retry_after_wins_over_the_hint_and_the_resets() -> None:
    headers = {"Retry-After": "9", "x-ratelimit-reset-tokens": "1m"}
    assert retry_after_from_headers(headers, hint=30.0, now=NOW) == 9.0


@pytest.mark.parametrize(
    ("reset", "seconds"),
    [("16.620s", 16.62), ("17s", 17.0), ("15.5s", 17.0), ("17.5s", 17.0), ("6m0s", 17.0)],
)
def test_a_reset_in_the_second_before_retry_after_says_it_precisely(
    reset: str, seconds: float
) -> None:
    """Retry-After counts whole seconds (rounded up): the exhausted limit's reset in the second
    before it is the same instant, to the millisecond; any other reset leaves it alone."""
    headers = {
        "Retry-After": "17",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": reset,
    }
    assert retry_after_from_headers(headers, now=NOW) == pytest.approx(seconds)


def test_the_hint_wins_over_the_resets() -> None:
    assert retry_after_from_headers({"x-ratelimit-reset-tokens": "1m"}, hint=30.0) == 30.0


def test_openai_resets_prefer_the_exhausted_limit() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "20ms",
        "x-ratelimit-remaining-tokens": "5000",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert retry_after_from_headers(headers) == pytest.approx(0.02)


def test_openai_resets_without_remaining_take_the_latest() -> None:
    headers = {"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "6m0s"}
    assert retry_after_from_headers(headers) == 360.0


def test_anthropic_resets_prefer_the_exhausted_limit() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "3",
        "anthropic-ratelimit-requests-reset": "2030-01-01T12:00:50Z",
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": "2030-01-01T12:00:05Z",
    }
    assert retry_after_from_headers(headers, now=NOW) == 5.0


def test_no_retry_information_is_none() -> None:
    assert retry_after_from_headers({"x-ratelimit-limit-requests": "10"}) is None
    assert retry_after_from_headers({"Retry-After": "garbage"}) is None


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
