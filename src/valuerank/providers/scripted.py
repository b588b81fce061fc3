"""`scripted:<persona>?latency_ms=…&error_rate=…&rate_limit_rpm=…&seed=…`: synthetic models.

Deterministic stand-ins for real models, for tests, demos of the analysis and load tests. No
real model wrote their answers: every `Completion` has `synthetic=True`, and the text carries
a marker line `(synthetic answer from scripted:<persona>)`.

How a persona rates a scenario
------------------------------
The scenario's dimension scores arrive in `request.hints["dimension_scores"]` (dimension
name -> score 1..5, possibly empty). Each weighted persona gives every dimension a weight that
is a fixed function of (persona, dimension name), so any definition's dimensions get weights:

    u      = the first 8 bytes of sha256("<weight key>\\0<dimension>") as a number in [0, 1)
    sign   = +1 when u < 0.5, else -1;  magnitude = 0.5 + (2u mod 1) / 2   (in [0.5, 1))
    w_i    = direction * scale * sign * magnitude / sqrt(number of dimensions)
    rating = clamp(round_half_up(mid + (hi - lo) / 4 * Σ w_i (score_i - 3) + bias + noise), lo, hi)

with the scale (lo, hi) of `hints["rating_scale"]` (default 1..5), mid its midpoint and
noise ~ N(0, σ) drawn from a generator seeded by the persona, its `seed` parameter,
`request.seed` and the conversation up to the first user message. The same request always
gets the same answer; another `request.seed` (another sample) may move it by a point.

| persona | weight key | direction × scale | bias | σ | behaviour |
|---|---|---|---|---|---|
| utilitarian  | utilitarian  | +1    | 0    | 0.3 | outcome-driven |
| deontologist | deontologist | +1    | 0    | 0.3 | its own, unrelated weights |
| contrarian   | utilitarian  | -1    | 0    | 0.3 | the utilitarian mirrored |
| centrist     | utilitarian  | +0.35 | 0    | 0.2 | the utilitarian, damped to the middle |
| agreeable    | utilitarian  | +0.5  | +1.2 | 0.3 | leans to the top of the scale |
| neutral      | —            | 0     | 0    | 0.3 | the midpoint, give or take a point |
| random       | —            | —     | —    | —   | uniform over the scale (seeded) |
| refuser      | —            | —     | —    | —   | always a polite refusal, no rating |
| rambler      | —            | —     | —    | —   | musings with no rating and no digits |

Presentation biases
-------------------
The probe tells synthetic models how a scenario is shown in `hints["presentation"]` =
{"order": "as-written" | "reversed", "phrasing": "" for every level's first option, else the
option segments (`Harm2o2`)} — the run scenario's id is not in the prompt, and a persona
cannot know the as-written text from the shown one without being told the order. A persona
rates in the definition's direction as above (its noise drawn from the prompt with a reversed
scale put back, so both orders of a scenario get the same draw) and answers the number
*shown* for that rating: on a reversed scale the mirrored one (lo + hi − rating). So a persona
without biases gives the same mapped decision in both orders. Two parameters add known biases:

* `wording_bias=<points>` (−4..4): for an alternative phrasing (`phrasing` not empty), the
  rating moves that many points in the definition's direction;
* `position_bias=<points>` (−4..4): the number shown moves that many points towards the
  higher number shown. Mapped back, as-written answers move up and reversed ones down, so the
  order effect (as written − reversed) is 2 × position_bias where no clipping at the scale's
  ends intervenes.

Each is applied in whole points, clipped to the scale; a fraction f is one more point with
probability f, drawn from a hash of the scenario's prompt and sample (the same for both
orders), so the shift equals the parameter in expectation.

Answers are a short paragraph, the marker line and a final line `Rating: N` (under 100 tokens;
`max_tokens` and `temperature` are ignored). A follow-up turn (more than one user message) gets
a brief answer with the same rating.

Judge requests (`hints["role"] == "judge"`) get a bare JSON object: `decision` = what the
persona reads in the transcript it was sent — the Target's first answer parsed as the pipeline
parses it, then the persona's reading habit (literal, careful with a seeded misread, mirrored,
central, generous, middle, random; see `scripted_judge`) — never a value handed over in the
request's hints; the refuser and the rambler decline in prose (an unusable verdict);
`prioritized_values` / `deprioritized_values` = of the values of `hints["values"]` (else the
`- Name: definition` list of a system message, as the judge prompt lists the rubric, else the
dimension names), those of the end of the scale the judge read and those of the other end
(`scripted_judge.value_verdict`: none for the middle or no reading) — for a non-judge JSON
answer, those whose weight for this persona is positive / negative, strongest first;
`confidence` = 55..94 (a hash); text fields such as
`rationale` get one sentence. When `request.json_schema` names properties, exactly those are
returned, coerced to their declared type, enum and bounds (`confidence` in 0..1 when the
schema's maximum is 1). A non-judge request with a `json_schema` gets the same kind of object
(`decision`/`rating` = the persona's rating); the refuser and the rambler answer in prose.
Summary requests (`hints["role"] == "summary"`) get two plain sentences built from
`hints["decision_code"]` and the marker. Validation requests (`hints["role"] == "validator"`)
are answered by `scripted_validation.py`.

Parameters: `latency_ms` sleeps that long per call; `error_rate` raises `ProviderTransient`
with that probability (drawn per call from the request and how often this request was sent, so
a retry gets a fresh draw); `rate_limit_rpm` admits that many calls per sliding minute to all
instances with the same model id and raises `ProviderRateLimited` with `retry_after` = seconds
until the oldest admitted call leaves the window; `seed` varies the noise; `position_bias` and
`wording_bias` are described above.

The parts live apart: the model id's grammar and the personas (`scripted_config.py`), the
injected faults and the state they keep (`scripted_faults.py`, owned by a `FaultState`), the
JSON-schema shaping (`scripted_schema.py`), the judges' and validators' habits
(`scripted_judge.py`, `scripted_validation.py`); here, how a persona rates and answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from valuerank.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    Provider,
    Usage,
)
from valuerank.providers.scripted_config import (
    PARAMETERS,
    PERSONAS,
    PROVIDER_NAME,
    Persona,
    PersonaKind,
    ScriptedConfig,
    ScriptedConfigError,
    parse_scripted_model,
)
from valuerank.providers.scripted_draws import round_half_up, unit
from valuerank.providers.scripted_faults import (
    PROCESS_FAULTS,
    RATE_WINDOW_SECONDS,
    FaultState,
    reset_scripted_state,
)
from valuerank.providers.scripted_judge import (
    NON_JUDGES,
    declined_to_judge,
    judge_reading,
    value_verdict,
)
from valuerank.providers.scripted_schema import fill_object
from valuerank.providers.scripted_validation import validation_answer
from valuerank.scoring.scale import SCALE_ORDERS, mirrored_scale

# The names this module held before its parts moved out, still importable from here.
__all__ = [
    "DEFAULT_SCALE",
    "PARAMETERS",
    "PERSONAS",
    "PROVIDER_NAME",
    "RATE_WINDOW_SECONDS",
    "FaultState",
    "Persona",
    "PersonaKind",
    "ScriptedConfig",
    "ScriptedConfigError",
    "ScriptedProvider",
    "build_scripted_provider",
    "dimension_scores_of",
    "dimension_weight",
    "parse_scripted_model",
    "presentation_of_hints",
    "rating_scale_of",
    "reset_scripted_state",
]

DEFAULT_SCALE = (1, 5)
# Dimension scores are 1..5; deviations are taken from the middle.
_SCORE_LOW, _SCORE_MID, _SCORE_HIGH = 1, 3, 5


# ---------------------------------------------------------------------------------- weights


def dimension_weight(persona: Persona, dimension: str, n_dimensions: int = 1) -> float:
    """wᵢ of `dimension` for `persona` among `n_dimensions` (0 for personas without weights)."""
    if persona.kind != "weighted" or persona.weight_key is None:
        return 0.0
    u = unit(persona.weight_key, dimension)
    sign = 1.0 if u < 0.5 else -1.0
    magnitude = 0.5 + ((2.0 * u) % 1.0) / 2.0
    return persona.direction * sign * magnitude / math.sqrt(max(1, n_dimensions))


def dimension_scores_of(hints: Mapping[str, Any]) -> dict[str, float]:
    raw = hints.get("dimension_scores") or {}
    if not isinstance(raw, Mapping):
        raise ScriptedConfigError(
            f"hints['dimension_scores'] must map dimension names to scores, not {raw!r}"
        )
    scores: dict[str, float] = {}
    for name, score in raw.items():
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise ScriptedConfigError(f"dimension score {name!r}={score!r} is not a number")
        scores[str(name)] = min(max(float(score), _SCORE_LOW), _SCORE_HIGH)
    return scores


def rating_scale_of(hints: Mapping[str, Any]) -> tuple[int, int]:
    scale = hints.get("rating_scale")
    if scale is None:
        return DEFAULT_SCALE
    if (
        isinstance(scale, Sequence)
        and not isinstance(scale, str)
        and len(scale) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
        and scale[0] < scale[1]
    ):
        return int(scale[0]), int(scale[1])
    raise ScriptedConfigError(f"hints['rating_scale'] must be [low, high] integers, not {scale!r}")


@dataclass(frozen=True)
class _Verdict:
    rating: int | None
    # The dimension that moved the rating most, and which way (+1 up, -1 down, 0 not at all).
    driver: str | None
    push: int


def _verdict(
    persona: Persona, scores: Mapping[str, float], scale: tuple[int, int], rng: random.Random
) -> _Verdict:
    lo, hi = scale
    if persona.kind == "random":
        return _Verdict(rng.randint(lo, hi), None, 0)
    if persona.kind != "weighted":
        return _Verdict(None, None, 0)
    n = len(scores)
    contributions = {
        name: dimension_weight(persona, name, n) * (score - _SCORE_MID)
        for name, score in sorted(scores.items())
    }
    total = sum(contributions.values())
    noise = rng.gauss(0.0, persona.noise) if persona.noise else 0.0
    value = (lo + hi) / 2 + (hi - lo) / 4 * total + persona.bias + noise
    rating = min(max(round_half_up(value), lo), hi)
    driver = max(contributions, key=lambda k: abs(contributions[k]), default=None)
    push = 0
    if driver is not None and contributions[driver]:
        push = 1 if contributions[driver] > 0 else -1
    return _Verdict(rating, driver, push)


# ---------------------------------------------------------------------------------- presentation


def presentation_of_hints(hints: Mapping[str, Any]) -> tuple[str, str]:
    """(scale order, phrasing) of `hints["presentation"]`, as the probe sends them;
    ("as-written", "") when absent."""
    raw = hints.get("presentation") or {}
    if not isinstance(raw, Mapping):
        raise ScriptedConfigError(f"hints['presentation'] must be a mapping, not {raw!r}")
    order = str(raw.get("order") or "as-written")
    if order not in SCALE_ORDERS:
        raise ScriptedConfigError(f"hints['presentation']['order'] {order!r} is not a scale order")
    return order, str(raw.get("phrasing") or "")


def _as_written(messages: Sequence[Message], order: str) -> list[Message]:
    """The messages as the definition wrote them: a reversed scale put back (reversal is its
    own inverse), so a persona's noise does not depend on the order it was asked in."""
    if order != "reversed":
        return list(messages)
    written = []
    for m in messages:
        put_back = mirrored_scale(m.content) if m.role == "user" else None
        written.append(m if put_back is None else Message(m.role, put_back))
    return written


