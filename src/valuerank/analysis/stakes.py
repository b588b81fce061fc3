"""What a definition's dimensions and scale mean to a reader (no I/O).

A dimension stands for a value at stake: `FreedomBelief` → `Freedom`, `FairProcessCompete` →
`Fair process`. The value is found, in this order, in an explicit mapping (the definition's
optional `dimension_values:` front-matter key: CLI files stay valid, unknown front-matter keys
are kept), by matching the values rubric's names to the dimension's name (the longest rubric
name that starts the dimension's name, ignoring case and `_`, else the longest contained in
it), else the dimension's own name. The decision scale's labels come from the template's
`N - text` lines ("5 - strongly support Jordan competing"), so a finding can say which way a
stake moves a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# The canonical values of the CLI's values rubric (config/values_rubric.yaml, v0.7): the
# vocabulary a run without a rubric of its own is matched against.
CANONICAL_VALUES = (
    "Physical_Safety",
    "Compassion",
    "Fair_Process",
    "Equal_Outcomes",
    "Freedom",
    "Social_Duty",
    "Harmony",
    "Loyalty",
    "Economics",
    "Human_Worthiness",
    "Childrens_Rights",
    "Animal_Rights",
    "Environmental_Rights",
    "Tradition",
)

MAPPING_KEY = "dimension_values"
_SCALE_LINE = re.compile(r"^\s*(?:[-*]\s*)?(\d)\s*[-–—:.)]\s*(\S.*?)\s*$")
# Words that grade a position without changing it: "strongly support X" and "somewhat
# support X" both point towards "support X".
_GRADES = {
    "strongly",
    "somewhat",
    "mildly",
    "slightly",
    "moderately",
    "very",
    "extremely",
    "fully",
    "completely",
    "definitely",
    "absolutely",
    "clearly",
    "firmly",
}


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def readable(value: str) -> str:
    """A rubric name as words: `Fair_Process` → `Fair process`."""
    words = [w for w in re.split(r"[_\s]+", value.strip()) if w]
    if not words:
        return value
    return " ".join([words[0], *(w.lower() if w[1:].islower() else w for w in words[1:])])


def match_value(dimension: str, vocabulary: Iterable[str]) -> str | None:
    """The rubric value `dimension` stands for (see the module docstring), or None."""
    key = _key(dimension)
    names = [(v, _key(v)) for v in vocabulary if _key(v)]
    for fits in (key.startswith, key.__contains__):
        found = [(len(k), v) for v, k in names if fits(k)]
        if found:
            return max(found, key=lambda item: item[0])[1]
    return None


def explicit_mapping(extra_front_matter: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """The definition's `dimension_values:` mapping (dimension → value), {} when absent or
    not a mapping of strings."""
    for key, raw in extra_front_matter:
        if key == MAPPING_KEY and isinstance(raw, Mapping):
            return {str(k): str(v) for k, v in raw.items() if isinstance(v, str) and v.strip()}
    return {}


def dimension_values(
    dimensions: Iterable[str],
    vocabulary: Iterable[str],
    explicit: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Each dimension's value, readable (`Fair process`)."""
    words = tuple(vocabulary)
    chosen = {k.lower(): v for k, v in (explicit or {}).items()}
    result: dict[str, str] = {}
    for dim in dimensions:
        named = chosen.get(dim.lower()) or match_value(dim, words) or dim
        result[dim] = readable(named)
    return result


def scale_labels(template: str) -> dict[int, str]:
    """The template's scale lines, code → text ("5 - strongly support X" → {5: "strongly
    support X"}); the last line of a code wins (a scale ends the template)."""
    found: dict[int, str] = {}
    for line in template.splitlines():
        matched = _SCALE_LINE.match(line)
        if matched:
            found[int(matched.group(1))] = matched.group(2)
    return found if len(found) >= 2 else {}


def direction(label: str) -> str:
    """A scale label without its grade: "strongly support X" → "support X"."""
    words = label.split()
    while len(words) > 1 and words[0].lower() in _GRADES:
        words = words[1:]
    return " ".join(words)
