"""Turn a failed HTTP exchange with a provider into the right `ProviderError`; pure functions.

The queue acts on the class alone: `ProviderRateLimited` reschedules after `retry_after`
without spending an attempt, `ProviderTransient` backs off, `ProviderPermanent` fails at once.

How long a rate limit says to wait is parsed by `valuerank.ratelimit_headers` (shared with
the queue and the webhook outbox; re-exported here for the adapters): `retry-after-ms`, then
`Retry-After`, then the adapter's hint from the body, then the reset headers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from valuerank.providers.base import (
    ProviderError,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)

# The adapters read these two from here (the `as` re-exports them).
from valuerank.ratelimit_headers import parse_duration as parse_duration
from valuerank.ratelimit_headers import rate_limit_headers as rate_limit_headers
from valuerank.ratelimit_headers import retry_after_from_headers

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
