"""The scripted personas' deterministic draws: a hash of some strings as a number in [0, 1),
and the rounding their ratings use. Written once for the ratings, the JSON answers and the
injected errors."""

from __future__ import annotations

import hashlib
import math


def unit(*parts: str) -> float:
    """The first 8 bytes of sha256 of the parts (joined by NUL) as a number in [0, 1)."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)
