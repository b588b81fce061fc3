"""The one rate-limit header parser: every header form the provider adapters (classify) and
the queue's handlers (ratelimit.reset_from_headers) see, and the rules they used to differ on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from valuerank.providers import classify
from valuerank.providers.base import ProviderRateLimited
from valuerank.queue import ratelimit
from valuerank.ratelimit_headers import (
    parse_duration,
    parse_instant,
    parse_reset,
    parse_retry_after,
    rate_limit_headers,
    reset_from_headers,
    retry_after_from_headers,
)

NOW = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("1m30s", 90.0),  # OpenAI's x-ratelimit-reset-tokens
        ("20ms", 0.02),
        ("120ms", 0.12),
        ("1h2m3.5s", 3723.5),
        ("0s", 0.0),
        ("0.5s", 0.5),
        (".5s", 0.5),
        ("300us", 0.0003),
        ("300µs", 0.0003),  # micro sign
        ("300μs", 0.0003),  # Greek mu
        ("7ns", 7e-9),
        ("1M30S", 90.0),  # units in any case
        ("2MS", 0.002),
        ("1.5", 1.5),  # a bare number is seconds
        (" 2 ", 2.0),
        ("0", 0.0),
        ("", None),
        ("   ", None),
        ("soon", None),
        ("5x", None),
        ("1s trailing", None),
        ("s", None),
        ("-1", None),  # negative: malformed
        ("-1s", None),
        ("inf", None),
        ("nan", None),
    ],
)
def test_parse_duration(text: str, seconds: float | None) -> None:
    result = parse_duration(text)
    assert result == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7.0),
        ("0", 0.0),
        ("0.25", 0.25),
        (" 3 ", 3.0),
        ("Tue, 01 Jan 2030 12:00:30 GMT", 30.0),
        ("Tuesday, 01-Jan-30 12:00:30 GMT", 30.0),  # RFC 850, obsolete but allowed
        ("Tue Jan  1 12:00:30 2030", 30.0),  # asctime, no zone: UTC
        ("Tue, 01 Jan 2030 11:00:00 GMT", 0.0),  # already past: go now
        ("-3", None),  # negative: malformed, ignored
        ("inf", None),
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
        ("2030-01-01T12:00:10z", 10.0),
        ("2030-01-01T12:00:10.500000+00:00", 10.5),
        ("2030-01-01T13:00:10+01:00", 10.0),
        ("2030-01-01T12:00:10.123456789Z", 10.123456),  # nanoseconds trimmed to micro
        ("2030-01-01T12:00:10", 10.0),  # no zone: UTC
        ("Tue, 01 Jan 2030 12:00:10 GMT", 10.0),
        ("2030-01-01T11:00:00Z", 0.0),  # past
        ("6m0s", 360.0),  # a duration where a timestamp was expected
        ("not a time", None),
        ("", None),
    ],
)
def test_parse_reset_takes_a_duration_or_an_instant(value: str, seconds: float | None) -> None:
    result = parse_reset(value, now=NOW)
    assert result == (pytest.approx(seconds) if seconds is not None else None)


def test_parse_instant_is_aware() -> None:
    when = parse_instant("2030-01-01T12:00:00")
    assert when is not None and when.tzinfo is not None
    assert parse_instant("garbage") is None


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
    assert rate_limit_headers([("Retry-After", "1"), ("Server", "x")]) == {"retry-after": "1"}


# Every form either call site sees, and the wait it means (`now` = NOW).
HEADER_FORMS: list[tuple[str, Any, float | None]] = [
    ("retry-after-ms", {"retry-after-ms": "250"}, 0.25),
    ("retry-after-ms wins", {"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
    ("Retry-After seconds", {"Retry-After": "7"}, 7.0),
    ("retry-after lower case", {"retry-after": "1.5"}, 1.5),
    ("RETRY-AFTER upper case", {"RETRY-AFTER": "4"}, 4.0),
    ("name with spaces", {" Retry-After ": " 5 "}, 5.0),
    ("Retry-After HTTP date", {"Retry-After": "Tue, 01 Jan 2030 12:00:30 GMT"}, 30.0),
    ("Retry-After past date", {"Retry-After": "Tue, 01 Jan 2030 11:00:00 GMT"}, 0.0),
    ("pairs from http.client", [("Retry-After", "4"), ("Server", "x")], 4.0),
    ("Retry-After wins over resets", {"Retry-After": "3", "x-ratelimit-reset-tokens": "6m"}, 3.0),
    (
        "OpenAI latest reset",
        {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"},
        360.0,
    ),
    ("OpenAI 1m30s", {"X-RateLimit-Reset-Tokens": "1m30s"}, 90.0),
    ("OpenAI ms", {"x-ratelimit-reset-requests": "20ms"}, 0.02),
    (
        "OpenAI exhausted limit",
        {
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-remaining-tokens": "5000",
            "x-ratelimit-reset-requests": "2s",
            "x-ratelimit-reset-tokens": "6m0s",
        },
        2.0,
    ),
    ("OpenAI-style timestamp", {"x-ratelimit-reset-requests": "2030-01-01T12:00:04Z"}, 4.0),
    ("Anthropic timestamp", {"anthropic-ratelimit-requests-reset": "2030-01-01T12:00:10Z"}, 10.0),
    (
        "Anthropic exhausted limit",
        {
            "anthropic-ratelimit-requests-remaining": "3",
            "anthropic-ratelimit-requests-reset": "2030-01-01T12:00:50Z",
            "Anthropic-RateLimit-Input-Tokens-Remaining": "0",
            "anthropic-ratelimit-input-tokens-reset": "2030-01-01T12:00:05Z",
        },
        5.0,
    ),
    (
        "Anthropic fraction",
        {"anthropic-ratelimit-output-tokens-reset": "2030-01-01T12:00:00.5Z"},
        0.5,
    ),
    (
        "remaining 0.0 is exhausted",
        {
            "x-ratelimit-remaining-requests": "0.0",
            "x-ratelimit-reset-requests": "2s",
            "x-ratelimit-reset-tokens": "9s",
        },
        2.0,
    ),
    ("negative retry-after-ms ignored", {"retry-after-ms": "-5", "Retry-After": "2"}, 2.0),
    (
        "negative Retry-After ignored",
        {"Retry-After": "-3", "x-ratelimit-reset-requests": "4s"},
        4.0,
    ),
    ("infinite retry-after-ms ignored", {"retry-after-ms": "inf"}, None),
    (
        "negative reset ignored",
        {"x-ratelimit-reset-requests": "-1", "x-ratelimit-reset-tokens": "2s"},
        2.0,
    ),
    ("nothing said", {"x-ratelimit-limit-requests": "10", "content-type": "text/plain"}, None),
    ("garbage Retry-After", {"Retry-After": "garbage"}, None),
    ("garbage reset", {"x-ratelimit-reset-requests": "later"}, None),
]


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [pytest.param(h, s, id=name) for name, h, s in HEADER_FORMS],
)
def test_each_header_form(headers: Any, seconds: float | None) -> None:
    got = retry_after_from_headers(headers, now=NOW)
    assert got == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [pytest.param(h, s, id=name) for name, h, s in HEADER_FORMS],
)
def test_both_call_sites_read_the_same_wait(headers: Any, seconds: float | None) -> None:
    """The queue's handlers and the provider adapters name the same wait for a 429."""
    assert ratelimit.reset_from_headers is reset_from_headers
    queue_wait = ratelimit.reset_from_headers(headers, now=NOW)
    as_dict = dict(headers) if not isinstance(headers, dict) else headers
    error = classify.classify_status(429, "slow down", as_dict, now=NOW)
    assert isinstance(error, ProviderRateLimited)
    expected = classify.DEFAULT_RETRY_AFTER if seconds is None else seconds
    assert error.retry_after == pytest.approx(expected)
    assert queue_wait == (pytest.approx(seconds) if seconds is not None else None)


def test_the_hint_sits_between_retry_after_and_the_resets() -> None:
    resets = {"x-ratelimit-reset-tokens": "1m"}
    assert retry_after_from_headers(resets, hint=30.0) == 30.0
    assert retry_after_from_headers({**resets, "Retry-After": "9"}, hint=30.0) == 9.0
    assert retry_after_from_headers(resets, hint=-1.0) == 60.0  # a negative hint is ignored
    assert retry_after_from_headers({}, hint=float("nan")) is None


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
    assert reset_from_headers(headers, now=NOW) == pytest.approx(seconds)
