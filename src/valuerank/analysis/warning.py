"""A warning an analysis hands out: the one shape that writes it and that /openapi.json
documents. Its own module (no numpy): the API's schemas name it without loading the
statistics."""

from __future__ import annotations

from pydantic.dataclasses import dataclass

from valuerank.shapes import SHAPE


@dataclass(frozen=True, config=SHAPE)
class AnalysisWarning:
    """Something a reader of the figures must know (the original worker's shape)."""

    code: str
    message: str
    recommendation: str
