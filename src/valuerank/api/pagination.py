"""Cursor pagination of every list the API returns.

A list answers `{"<items>": [...], "count": n, "next_cursor": "…" | null}`; the client passes
`next_cursor` back as `?cursor=` for the next page, with the same filters. A cursor is opaque
to clients: the URL-safe base64 of a JSON array holding the sort key of the last item sent
(e.g. `[created_at, id]`), so a page is a keyset query (`WHERE (created_at, id) < (:a, :b)`)
that stays right while rows are added, never an OFFSET.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from fastapi import Query

from valuerank.api.fields import INT32_MAX
from valuerank.errors import ValueRankError

T = TypeVar("T")

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_CURSOR_LENGTH = 2048


class InvalidCursorError(ValueRankError):
    code = "INVALID_CURSOR"
    http_status = 400


def encode_cursor(key: Sequence[Any]) -> str:
    """The cursor after an item whose sort key is `key` (JSON-serialisable values)."""
    raw = json.dumps(list(key), separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, *, arity: int) -> list[Any]:
    """The sort key a cursor holds; `InvalidCursorError` unless it is one of ours of `arity`."""
    hint = "pass back the next_cursor of the previous page unchanged, or omit cursor"
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidCursorError("the cursor is too long", hint=hint)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
    except (binascii.Error, ValueError):
        raise InvalidCursorError("the cursor is not one this server wrote", hint=hint) from None
    if not isinstance(key, list) or len(key) != arity:
        raise InvalidCursorError("the cursor is not one this server wrote", hint=hint)
    return key


def _utc_time(text: str) -> bool:
    """`text` is an ISO-8601 time with an offset that UTC can hold."""
    try:
        moment = datetime.fromisoformat(text)
        moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return False
    return moment.tzinfo is not None


def after_created(cursor: str | None) -> tuple[str, str] | None:
    """The (`created_at`, `id`) a newest-first page continues after (see `findings.keyset`)."""
    if cursor is None:
        return None
    created, last = decode_cursor(cursor, arity=2)
    if not all(isinstance(v, str) and "\x00" not in v for v in (created, last)) or not _utc_time(
        created
    ):
        raise InvalidCursorError(
            "the cursor is not one this server wrote",
            hint="pass back the next_cursor of the previous page unchanged, or omit cursor",
        )
    return created, last


def page(name: str, items: Sequence[Any], *, limit: int, key: Any = None) -> dict[str, Any]:
    """The page of a keyset query that fetched `limit + 1` rows: at most `limit` items, and
    the cursor of the last one when there are more. `key(item)` gives an item's sort key."""
    shown = list(items[:limit])
    more = len(items) > limit
    next_cursor = encode_cursor(key(shown[-1])) if more and shown and key else None
    return {name: shown, "count": len(shown), "next_cursor": next_cursor}


def items_after(items: Sequence[T], key: Callable[[T], str], after: str | None) -> list[T]:
    """The items after the one whose key is `after` (all of them when None), for lists
    computed in memory in a stable order (e.g. a definition's expanded scenarios)."""
    if after is None:
        return list(items)
    for index, item in enumerate(items):
        if key(item) == after:
            return list(items[index + 1 :])
    raise InvalidCursorError(
        "the cursor names no item of this list",
        hint="pass back the next_cursor of the previous page with the same filters",
    )


Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per page.")]
Cursor = Annotated[
    str | None,
    Query(max_length=MAX_CURSOR_LENGTH, description="`next_cursor` of the previous page."),
]

# A run's event log is paged by sequence number (events are only ever appended).
EventsAfter = Annotated[
    int, Query(ge=0, le=INT32_MAX, description="Return events with seq > after.")
]
EventsLimit = Annotated[int, Query(ge=1, le=1000, description="Events per page.")]
