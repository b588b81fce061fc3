"""The answers of /api/queue/caps: the install's concurrency caps (see routes_caps.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from valuerank.api.schemas.envelope import Out
from valuerank.queue.slots import Cap


class CapList(Out):
    caps: list[Cap] = Field(description="Every cap of the install, by key.")
    count: int
    next_cursor: None = Field(description="Always null: the list is one page.")


class CapSet(Out):
    key: str
    scope: str = Field(description="global, org, provider or model.")
    max: int | None = Field(description="Null: 0 was sent, the cap is lifted (no cap).")


class CapRemoved(Out):
    key: str
    removed: Literal[True]
