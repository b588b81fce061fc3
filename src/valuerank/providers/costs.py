"""Money: the cost of one call, and an estimate of a run's cost before it starts. Pure.

Costs are computed exactly in decimal (prices are decimal numbers such as 0.15 USD per
million tokens) and rounded once, half up, to a millionth of a dollar. An unknown price
(None) gives an unknown cost (None) and is flagged, never counted as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

from .base import Message

TOKENS_PER_MTOK = Decimal(1_000_000)
USD_QUANTUM = Decimal("0.000001")
# The usual rule of thumb for English text with BPE tokenizers: about 4 characters a
# token. It is an estimate for budgets and rate-limit reservations; real usage replaces it.
CHARS_PER_TOKEN = 4
# Role markers and separators a chat format adds around each message (OpenAI's rule of thumb).
MESSAGE_OVERHEAD_TOKENS = 4


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


def _price(name: str, value: float | Decimal) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError(f"{name} must be a number (USD per million tokens), got {value!r}")
    exact = value if isinstance(value, Decimal) else Decimal(repr(value))
    if not exact.is_finite() or exact < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return exact


def _exact_cost(
    input_tokens: int,
    output_tokens: int,
    input_price_per_mtok: float | Decimal,
    output_price_per_mtok: float | Decimal,
) -> Decimal:
    spent_in = _count("input_tokens", input_tokens) * _price("input_price", input_price_per_mtok)
    price_out = _price("output_price", output_price_per_mtok)
    return (spent_in + _count("output_tokens", output_tokens) * price_out) / TOKENS_PER_MTOK


def _usd(amount: Decimal) -> float:
    return float(amount.quantize(USD_QUANTUM, rounding=ROUND_HALF_UP))


def cost_usd(
    input_tokens: int,
    output_tokens: int,
    input_price_per_mtok: float | Decimal,
    output_price_per_mtok: float | Decimal,
) -> float:
    """USD for one call: tokens × price per million, exact, rounded to 0.000001."""
    return _usd(
        _exact_cost(input_tokens, output_tokens, input_price_per_mtok, output_price_per_mtok)
    )


def estimate_tokens(text: str) -> int:
    """Tokens in `text`, estimated as ⌈characters / 4⌉ (0 for the empty string)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_message_tokens(messages: Iterable[Message]) -> int:
    """Tokens of a chat request: each message's text plus a few tokens of framing."""
    return sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in messages)


class Priced(Protocol):
    """Anything with a model id and prices (a `CatalogModel`, a registry row, `ModelPrice`)."""

    @property
    def id(self) -> str: ...

    @property
    def input_price_per_mtok(self) -> float | None: ...

    @property
    def output_price_per_mtok(self) -> float | None: ...


@dataclass(frozen=True)
class ModelPrice:
    id: str
    input_price_per_mtok: float | None
    output_price_per_mtok: float | None


# What a model does in a run: answers the scenarios (`probe`), reads each transcript
# (`judge`) or writes each transcript's rationale (`summary`).
PROBE_ROLE, JUDGE_ROLE, SUMMARY_ROLE = "probe", "judge", "summary"


@dataclass(frozen=True)
class ModelCostEstimate:
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    role: str = PROBE_ROLE
    # Earlier transcripts whose answers sized this model's (0: every answer at max_tokens).
    learned_from: int = 0

    @property
    def price_known(self) -> bool:
        return self.cost_usd is not None


@dataclass(frozen=True)
class RunCostEstimate:
    """A run's estimated size and cost. `cost_usd` is None when any model's price is unknown;
    `known_cost_usd` then sums the models whose prices are known."""

    models: tuple[ModelCostEstimate, ...]
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    known_cost_usd: float
    unknown_price_models: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.unknown_price_models

    @property
    def upper_bound(self) -> bool:
        """Every answer counted at its max tokens: the run cannot cost more."""
        return all(m.learned_from == 0 for m in self.models)

    def to_dict(self) -> dict[str, Any]:
        return {
            "upper_bound": self.upper_bound,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "known_cost_usd": self.known_cost_usd,
            "unknown_price_models": list(self.unknown_price_models),
            "models": [
                {
                    "model": m.model,
                    "role": m.role,
                    "calls": m.calls,
                    "input_tokens": m.input_tokens,
                    "output_tokens": m.output_tokens,
                    "cost_usd": m.cost_usd,
                    "learned_from": m.learned_from,
                }
                for m in self.models
            ],
        }


def conversation_tokens(
    turns: int,
    prompt_tokens: int,
    output_tokens_per_turn: int,
    followup_tokens: int = 0,
    system_tokens: int = 0,
) -> tuple[int, int]:
    """(input, output) tokens of one conversation of `turns` turns.

    Every turn resends the whole conversation: turn t's input is the system prompt, the
    first prompt and, for each earlier turn, its answer and the next follow-up prompt:
    system + prompt + (t−1)·(answer + follow-up). Summed over t = 1..T.
    """
    t = _count("turns", turns)
    repeated = _count("system_tokens", system_tokens) + _count("prompt_tokens", prompt_tokens)
    answer = _count("output_tokens_per_turn", output_tokens_per_turn)
    growth = answer + _count("followup_tokens", followup_tokens)
    return t * repeated + growth * t * (t - 1) // 2, t * answer


