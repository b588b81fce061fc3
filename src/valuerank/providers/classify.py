"""Turn a failed HTTP exchange with a provider into the right `ProviderError`; pure functions.

The queue acts on the class alone: `ProviderRateLimited` reschedules after `retry_after`
without spending an attempt, `ProviderTransient` backs off, `ProviderPermanent` fails at once.

Where the wait comes from, first match wins:
1. `retry-after-ms` (milliseconds; OpenAI, Anthropic),
2. `Retry-After` (seconds or an HTTP date; RFC 9110); when it is whole seconds and a reset
   of 4 or 5 falls in the second before it, that reset (the same instant, more precisely),
3. a hint the adapter found in the body (Google's `RetryInfo.retryDelay`),
4. `x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens` (durations like "6m0s", "20ms"),
5. `anthropic-ratelimit-*-reset` (RFC 3339 timestamps),
6. `DEFAULT_RETRY_AFTER`.
For 4 and 5 the reset of an exhausted limit (`remaining` = 0) wins; when none is known to be
exhausted, the latest reset is used, so the retry never comes back before every limit reset.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from valuerank.providers.base import (
    ProviderError,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)

# A 429/529 that says nothing about when to come back: wait one second. Short on purpose:
# the queue's adaptive concurrency already cuts the rate on every 429, and the providers
# that matter (OpenAI, Anthropic, Google) do send a reset, so this is only the fallback.
DEFAULT_RETRY_AFTER = 1.0

# Anthropic's "overloaded" status; not in the HTTP registry.
HTTP_OVERLOADED = 529

# Finish reasons: the one vocabulary every adapter reports (OpenAI's words, plus "refusal").
# Unknown reasons of OpenAI-compatible servers pass through unchanged.
FINISH_STOP = "stop"
FINISH_LENGTH = "length"
FINISH_CONTENT_FILTER = "content_filter"
FINISH_REFUSAL = "refusal"
FINISH_TOOL_CALLS = "tool_calls"
REFUSAL_REASONS = frozenset({FINISH_REFUSAL, FINISH_CONTENT_FILTER})

_RATE_LIMIT_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "retry-after")

# Client-side statuses that describe a moment, not the request: timeout, conflict, too early,
# client closed the request (nginx/Google).
_TRANSIENT_4XX = frozenset({408, 409, 425, 499})

# Context-length failures are permanent whatever status a server uses for them (llama.cpp and
# some proxies answer 500). Not applied to 429/529: "tokens" appears in TPM limit messages.
_CONTEXT_LENGTH = re.compile(
    r"context[ _-]?length|context[ _-]?window|maximum context|exceed_context_size"
    r"|prompt is too long|too many tokens|reduce the length of the messages",
    re.IGNORECASE,
)
# A 429 for an exhausted billing quota cannot clear by waiting.
_QUOTA_EXHAUSTED = re.compile(r"insufficient_quota|exceeded your current quota", re.IGNORECASE)

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|μs|ns|m|s)")
_DURATION_UNITS = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ns": 1e-9,
}
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def rate_limit_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """The rate-limit headers of a response (x-ratelimit-*, anthropic-ratelimit-*, retry-after*),
    with lower-cased names."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    picked: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        if key.startswith(_RATE_LIMIT_PREFIXES):
            picked[key] = value
    return picked


def parse_duration(text: str) -> float | None:
    """Seconds in a Go-style duration ("1s", "6m0s", "20ms", "1h2m3.5s") or a bare number of
    seconds; None when it is neither."""
    text = text.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    position = 0
    total = 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    return total if position == len(text) else None


