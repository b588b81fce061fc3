"""Costs: exact call costs, the token heuristic, and run estimates that never hide unknowns."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from valuerank.providers.base import Message
from valuerank.providers.catalog import catalog_model
from valuerank.providers.costs import (
    CHARS_PER_TOKEN,
    JUDGE_ROLE,
    MESSAGE_OVERHEAD_TOKENS,
    PROBE_ROLE,
    SUMMARY_ROLE,
    FollowerCalls,
    LearnedTokens,
    ModelPrice,
    Priced,
    conversation_tokens,
    cost_usd,
    estimate_message_tokens,
    estimate_run_cost,
    estimate_tokens,
)


@pytest.mark.parametrize(
    ("tokens_in", "tokens_out", "price_in", "price_out", "expected"),
    [
        (1_000_000, 0, 2.0, 8.0, 2.0),
        (0, 1_000_000, 2.0, 8.0, 8.0),
        (1000, 500, 2.0, 8.0, 0.006),
        (1_000_000, 1_000_000, 0.1, 0.2, 0.3),  # not 0.30000000000000004
        (0, 0, 15.0, 75.0, 0.0),
        (10**9, 10**9, 0, 0, 0.0),
        (5, 0, 0.1, 0, 0.000001),  # 0.0000005 rounds half up
        (4, 0, 0.1, 0, 0.0),  # 0.0000004 rounds down
        (1, 1, Decimal("1.25"), Decimal("10"), 0.000011),  # 0.00001125 -> 0.000011
    ],
)
def test_cost_usd(
    tokens_in: int, tokens_out: int, price_in: float, price_out: float, expected: float
) -> None:
    assert cost_usd(tokens_in, tokens_out, price_in, price_out) == expected


def test_cost_usd_is_decimal_exact() -> None:
    exact = (Decimal(123_456) * Decimal("0.15") + Decimal(7_890) * Decimal("0.6")) / 10**6
    assert exact == Decimal("0.0232524")
    assert cost_usd(123_456, 7_890, 0.15, 0.6) == 0.023252


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1, 0, 1.0, 1.0), "input_tokens"),
        ((0, -1, 1.0, 1.0), "output_tokens"),
        ((1.5, 0, 1.0, 1.0), "input_tokens"),
        ((True, 0, 1.0, 1.0), "input_tokens"),
        ((1, 1, -0.01, 1.0), "input_price"),
        ((1, 1, 1.0, math.nan), "output_price"),
        ((1, 1, math.inf, 1.0), "input_price"),
        ((1, 1, "1.0", 1.0), "input_price"),
    ],
)
def test_cost_usd_rejects_nonsense(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cost_usd(*args)  # type: ignore[arg-type]


def test_estimate_tokens() -> None:
    assert CHARS_PER_TOKEN == 4
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 4000) == 1000


@given(st.text(), st.text())
def test_estimate_tokens_properties(a: str, b: str) -> None:
    assert estimate_tokens(a) >= len(a) / 4
    assert estimate_tokens(a) <= len(a) / 4 + 1
    assert estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))


def test_estimate_message_tokens() -> None:
    messages = [Message("system", "abcd"), Message("user", "abcdefgh")]
    assert estimate_message_tokens(messages) == 1 + 2 + 2 * MESSAGE_OVERHEAD_TOKENS
    assert estimate_message_tokens([]) == 0


def test_conversation_tokens() -> None:
    # turn 1: 10 + 100 = 110; turn 2: 110 + answer 50 + follow-up 20 = 180
    assert conversation_tokens(2, 100, 50, 20, 10) == (290, 100)
    assert conversation_tokens(1, 100, 50) == (100, 50)
    assert conversation_tokens(0, 100, 50) == (0, 0)
    # three turns: 100, 100+70, 100+140
    assert conversation_tokens(3, 100, 50, 20) == (510, 150)


@given(st.integers(0, 8), st.integers(0, 5000), st.integers(0, 2000), st.integers(0, 500))
def test_conversation_tokens_match_a_turn_by_turn_sum(
    turns: int, prompt: int, answer: int, followup: int
) -> None:
    expected_in = sum(prompt + (t - 1) * (answer + followup) for t in range(1, turns + 1))
    assert conversation_tokens(turns, prompt, answer, followup) == (expected_in, turns * answer)


def test_estimate_run_cost() -> None:
    gpt = catalog_model("openai:gpt-4.1")
    assert gpt is not None
    local = catalog_model("local:gemma3-270m")
    assert local is not None
    estimate = estimate_run_cost(
        prompts=10,
        models=[gpt, local],
        samples=2,
        turns=2,
        prompt_tokens=500,
        output_tokens_per_turn=1000,
        followup_tokens=300,
    )
    per_conversation_in = 500 + (500 + 1000 + 300)  # 2300
    assert [m.model for m in estimate.models] == ["openai:gpt-4.1", "local:gemma3-270m"]
    first = estimate.models[0]
    assert first.calls == 10 * 2 * 2
    assert first.input_tokens == 20 * per_conversation_in
    assert first.output_tokens == 20 * 2000
    assert first.cost_usd == pytest.approx(46_000 * 2 / 1e6 + 40_000 * 8 / 1e6)
    assert first.cost_usd == 0.412
    assert estimate.models[1].cost_usd == 0.0
    assert estimate.calls == 80
    assert estimate.input_tokens == 2 * 46_000
    assert estimate.cost_usd == 0.412 == estimate.known_cost_usd
    assert estimate.complete and estimate.unknown_price_models == ()


def test_unknown_prices_are_flagged_not_zero() -> None:
    gpt = catalog_model("openai:gpt-4.1")
    assert gpt is not None
    models: list[Priced] = [
        gpt,
        ModelPrice("ollama:llama3", None, None),
        ModelPrice("acme:half", 1.0, None),
    ]
    estimate = estimate_run_cost(
        prompts=1, models=models, prompt_tokens=1000, output_tokens_per_turn=1000
    )
    assert estimate.cost_usd is None
    assert not estimate.complete
    assert estimate.unknown_price_models == ("ollama:llama3", "acme:half")
    assert estimate.known_cost_usd == 0.01
    assert [m.price_known for m in estimate.models] == [True, False, False]
    assert estimate.models[1].cost_usd is None
    assert estimate.models[1].input_tokens == 1000  # tokens are still estimated
    data = estimate.to_dict()
    assert data["cost_usd"] is None and data["unknown_price_models"] == [
        "ollama:llama3",
        "acme:half",
    ]
    assert data["models"][0]["cost_usd"] == 0.01


def test_empty_runs_cost_nothing() -> None:
    gpt = catalog_model("openai:gpt-4.1")
    assert gpt is not None
    none = estimate_run_cost(prompts=0, models=[gpt], prompt_tokens=10, output_tokens_per_turn=10)
    assert (none.calls, none.cost_usd) == (0, 0.0)
    no_models = estimate_run_cost(prompts=5, models=[], prompt_tokens=10, output_tokens_per_turn=10)
    assert (no_models.calls, no_models.cost_usd, no_models.complete) == (0, 0.0, True)


def test_estimate_run_cost_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="samples"):
        estimate_run_cost(
            prompts=1, models=[], samples=-1, prompt_tokens=1, output_tokens_per_turn=1
        )
    with pytest.raises(ValueError, match="turns"):
        estimate_run_cost(prompts=1, models=[], turns=-1, prompt_tokens=1, output_tokens_per_turn=1)


@given(
    st.integers(0, 50),
    st.integers(0, 5),
    st.integers(1, 3),
    st.lists(st.tuples(st.decimals(0, 100, places=2), st.decimals(0, 100, places=2)), max_size=4),
)
def test_run_total_is_the_exact_sum_rounded_once(
    prompts: int, samples: int, turns: int, prices: list[tuple[Decimal, Decimal]]
) -> None:
    models = [ModelPrice(f"p:m{i}", float(a), float(b)) for i, (a, b) in enumerate(prices)]
    estimate = estimate_run_cost(
        prompts=prompts,
        models=models,
        samples=samples,
        turns=turns,
        prompt_tokens=333,
        output_tokens_per_turn=777,
    )
    exact = sum(
        (
            (Decimal(m.input_tokens) * a + Decimal(m.output_tokens) * b) / 10**6
            for m, (a, b) in zip(estimate.models, prices, strict=True)
        ),
        Decimal(0),
    )
    assert estimate.cost_usd == float(exact.quantize(Decimal("0.000001"), rounding="ROUND_HALF_UP"))


def test_judges_and_summaries_are_estimated_per_conversation() -> None:
    target = ModelPrice("p:target", 2.0, 8.0)
    judges = [ModelPrice("p:judge", 1.0, 4.0), ModelPrice("p:unpriced", None, None)]
    estimate = estimate_run_cost(
        prompts=10,
        models=[target],
        samples=3,
        turns=2,
        prompt_tokens=500,
        output_tokens_per_turn=1000,
        followup_tokens=300,
        followers=[
            FollowerCalls(JUDGE_ROLE, judges, input_tokens=3_000, output_tokens=600),
            FollowerCalls(SUMMARY_ROLE, [ModelPrice("p:judge", 1.0, 4.0)], 2_900, 200),
        ],
    )
    rows = [(m.model, m.role, m.calls, m.input_tokens, m.output_tokens) for m in estimate.models]
    assert rows == [
        ("p:target", PROBE_ROLE, 60, 30 * 2_300, 30 * 2_000),
        ("p:judge", JUDGE_ROLE, 30, 30 * 3_000, 30 * 600),
        ("p:unpriced", JUDGE_ROLE, 30, 30 * 3_000, 30 * 600),
        ("p:judge", SUMMARY_ROLE, 30, 30 * 2_900, 30 * 200),
    ]
    probe_cost = (69_000 * 2 + 60_000 * 8) / 1e6
    judge_cost = (90_000 * 1 + 18_000 * 4) / 1e6
    summary_cost = (87_000 * 1 + 6_000 * 4) / 1e6
    assert estimate.known_cost_usd == pytest.approx(probe_cost + judge_cost + summary_cost)
    assert estimate.cost_usd is None and estimate.unknown_price_models == ("p:unpriced",)
    assert estimate.calls == 60 + 30 + 30 + 30
    assert [m["role"] for m in estimate.to_dict()["models"]] == [
        "probe", "judge", "judge", "summary",
    ]  # fmt: skip


def test_learned_answer_sizes_replace_max_tokens_never_above_them() -> None:
    models = [ModelPrice("a:x", 1.0, 2.0), ModelPrice("b:y", 1.0, 2.0), ModelPrice("c:z", 1, 2)]
    learned = {"a:x": LearnedTokens(100, 40), "b:y": LearnedTokens(5000, 3)}
    estimate = estimate_run_cost(
        prompts=3, models=models, turns=2, prompt_tokens=50, output_tokens_per_turn=800,
        learned=learned,
    )  # fmt: skip
    a, b, c = estimate.models
    assert (a.output_tokens, a.learned_from) == (3 * 2 * 100, 40)
    assert a.input_tokens == 3 * conversation_tokens(2, 50, 100)[0]  # the answer is resent
    assert (b.output_tokens, b.learned_from) == (3 * 2 * 800, 3)  # capped at max tokens
    assert (c.output_tokens, c.learned_from) == (3 * 2 * 800, 0)
    assert not estimate.upper_bound and estimate.to_dict()["upper_bound"] is False
    plain = estimate_run_cost(
        prompts=3, models=models, turns=2, prompt_tokens=50, output_tokens_per_turn=800
    )
    assert plain.upper_bound and plain.cost_usd is not None and estimate.cost_usd is not None
    assert estimate.cost_usd < plain.cost_usd
