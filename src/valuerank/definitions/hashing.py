"""Content hash of a definition version.

``content_hash(d)`` is the SHA-256 hex digest of the canonical JSON of ``d.to_dict()``:
``json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` encoded as
UTF-8. Two definitions have the same hash exactly when their stored ``content`` is equal
(dimension, level and option order count; key order of the dict does not).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from valuerank.formats.definition_model import Definition

__all__ = ["canonical_json", "content_hash"]


def canonical_json(content: Any) -> str:
    """The canonical JSON text of a JSON-ready value (sorted keys, no spaces, UTF-8)."""
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(definition: Definition) -> str:
    """SHA-256 hex digest of the canonical JSON of ``definition.to_dict()``."""
    return hashlib.sha256(canonical_json(definition.to_dict()).encode("utf-8")).hexdigest()