def parse_retry_after(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` value: delta-seconds or an HTTP date."""
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _seconds_until(when, now)


def parse_timestamp_reset(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds until an RFC 3339 timestamp (Anthropic's `anthropic-ratelimit-*-reset`)."""
    text = _LONG_FRACTION.sub(r"\1", value.strip())
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _seconds_until(when, now)


def _seconds_until(when: datetime, now: datetime | None) -> float:
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def retry_after_from_headers(
    headers: Mapping[str, str], *, hint: float | None = None, now: datetime | None = None
) -> float | None:
    """How long the response says to wait, or None when it does not say (see module doc)."""
    lower = {name.lower(): value for name, value in headers.items()}
    if "retry-after-ms" in lower:
        try:
            millis = float(lower["retry-after-ms"])
        except ValueError:
            pass
        else:
            if math.isfinite(millis):
                return max(millis / 1000.0, 0.0)
    if "retry-after" in lower:
        seconds = parse_retry_after(lower["retry-after"], now=now)
        if seconds is not None:
            # Whole seconds are the header's resolution: a reset of the exhausted limit in
            # the second before it is the same instant, said precisely.
            precise = _reset_from_headers(lower, now=now)
            if precise is not None and seconds - 1.0 < precise <= seconds:
                return precise
            return seconds
    if hint is not None and math.isfinite(hint):
        return max(hint, 0.0)
    return _reset_from_headers(lower, now=now)


def _reset_from_headers(lower: Mapping[str, str], *, now: datetime | None) -> float | None:
    """The wait the reset headers name (lower-cased names; see the module doc, 4 and 5)."""
    # OpenAI: x-ratelimit-reset-<limit> / x-ratelimit-remaining-<limit>.
    openai: dict[str, float | None] = {
        name.removeprefix("x-ratelimit-reset-"): parse_duration(value)
        for name, value in lower.items()
        if name.startswith("x-ratelimit-reset-")
    }
    wait = _latest_reset(openai, lambda limit: lower.get(f"x-ratelimit-remaining-{limit}"))
    if wait is not None:
        return wait
    # Anthropic: anthropic-ratelimit-<limit>-reset / anthropic-ratelimit-<limit>-remaining.
    anthropic: dict[str, float | None] = {
        name.removeprefix("anthropic-ratelimit-").removesuffix("-reset"): parse_timestamp_reset(
            value, now=now
        )
        for name, value in lower.items()
        if name.startswith("anthropic-ratelimit-") and name.endswith("-reset")
    }
    return _latest_reset(
        anthropic, lambda limit: lower.get(f"anthropic-ratelimit-{limit}-remaining")
    )


def _latest_reset(
    resets: Mapping[str, float | None], remaining: Callable[[str], str | None]
) -> float | None:
    """The reset of an exhausted limit (remaining = 0), else the latest of all resets."""
    known = {limit: seconds for limit, seconds in resets.items() if seconds is not None}
    exhausted = [s for limit, s in known.items() if (remaining(limit) or "").strip() == "0"]
    if exhausted:
        return max(exhausted)
    return max(known.values()) if known else None


def classify_status(
    status: int | None,
    message: str,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    retry_after_hint: float | None = None,
    now: datetime | None = None,
) -> ProviderError:
    """The error for a failed HTTP exchange (returned, not raised, so callers `raise … from`).

    429 and 529 are always rate limits (with `DEFAULT_RETRY_AFTER` when the response names
    no wait); 503 is a rate limit only when it says when to come back, else transient.
    408, 409, 425, 499, other 5xx and unknown statuses are transient; other 4xx are
    permanent, and so is a context-length failure or an exhausted billing quota whatever the
    status.
    """
    headers = headers or {}
    where = f"{provider}: " if provider else ""
    text = f"{where}HTTP {status}: {message}" if status is not None else f"{where}{message}"
    picked = rate_limit_headers(headers)
    if status in (429, HTTP_OVERLOADED) and _QUOTA_EXHAUSTED.search(message):
        return ProviderPermanent(text + " (billing quota exhausted)", status=status)
    if status not in (429, HTTP_OVERLOADED) and _CONTEXT_LENGTH.search(message):
        return ProviderPermanent(text, status=status)
    if status in (429, HTTP_OVERLOADED, 503):
        wait = retry_after_from_headers(headers, hint=retry_after_hint, now=now)
        if wait is not None or status != 503:
            return ProviderRateLimited(
                text,
                retry_after=DEFAULT_RETRY_AFTER if wait is None else wait,
                status=status,
                headers=picked,
            )
        return ProviderTransient(text, status=status)
    if status is None or status in _TRANSIENT_4XX or status >= 500 or status < 400:
        return ProviderTransient(text, status=status)
    return ProviderPermanent(text, status=status)


# Response bodies. A success status with a body that is not what the API promises is a
# server hiccup (a proxy's HTML page, a truncated body): transient, with what was seen.


def json_body(provider: str, body: bytes | str) -> dict[str, Any]:
    """The JSON object of a response body, or `ProviderTransient` saying what was wrong."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ProviderTransient(
            f"{provider}: malformed response body (not JSON): {body[:200]!r}"
        ) from exc
    if not isinstance(data, dict):
        raise ProviderTransient(f"{provider}: malformed response body (not a JSON object)")
    return data


def int_field(container: object, key: str) -> int:
    """A token count from a usage object; 0 when absent or not an integer."""
    if isinstance(container, dict):
        value = container.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0
