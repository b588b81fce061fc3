"""How a scripted persona reads a transcript when it is asked to judge one.

A scripted judge is handed nothing but what a real judge gets: the judge prompt and the
transcript text. It finds the Target's first answer (the `**Target:**` block of turn 1, or
the whole text when there is no such block), reads its decision the way the pipeline does
(`valuerank.scoring.decision`, with the scale labels of the first Probe), and then applies
its persona's reading habit — so judges can disagree, and do so for a reason a test can
predict:

| persona | habit |
|---|---|
| deontologist | literal: reads the decision as written |
| utilitarian | careful, but misreads one transcript in ten by one point (seeded) |
| contrarian | reads the scale upside down (lo + hi − x) |
| centrist | pulls the reading half-way to the middle of the scale |
| agreeable | reads one point higher than written |
| neutral | always reports the middle of the scale |
| random | reports a uniformly random point (seeded) |
| refuser, rambler | do not judge: they answer in prose, so the verdict is unusable |

A transcript without a decision (a refusal, an unparseable answer) is read as null by every
habit that starts from what is written; `neutral` and `random` answer regardless.

The values a judge names follow the decision it reads, not its persona (`value_verdict`), so
win rates follow what the models chose. Each offered value belongs to one end of the scale: the
end whose label (the first Probe's `N - text` line of the lowest or highest point) names it
("1 - keep quiet out of loyalty" → Loyalty is the low end's), else an end fixed by a hash of
the value's name alone, the same for every judge and transcript. A reading above the scale's
middle prioritises the high end's values and deprioritises the low end's; below, the reverse;
the middle or no reading names none. A judge that misreads (mirrored, generous, …) names the
values of the end it read.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from typing import Literal

from valuerank.providers.base import Message
from valuerank.scoring.decision import decision_code, scale_labels_from_template

Habit = Literal["literal", "careful", "mirrored", "central", "generous", "middle", "random"]

HABITS: dict[str, Habit] = {
    "deontologist": "literal",
    "utilitarian": "careful",
    "contrarian": "mirrored",
    "centrist": "central",
    "agreeable": "generous",
    "neutral": "middle",
    "random": "random",
}
# Personas that decline the judge's task (their reply carries no verdict).
NON_JUDGES = frozenset({"refuser", "rambler"})
CAREFUL_MISREAD_RATE = 0.1

_TARGET = re.compile(r"\*\*Target:\*\*\s*(.*?)(?=\n#{1,6} |\n\*\*Probe:\*\*|\Z)", re.DOTALL)
_PROBE = re.compile(r"\*\*Probe:\*\*\s*(.*?)(?=\n\*\*Target:\*\*|\Z)", re.DOTALL)


def _transcript_text(messages: Sequence[Message]) -> str:
    users = [m.content for m in messages if m.role == "user"]
    return users[-1] if users else ""


def _labels(messages: Sequence[Message]) -> dict[int, str]:
    """The scale labels of the first Probe of the transcript the judge was sent."""
    probe = _PROBE.search(_transcript_text(messages))
    return scale_labels_from_template(probe.group(1)) if probe else {}


def written_decision(messages: Sequence[Message]) -> int | None:
    """The decision of the Target's first answer in the transcript the judge was sent."""
    text = _transcript_text(messages)
    answer = _TARGET.search(text)
    labels = _labels(messages)
    return decision_code(answer.group(1) if answer else text, scale_labels=labels).code


def _names(label: str, value: str) -> bool:
    words = value.replace("_", " ").lower()
    return words in label.lower() or value.lower() in label.lower()


def value_verdict(
    messages: Sequence[Message], values: Sequence[str], reading: int | None, scale: tuple[int, int]
) -> tuple[list[str], list[str]]:
    """(prioritised, deprioritised) values for a reading of the transcript (module doc)."""
    lo, hi = scale
    if reading is None or 2 * reading == lo + hi:
        return [], []
    labels = _labels(messages)
    low, high = labels.get(min(labels, default=lo), ""), labels.get(max(labels, default=hi), "")
    up = 2 * reading > lo + hi
    chosen: list[str] = []
    other: list[str] = []
    for value in values:
        at_high, at_low = _names(high, value), _names(low, value)
        high_end = at_high if at_high != at_low else _unit("scale end", value) < 0.5
        (chosen if high_end == up else other).append(value)
    return chosen, other


def _unit(*parts: str) -> float:
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def judge_reading(
    persona: str, messages: Sequence[Message], scale: tuple[int, int], rng: random.Random
) -> int | None:
    """The decision `persona` reports for the transcript in `messages`."""
    lo, hi = scale
    habit = HABITS.get(persona, "literal")
    if habit == "middle":
        return (lo + hi) // 2
    if habit == "random":
        return rng.randint(lo, hi)
    read = written_decision(messages)
    if read is None:
        return None
    if habit == "mirrored":
        read = lo + hi - read
    elif habit == "central":
        read = int((read + (lo + hi) / 2) / 2 + 0.5)
    elif habit == "generous":
        read += 1
    elif habit == "careful":
        u = _unit(persona, "misread", _transcript_text(messages))
        if u < CAREFUL_MISREAD_RATE:
            read += 1 if u < CAREFUL_MISREAD_RATE / 2 else -1
    return min(max(read, lo), hi)


def declined_to_judge(persona: str) -> str:
    """The prose a non-judge persona answers a judge request with (no JSON: unusable)."""
    return (
        "I'd rather not grade another model's answer; each reader should weigh the "
        f"transcript for themselves.\n\n(synthetic answer from scripted:{persona})"
    )
