"""The JSON an analysis hands out: a last pass that guarantees strict JSON (its warnings are
`analysis.warning.AnalysisWarning`).

Every statistic is computed to give a defined value on degenerate input; `clean` is the net
under that: numpy scalars become Python numbers, floats keep 6 significant digits, and any
non-finite float that slipped through becomes None (so `json.dumps(..., allow_nan=False)`
always works).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

SIGNIFICANT_DIGITS = 6


def number(value: Any) -> float | None:
    """A finite float with 6 significant digits, or None."""
    if value is None:
        return None
    x = float(value)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{SIGNIFICANT_DIGITS}g}")


class Checked(dict[str, Any]):
    """A mapping already made of finite, rounded Python numbers (built from a vectorised
    rounding): `clean` passes it through instead of visiting every value."""


def rounded(values: Any) -> list[Any]:
    """Finite floats with 6 significant digits, NaN/inf as None, as a nested Python list."""
    array = np.asarray(values, dtype=float)
    finite = np.isfinite(array)
    magnitude = np.floor(np.log10(np.abs(np.where(finite & (array != 0), array, 1.0))))
    scale = 10.0 ** (SIGNIFICANT_DIGITS - 1 - magnitude)
    result = np.where(finite, np.round(array * scale) / scale, np.nan).astype(object)
    result[~finite] = None
    listed: list[Any] = result.tolist()
    return listed


def clean(value: Any) -> Any:
    """`value` as strict JSON data (see the module docstring)."""
    if isinstance(value, Checked):
        return dict(value)
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return number(value)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [clean(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    raise TypeError(f"cannot put {type(value).__name__} in an analysis result")


def pair_key(a: str, b: str) -> str:
    """The key of a model pair: the two ids in sorted order joined by ':' (model ids contain
    ':' themselves, so the entry also names `model1` and `model2`)."""
    first, second = sorted((a, b))
    return f"{first}:{second}"
