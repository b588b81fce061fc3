"""How long a rate-limited HTTP response says to wait: the one parser of its headers.

Pure functions on plain values, shared by the provider adapters (`providers/classify.py`), the
queue's handlers (`queue/ratelimit.py` re-exports `reset_from_headers`) and the webhook
outbox (a receiver's `Retry-After`). It lives outside both packages because neither may import
the other.

Where the wait comes from, first match wins:
1. `retry-after-ms` (milliseconds; OpenAI, Anthropic),
2. `Retry-After` (delta-seconds or an HTTP date; RFC 9110); when it is whole seconds and the
   reset picked in 4/5 falls in the second before it, that reset (the same instant, said
   more precisely),
3. a hint the caller found elsewhere (Google's `RetryInfo.retryDelay` in the body),
4. `x-ratelimit-reset-<limit>` (OpenAI: Go durations such as "6m0s", "1m30s", "20ms"),
5. `anthropic-ratelimit-<limit>-reset` (RFC 3339 timestamps).
For 4 and 5 the reset of an exhausted limit (its `remaining` header is 0) wins; when none is
known to be exhausted, the latest reset, so the retry never comes back before every limit
reset. A reset value may be written either way (a duration or a timestamp/HTTP date), and
either family may put the limit's name before or after `reset`/`remaining`.

Settled rules (the queue's and the providers' parsers used to differ):
- Header names are matched case-insensitively and stripped; values are stripped.
- Duration units are case-insensitive ("1M30S" is 90 s); "µs"/"μs"/"us" are microseconds.
- A negative or non-finite number (`Retry-After: -3`, `retry-after-ms: inf`, a duration
  "-1") is malformed and ignored: the next source applies. RFC 9110's delta-seconds has no
  sign, and ignoring a garbled wait (falling back to the resets or the caller's default) is
  safer than retrying at once. An instant in the past is well-formed: it means 0 (go now).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

Headers = Mapping[str, str] | Iterable[tuple[str, str]]

# The header families a rate-limited response may carry (lower case).
RATE_LIMIT_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "retry-after")

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
# datetime.fromisoformat keeps microseconds only: Anthropic may send nanoseconds.
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def lower_names(headers: Headers) -> dict[str, str]:
    """The headers (a mapping or `(name, value)` pairs, as http.client gives them) with
    stripped, lower-cased names and stripped values; a later duplicate wins."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {str(name).strip().lower(): str(value).strip() for name, value in items}


def rate_limit_headers(headers: Headers) -> dict[str, str]:
    """The rate-limit headers of a response (x-ratelimit-*, anthropic-ratelimit-*,
    retry-after*), with lower-cased names; values as sent."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    picked: dict[str, str] = {}
    for name, value in items:
        key = name.strip().lower()
        if key.startswith(RATE_LIMIT_PREFIXES):
            picked[key] = value
    return picked


def _number(text: str) -> float | None:
    """A plain non-negative finite number; None for anything else (negative: malformed)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_duration(text: str) -> float | None:
    """Seconds in a Go-style duration ("1s", "6m0s", "1m30s", "20ms", "1h2m3.5s"; units in
    any case) or a bare number of seconds; None when it is neither, or negative."""
    text = text.strip()
    if not text:
        return None
    if (seconds := _number(text)) is not None:
        return seconds
    position = 0
    total = 0.0
    for match in _DURATION_PART.finditer(text.lower()):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    return total if position == len(text) else None


def parse_instant(text: str) -> datetime | None:
    """An RFC 3339 timestamp (nanoseconds allowed) or an HTTP date, as an aware datetime
    (UTC when it names no zone); None otherwise."""
    text = text.strip()
    if not text:
        return None
    iso = _LONG_FRACTION.sub(r"\1", text)
    if iso.endswith("z"):  # RFC 3339 allows a lower-case zone letter; fromisoformat does not
        iso = iso[:-1] + "Z"
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _seconds_until(when: datetime, now: datetime | None) -> float:
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def parse_retry_after(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` value: delta-seconds or an HTTP date (a past
    date: 0). None when it is neither, or negative."""
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _seconds_until(when, now)


def parse_reset(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds until a limit resets, from a duration ("6m0s") or an instant (RFC 3339 or an
    HTTP date); None when it is neither."""
    seconds = parse_duration(value)
    if seconds is not None:
        return seconds
    when = parse_instant(value)
    return None if when is None else _seconds_until(when, now)


def _limit_name(rest: str, word: str) -> str | None:
    """The limit a `<word>-<limit>` or `<limit>-<word>` header suffix names, else None."""
    if rest.startswith(word + "-"):
        return rest[len(word) + 1 :]
    if rest.endswith("-" + word):
        return rest[: -len(word) - 1]
    return None


def reset_wait(lower: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """The wait the reset headers name (lower-cased names; see the module doc, 4 and 5)."""
    for family in ("x-ratelimit-", "anthropic-ratelimit-"):
        resets: dict[str, float | None] = {}
        remaining: dict[str, str] = {}
        for name, value in lower.items():
            if not name.startswith(family):
                continue
            rest = name.removeprefix(family)
            if (limit := _limit_name(rest, "reset")) is not None:
                resets[limit] = parse_reset(value, now=now)
            elif (limit := _limit_name(rest, "remaining")) is not None:
                remaining[limit] = value
        wait = _latest_reset(resets, remaining.get)
        if wait is not None:
            return wait
    return None


def _latest_reset(
    resets: Mapping[str, float | None], remaining: Callable[[str], str | None]
) -> float | None:
    """The reset of an exhausted limit (remaining = 0), else the latest of all resets."""
    known = {limit: seconds for limit, seconds in resets.items() if seconds is not None}
    exhausted = [s for limit, s in known.items() if _number(remaining(limit) or "") == 0]
    if exhausted:
        return max(exhausted)
    return max(known.values()) if known else None


def retry_after_from_headers(
    headers: Headers, *, hint: float | None = None, now: datetime | None = None
) -> float | None:
    """How long the response says to wait, or None when it does not say (see module doc).
    `hint`: a wait found outside the headers (negative or non-finite: ignored)."""
    lower = lower_names(headers)
    millis = _number(lower.get("retry-after-ms", ""))
    if millis is not None:
        return millis / 1000.0
    seconds = parse_retry_after(lower.get("retry-after", ""), now=now)
    if seconds is not None:
        # Whole seconds are the header's resolution: a reset of the exhausted limit in
        # the second before it is the same instant, said precisely.
        precise = reset_wait(lower, now=now)
        if precise is not None and seconds - 1.0 < precise <= seconds:
            return precise
        return seconds
    if hint is not None and math.isfinite(hint) and hint >= 0:
        return hint
    return reset_wait(lower, now=now)


def reset_from_headers(headers: Headers, *, now: datetime | None = None) -> float | None:
    """Seconds until a provider's rate limit resets, from its response headers alone (no
    hint); None when they do not say. For handlers that call an HTTP API themselves."""
    return retry_after_from_headers(headers, now=now)


__all__ = [
    "RATE_LIMIT_PREFIXES",
    "Headers",
    "lower_names",
    "parse_duration",
    "parse_instant",
    "parse_reset",
    "parse_retry_after",
    "rate_limit_headers",
    "reset_from_headers",
    "reset_wait",
    "retry_after_from_headers",
]
