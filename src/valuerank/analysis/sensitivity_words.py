"""Value sensitivities in words, for the CLI, the pages and the report: plain text over the
stored result's dicts, apart from the fit (`sensitivity.py`) so that showing a cached
analysis does not import scipy."""

from __future__ import annotations

from typing import Any

from valuerank.analysis.stakes import direction


def scale_ends(labels: dict[str, str] | None) -> tuple[str | None, str | None]:
    """The lowest and highest scale labels without their grade (None when unknown)."""
    if not labels:
        return None, None
    codes = sorted(labels, key=int)
    return direction(labels[codes[0]]), direction(labels[codes[-1]])


def sentence(model: str, entry: dict[str, Any], labels: dict[str, str] | None) -> str:
    """The finding in words: "a stronger Freedom stake moves gpt-4.1 towards 'support Jordan
    competing' by 0.62 points per score unit [0.48, 0.76]"."""
    value = entry["value"]
    coefficient = entry["coefficient"]
    if coefficient is None:
        return f"{value}: no estimate for {model} ({entry['status'].replace('_', ' ')})"
    low, high = scale_ends(labels)
    up = coefficient >= 0
    end = high if up else low
    towards = f"'{end}'" if end else ("higher" if up else "lower") + " decisions"
    text = (
        f"a stronger {value} stake moves {model} towards {towards} by "
        f"{abs(coefficient):.2f} points per score unit"
    )
    ci = entry["ci95"]
    if ci is not None:
        lo, hi = (ci[0], ci[1]) if up else (-ci[1], -ci[0])
        text += f" [{lo:z.2f}, {hi:z.2f}]"  # z: a mirrored 0 is not "-0.00"
        if lo <= 0 <= hi:
            text += " (the interval includes no effect)"
    return text