def _shift(points: float, u: float) -> int:
    """`points` as a whole number of points, rounded up with probability its fraction (u is a
    uniform draw), so the shift is `points` in expectation."""
    whole = math.floor(points)
    return whole + (1 if u < points - whole else 0)


def _presented(
    verdict: _Verdict,
    config: ScriptedConfig,
    scale: tuple[int, int],
    order: str,
    phrasing: str,
    seed_material: str,
) -> _Verdict:
    """The number the persona answers on the scale as shown: its rating (in the definition's
    direction) moved by `wording_bias` for an alternative phrasing, then the number shown for
    it (mirrored on a reversed scale) moved by `position_bias` towards the higher number shown;
    each clipped to the scale. The draws depend on the scenario and sample, not on the order."""
    if verdict.rating is None:
        return verdict
    lo, hi = scale
    rating = verdict.rating
    if phrasing and config.wording_bias:
        u = unit(seed_material, "wording_bias")
        rating = min(max(rating + _shift(config.wording_bias, u), lo), hi)
    reversed_scale = order == "reversed"
    shown = lo + hi - rating if reversed_scale else rating
    if config.position_bias:
        u = unit(seed_material, "position_bias")
        shown = min(max(shown + _shift(config.position_bias, u), lo), hi)
    return _Verdict(shown, verdict.driver, -verdict.push if reversed_scale else verdict.push)