@dataclass(frozen=True)
class LearnedTokens:
    """What a model's answers came to in the organisation's earlier runs of a definition:
    the mean output tokens of one turn, over `transcripts` transcripts."""

    output_tokens_per_turn: int
    transcripts: int


@dataclass(frozen=True)
class FollowerCalls:
    """One call per conversation by each of `models`, after the probing: the judges reading
    each transcript, the summary model writing each rationale. Tokens are per call."""

    role: str
    models: Sequence[Priced]
    input_tokens: int
    output_tokens: int


def _model_estimate(
    model: Priced, role: str, calls: int, input_tokens: int, output_tokens: int
) -> tuple[ModelCostEstimate, Decimal | None]:
    pin, pout = model.input_price_per_mtok, model.output_price_per_mtok
    if pin is None or pout is None:
        return ModelCostEstimate(model.id, calls, input_tokens, output_tokens, None, role), None
    exact = _exact_cost(input_tokens, output_tokens, pin, pout)
    estimate = ModelCostEstimate(model.id, calls, input_tokens, output_tokens, _usd(exact), role)
    return estimate, exact


def estimate_run_cost(
    *,
    prompts: int,
    models: Sequence[Priced],
    samples: int = 1,
    turns: int = 1,
    prompt_tokens: int,
    output_tokens_per_turn: int,
    followup_tokens: int = 0,
    system_tokens: int = 0,
    followers: Sequence[FollowerCalls] = (),
    learned: Mapping[str, LearnedTokens] | None = None,
) -> RunCostEstimate:
    """Estimate a run of `prompts` scenarios × `models` × `samples` conversations of `turns`,
    and the `followers`' calls on each of those conversations' transcripts (one per model).

    `prompt_tokens` is the mean size of a first prompt (see `estimate_tokens`),
    `output_tokens_per_turn` the expected answer size (the run's max_tokens: an upper
    bound), `followup_tokens` the mean size of a follow-up prompt. A model in `learned` has
    its answers sized as they were in earlier runs (never above `output_tokens_per_turn`).
    """
    conversations = _count("prompts", prompts) * _count("samples", samples)
    # The counts are checked here, with or without models: a bad one is refused either way.
    conversation_tokens(
        turns, prompt_tokens, output_tokens_per_turn, followup_tokens, system_tokens
    )
    shapes = []
    sources: list[int] = []
    for model in models:
        sized = (learned or {}).get(model.id)
        answer = output_tokens_per_turn
        if sized is not None and sized.transcripts > 0:
            answer = min(answer, _count("learned output tokens", sized.output_tokens_per_turn))
        per_in, per_out = conversation_tokens(
            turns, prompt_tokens, answer, followup_tokens, system_tokens
        )
        shapes.append(
            (model, PROBE_ROLE, conversations * turns, conversations * per_in,
             conversations * per_out)
        )  # fmt: skip
        sources.append(sized.transcripts if sized is not None else 0)
    # A follower (a judge, the summary model) reads every transcript: one per conversation
    # of every target model, not one per scenario.
    transcripts = conversations * len(models)
    for group in followers:
        per_call_in = _count("input_tokens", group.input_tokens)
        per_call_out = _count("output_tokens", group.output_tokens)
        shapes += [
            (model, group.role, transcripts, transcripts * per_call_in,
             transcripts * per_call_out)
            for model in group.models
        ]  # fmt: skip
        sources += [0] * len(group.models)
    estimates: list[ModelCostEstimate] = []
    unknown: list[str] = []
    known_total = Decimal(0)
    for shape, source in zip(shapes, sources, strict=True):
        estimate, exact = _model_estimate(*shape)
        estimate = replace(estimate, learned_from=source)
        estimates.append(estimate)
        if exact is None:
            unknown.append(estimate.model)
        else:
            known_total += exact
    known = _usd(known_total)
    return RunCostEstimate(
        models=tuple(estimates),
        calls=sum(e.calls for e in estimates),
        input_tokens=sum(e.input_tokens for e in estimates),
        output_tokens=sum(e.output_tokens for e in estimates),
        cost_usd=None if unknown else known,
        known_cost_usd=known,
        unknown_price_models=tuple(dict.fromkeys(unknown)),
    )


__all__ = [
    "CHARS_PER_TOKEN",
    "JUDGE_ROLE",
    "MESSAGE_OVERHEAD_TOKENS",
    "PROBE_ROLE",
    "SUMMARY_ROLE",
    "FollowerCalls",
    "LearnedTokens",
    "ModelCostEstimate",
    "ModelPrice",
    "Priced",
    "RunCostEstimate",
    "conversation_tokens",
    "cost_usd",
    "estimate_message_tokens",
    "estimate_run_cost",
    "estimate_tokens",
]
