"""How a scenario is presented to a model: its phrasing and the order of its scale (pure).

A run may ask each scenario in several *presentations* so an analysis can separate a value
from the way it was asked:

* **Phrasing.** Expansion mode ``all`` (or ``random``) gives one scenario per option of a
  level; their ids carry ``o<k>`` after a dimension's segment (``…_Harm2o2``). Stripping those
  gives the *combination id*, the mode-``first`` id of the same level combination: the unit
  that phrasings of one scenario share.
* **Scale order.** A scenario's numbered scale lines (``5 - report the defect now`` …
  ``1 - stay quiet``) can be presented reversed: every line keeps its place and its number,
  and takes the text of the line whose number mirrors it (``low + high - n``), so the text
  written under 5 is shown under 1. The model's answer is then in the *shown* direction and
  `map_decision` brings it back to the definition's. A reversed presentation is stored as its
  own run scenario whose id ends with `REVERSED_SUFFIX`, so jobs, transcripts and exports keep
  one row per presentation; `presentation_of` splits such an id again. The scale lines, their
  mirror and `map_decision` live in `valuerank.scoring.scale` (re-exported here), below the
  providers, whose scripted personas use them too.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Literal, get_args

from valuerank.errors import InvalidInputError
from valuerank.scoring.decision import Decision, decision_code, scale_labels_from_template
from valuerank.scoring.scale import (
    SCALE_ORDERS,
    ScaleLine,
    ScaleOrder,
    map_decision,
    mirrored_scale,
    scale_lines,
)

__all__ = [
    "REVERSED_SUFFIX",
    "RUN_SCALE_ORDERS",
    "SCALE_ORDERS",
    "RunScaleOrder",
    "ScaleLine",
    "ScaleNotReversible",
    "ScaleOrder",
    "combination_of",
    "map_decision",
    "orders_of",
    "phrasing_of",
    "presentation_of",
    "presented_decision",
    "presented_id",
    "reverse_scale",
    "scale_lines",
    "shown_range",
]

RunScaleOrder = Literal["as-written", "reversed", "both"]
RUN_SCALE_ORDERS: tuple[str, ...] = get_args(RunScaleOrder)

# Letters, digits, `_` and `-` only: the id stays one safe part of an exported file name.
REVERSED_SUFFIX = "-reversed"

# `_<Dim><score>o<k>`: the option segment of an expanded scenario id (definitions/expansion).
_OPTION_SEGMENT = re.compile(r"(?<=\d)o(\d+)(?=_|-|$)")
_SEGMENT = re.compile(r"_([^_]+?\d+)o(\d+)(?=_|-|$)")


class ScaleNotReversible(InvalidInputError):
    code = "SCALE_NOT_REVERSIBLE"


def orders_of(choice: RunScaleOrder | str) -> tuple[ScaleOrder, ...]:
    """The presentations a run's `scale_order` setting asks for, as-written first."""
    if choice == "both":
        return SCALE_ORDERS
    if choice in SCALE_ORDERS:
        return (choice,)
    raise InvalidInputError(
        f"unknown scale order {choice!r}", hint="use as-written, reversed or both"
    )


def presented_id(scenario_id: str, order: ScaleOrder) -> str:
    """The run scenario id of `scenario_id` asked in `order`."""
    return scenario_id + REVERSED_SUFFIX if order == "reversed" else scenario_id


def presentation_of(run_scenario_id: str) -> tuple[str, ScaleOrder]:
    """(scenario id, scale order) of a run scenario id written by `presented_id`."""
    if run_scenario_id.endswith(REVERSED_SUFFIX):
        return run_scenario_id[: -len(REVERSED_SUFFIX)], "reversed"
    return run_scenario_id, "as-written"


def combination_of(scenario_id: str) -> str:
    """The combination id (phrasings stripped) of a scenario id, order suffix included."""
    base, _ = presentation_of(scenario_id)
    return _OPTION_SEGMENT.sub("", base)


def phrasing_of(scenario_id: str) -> str:
    """Which phrasing a scenario id is: ``""`` for every level's first option, else its
    option segments joined (``Harm2o2`` or ``Harm2o2_Cost1o3``)."""
    base, _ = presentation_of(scenario_id)
    return "_".join(f"{m.group(1)}o{m.group(2)}" for m in _SEGMENT.finditer(base))


def reverse_scale(body: str) -> str:
    """The body with its scale's texts mirrored: the line numbered n shows the text written
    under ``low + high - n``; everything else is unchanged. SCALE_NOT_REVERSIBLE when the body
    has no run of consecutive numbered lines (``5 - …`` down to ``1 - …``)."""
    shown = mirrored_scale(body)
    if shown is None:
        raise ScaleNotReversible(
            "the scenario's scale cannot be reversed: it needs numbered lines such as "
            "'5 - strongly support …' down to '1 - strongly oppose …', one per number",
            hint="write the scale as 'N - text' lines in the template, "
            "or ask --scale-order as-written",
        )
    return shown


def shown_range(shown: str) -> tuple[int, int]:
    """(low, high) of the scale `shown` numbers; 1–5, the rating scale, without its lines."""
    numbers = [line.number for line in scale_lines(shown)]
    return (min(numbers), max(numbers)) if len(numbers) >= 2 else (1, 5)


def presented_decision(answer: str, shown: str, order: ScaleOrder, *, limit: int = 200) -> Decision:
    """The decision of `answer` to a prompt that showed `shown` in `order`, in the
    definition's direction: read on the shown scale's labels, then mapped back when the scale
    was reversed (a decided answer's reason says so: ``… (asked reversed: answered 2)``; the
    reason of no decision, a category such as ``refusal``, is left alone), the reason cut to
    `limit` characters. The probe and the import both decide through here."""
    decision = decision_code(answer, scale_labels=scale_labels_from_template(shown) or None)
    if order == "as-written":
        return replace(decision, reason=decision.reason[:limit])
    if decision.code is None:
        # Why there is none (`refusal`, …) is a category the figures count: kept as it is.
        return replace(decision, reason=decision.reason[:limit])
    note = f" (asked reversed: answered {decision.code})"
    return replace(
        decision,
        code=map_decision(decision.code, *shown_range(shown)),
        reason=decision.reason[: limit - len(note)] + note,
    )