# ---------------------------------------------------------------------------------- text

_OPENINGS: Mapping[str, tuple[str, ...]] = {
    "utilitarian": (
        "I look at the consequences for everyone affected.",
        "What matters most is the overall outcome for the people involved.",
    ),
    "deontologist": (
        "Some duties hold whatever the outcome.",
        "I start from what we owe each other, not from the totals.",
    ),
    "contrarian": (
        "The obvious reading of this dilemma is not the right one.",
        "I would push back on the answer most people reach first.",
    ),
    "centrist": (
        "There are fair points on both sides here.",
        "This is a balance, and neither side clearly wins.",
    ),
    "agreeable": (
        "I can see why one would go along with this.",
        "My instinct is to accept the course of action on offer.",
    ),
    "neutral": (
        "I do not have a strong view either way.",
        "Nothing here pulls me decisively in one direction.",
    ),
    "random": (
        "I considered the situation and went with my judgement.",
        "Having read the scenario, I settled on an answer.",
    ),
}
_CLOSINGS: tuple[str, ...] = (
    "Weighing it all, this is my answer.",
    "On balance, that settles it for me.",
    "Taking everything together, I land here.",
)
_REFUSAL = (
    "I'm sorry, but I can't pick a side in this dilemma. It asks me to weigh people's "
    "wellbeing and values in a way I don't think I should decide for you. I'm happy to talk "
    "through the considerations on each side instead."
)
_REFUSAL_FOLLOW_UP = "I'm sorry, but my answer stays the same: I won't choose a side here."
_RAMBLES: tuple[str, ...] = (
    "This reminds me of how every choice carries a little of the chooser in it.",
    "On the one hand there is what people expect, and on the other what they hope for.",
    "Philosophers have argued about cases like this for a very long time.",
    "It is worth asking who gets to decide, and why we trust them with it.",
    "Perhaps the real question is what kind of person one wants to be afterwards.",
    "Then again, the details of a situation often matter more than the principles.",
    "Some would say intuition is a guide here, others that it misleads us.",
    "In any case it is a fascinating puzzle, and I keep turning it over.",
)


def _marker(persona: Persona) -> str:
    return f"(synthetic answer from {PROVIDER_NAME}:{persona.name})"


def _direction_phrase(verdict: _Verdict) -> str:
    if verdict.driver is None:
        return "No single consideration tips the balance, so I go by my overall sense."
    if verdict.push > 0:
        where = "pulls me towards the upper end of the scale"
    elif verdict.push < 0:
        where = "pulls me towards the lower end of the scale"
    else:
        where = "leaves me undecided"
    return f"Here the consideration of {verdict.driver.replace('_', ' ')} {where}."


def _answer_text(persona: Persona, verdict: _Verdict, follow_up: bool, rng: random.Random) -> str:
    if persona.kind == "refuser":
        return f"{_REFUSAL_FOLLOW_UP if follow_up else _REFUSAL}\n\n{_marker(persona)}"
    if persona.kind == "rambler":
        count = 2 if follow_up else 4
        musing = " ".join(rng.sample(_RAMBLES, count))
        return f"{musing}\n\n{_marker(persona)}"
    reason = "" if persona.kind == "random" else _direction_phrase(verdict)
    if follow_up:
        body = f"As I said before, my answer stays the same. {reason}".rstrip()
    else:
        opening = rng.choice(_OPENINGS[persona.name])
        body = " ".join(part for part in (opening, reason, rng.choice(_CLOSINGS)) if part)
    return f"{body}\n\n{_marker(persona)}\nRating: {verdict.rating}"


def _summary_text(persona: Persona, decision_code: Any) -> str:
    """A summary request (`hints["role"] == "summary"`): two plain sentences and the marker."""
    if isinstance(decision_code, int) and not isinstance(decision_code, bool):
        first = f"The Target chose {decision_code} on the scale."
    else:
        first = "No decision was read: the Target did not commit to a point on the scale."
    second = {
        "refuser": "It declined to take a side and offered to discuss the considerations.",
        "rambler": "It mused about the dilemma at length without settling it.",
        "random": "Its reasons did not point clearly to any one value.",
    }.get(persona.kind, "It put the most weight on the consideration it found decisive.")
    return f"{first} {second}\n\n{_marker(persona)}"


# ---------------------------------------------------------------------------------- JSON answers

_TEXT_FIELDS = ("reasoning", "rationale", "explanation", "summary", "justification", "notes")


_LISTED_VALUE = re.compile(r"^- ([A-Za-z][A-Za-z0-9_]*):", re.MULTILINE)
# The list a judge prompt offers values from: the `- Name: definition` lines after "…from this
# list…:". The prompt's other lists (the reply's fields: decision, confidence…) are not values.
_VALUE_LIST = re.compile(r"from this list[^\n]*:\n((?:- [^\n]*(?:\n|$))+)")


def _judge_values(request: CompletionRequest, scores: Mapping[str, float]) -> list[str]:
    """`hints["values"]`, else the rubric's values the judge prompt lists, else the dimension
    names."""
    values = request.hints.get("values")
    if isinstance(values, Sequence) and not isinstance(values, str):
        return [str(v) for v in values]
    for message in request.messages:
        if message.role == "system":
            offered = _VALUE_LIST.search(message.content)
            if offered:
                return list(dict.fromkeys(_LISTED_VALUE.findall(offered.group(1))))
    return sorted(scores)


def _value_weight(persona: Persona, value: str) -> float:
    key = persona.weight_key if persona.weight_key is not None else persona.name
    u = unit(key, value)
    sign = 1.0 if u < 0.5 else -1.0
    direction = -1.0 if persona.direction < 0 else 1.0
    return direction * sign * (0.5 + ((2.0 * u) % 1.0) / 2.0)


def _facts(
    persona: Persona,
    verdict: _Verdict,
    request: CompletionRequest,
    scores: Mapping[str, float],
    seed_material: str,
    judge: tuple[tuple[int, int], random.Random] | None,
) -> dict[str, Any]:
    """The answer's facts; `judge` is (rating scale, generator) when judging a transcript."""
    decision: int | None
    if judge is not None:
        decision = judge_reading(persona.name, request.messages, *judge)
    else:
        decision = verdict.rating
        if decision is None:
            decision = (DEFAULT_SCALE[0] + DEFAULT_SCALE[1]) // 2
    offered = _judge_values(request, scores)
    if judge is not None:  # a judge names the values of the end of the scale it read
        prioritized, deprioritized = value_verdict(request.messages, offered, decision, judge[0])
    else:  # a model answering in JSON names its persona's own values
        weights = {v: _value_weight(persona, v) for v in offered}
        ranked = sorted(weights, key=lambda v: (-abs(weights[v]), v))
        prioritized = [v for v in ranked if weights[v] > 0]
        deprioritized = [v for v in ranked if weights[v] < 0]
    confidence = 55 + int(unit(persona.name, "confidence", seed_material) * 40)
    reason = _direction_phrase(verdict) if verdict.driver else "Judged from the answer given."
    return {
        "decision": decision,
        "rating": decision,
        "prioritized_values": prioritized,
        "deprioritized_values": deprioritized,
        "confidence": confidence,
        **{name: reason for name in _TEXT_FIELDS},
    }


# ---------------------------------------------------------------------------------- provider


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedProvider:
    """`Provider` for `scripted:<persona>?…`; `clock` and `sleep` are replaceable for tests;
    `faults`: the rate-limit windows and attempt counts it shares (default: the process's)."""

    name = PROVIDER_NAME

    def __init__(
        self,
        model_name: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        faults: FaultState = PROCESS_FAULTS,
    ) -> None:
        self.model_name = model_name
        self.config = parse_scripted_model(model_name)
        self._clock = clock
        self._sleep = sleep
        self._faults = faults
        self._others: dict[str, ScriptedConfig] = {}

    def _config_for(self, name: str) -> ScriptedConfig:
        if not name or name == self.model_name:
            return self.config
        if name not in self._others:
            self._others[name] = parse_scripted_model(name)
        return self._others[name]

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        config = self._config_for(request.model)
        persona = config.persona
        headers = self._faults.admit(config, self._clock())
        scores = dimension_scores_of(request.hints)
        scale = rating_scale_of(request.hints)
        judge = request.hints.get("role") == "judge"
        order, phrasing = presentation_of_hints(request.hints)

        seed_material = json.dumps(
            [
                persona.name,
                config.seed,
                request.seed,
                list(scale),
                sorted(scores.items()),
                [[m.role, m.content] for m in _as_written(_first_turn(request.messages), order)],
                judge,
            ],
            ensure_ascii=False,
        )
        if config.latency_ms > 0:
            await self._sleep(config.latency_ms / 1000.0)
        if config.error_rate > 0:
            full = json.dumps(
                [seed_material, [[m.role, m.content] for m in request.messages]],
                ensure_ascii=False,
            )
            self._faults.maybe_fail(config, full)

        rng = random.Random(hashlib.sha256(seed_material.encode("utf-8")).digest())
        verdict = _verdict(persona, scores, scale, rng)
        if not judge:
            verdict = _presented(verdict, config, scale, order, phrasing, seed_material)
        role = request.hints.get("role")
        if role == "validator":  # see scripted_validation.py
            text = validation_answer(persona.name, request, _marker(persona))
        elif role == "summary":
            text = _summary_text(persona, request.hints.get("decision_code"))
        elif judge and persona.name in NON_JUDGES:
            text = declined_to_judge(persona.name)
        elif judge or (request.json_schema is not None and persona.kind in ("weighted", "random")):
            reading = (scale, rng) if judge else None
            facts = _facts(persona, verdict, request, scores, seed_material, reading)
            text = json.dumps(fill_object(request.json_schema or {}, facts), ensure_ascii=False)
        else:
            follow_up = sum(1 for m in request.messages if m.role == "user") > 1
            text = _answer_text(persona, verdict, follow_up, rng)
        return Completion(
            text=text,
            finish_reason="stop",
            usage=Usage(
                input_tokens=sum(_tokens(m.content) for m in request.messages),
                output_tokens=_tokens(text),
            ),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            rate_limit_headers=headers,
            raw={
                "model": config.model_id,
                "persona": persona.name,
                "rating": verdict.rating,
                "role": role if isinstance(role, str) else None,
            },
            synthetic=True,
        )

    async def aclose(self) -> None:
        """Nothing to release."""


def _first_turn(messages: Sequence[Message]) -> list[Message]:
    """The messages up to and including the first user message: what the rating depends on."""
    for index, message in enumerate(messages):
        if message.role == "user":
            return list(messages[: index + 1])
    return list(messages)


def build_scripted_provider(model_name: str) -> Provider:
    """The provider of `scripted:<model_name>`; `ScriptedConfigError` lists what is valid."""
    return ScriptedProvider(model_name)
