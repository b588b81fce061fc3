"""Scripted personas asked a scenario in another order or wording: what they answer, and the
known biases `position_bias` and `wording_bias` (in expectation for fractions)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from valuerank.definitions.presentation import map_decision, reverse_scale
from valuerank.providers.base import CompletionRequest, Message
from valuerank.providers.scripted import (
    ScriptedConfigError,
    build_scripted_provider,
    parse_scripted_model,
)
from valuerank.scoring import decision_code

BODY = """I found a defect in scenario {n}. Should I:
5 - report the defect to the regulator now
4 - push hard inside the company for a recall
3 - raise it once more with my manager and wait
2 - wait for the next release as asked
1 - stay quiet and keep my loyalty to the company"""
SCORES = [
    {"Harm": 1 + n % 5, "Cost": 1 + (n * 7) % 5, "Tenure": 1 + (n * 3) % 5} for n in range(200)
]


def _request(n: int, order: str, phrasing: str = "", sample: int = 0) -> CompletionRequest:
    body = BODY.format(n=n)
    shown = reverse_scale(body) if order == "reversed" else body
    hints: dict[str, Any] = {
        "dimension_scores": SCORES[n],
        "rating_scale": [1, 5],
        "presentation": {"order": order, "phrasing": phrasing},
    }
    return CompletionRequest(
        model="", messages=(Message("user", shown),), seed=1000 + sample, hints=hints
    )


async def _mapped(model: str, n: int, order: str, phrasing: str = "") -> int:
    answer = await build_scripted_provider(model).complete(_request(n, order, phrasing))
    code = decision_code(answer.text).code
    assert code is not None
    mapped = map_decision(code, 1, 5) if order == "reversed" else code
    assert mapped is not None
    return mapped


async def test_without_biases_a_persona_decides_the_same_in_both_orders_and_as_before() -> None:
    provider = build_scripted_provider("utilitarian")
    for n in range(40):
        written = await _mapped("utilitarian", n, "as-written")
        assert await _mapped("utilitarian", n, "reversed") == written
        # The presentation hint of an as-written first phrasing changes nothing.
        bare = _request(n, "as-written")
        bare = CompletionRequest(
            model="",
            messages=bare.messages,
            seed=bare.seed,
            hints={k: v for k, v in bare.hints.items() if k != "presentation"},
        )
        assert decision_code((await provider.complete(bare)).text).code == written


@pytest.mark.parametrize("bias", [1.0, 0.5, 0.25])
async def test_position_bias_separates_the_orders_by_twice_the_bias_in_expectation(
    bias: float,
) -> None:
    model = f"neutral?position_bias={bias:g}"
    differences = [
        await _mapped(model, n, "as-written") - await _mapped(model, n, "reversed")
        for n in range(200)
    ]
    # The neutral persona stays near 3, so the scale's ends seldom clip: 2 × bias.
    assert statistics.fmean(differences) == pytest.approx(2 * bias, abs=0.15)


@pytest.mark.parametrize("bias", [1.0, 0.5])
async def test_wording_bias_moves_alternative_phrasings_only(bias: float) -> None:
    model = f"neutral?wording_bias={bias:g}"
    shifts = []
    for n in range(200):
        first = await _mapped(model, n, "as-written")
        assert await _mapped("neutral", n, "as-written") == first
        reworded = await _mapped(model, n, "as-written", "Harm2o2")
        assert await _mapped(model, n, "reversed", "Harm2o2") == reworded
        shifts.append(reworded - first)
    assert set(shifts) <= {0, 1, 2} and statistics.fmean(shifts) == pytest.approx(bias, abs=0.1)


def test_the_bias_parameters_parse_into_the_canonical_id() -> None:
    config = parse_scripted_model("centrist?wording_bias=0.5&position_bias=-1")
    assert (config.position_bias, config.wording_bias) == (-1.0, 0.5)
    assert config.model_id == "scripted:centrist?position_bias=-1&wording_bias=0.5"
    with pytest.raises(ScriptedConfigError, match="position_bias"):
        parse_scripted_model("centrist?position_bias=9")


async def test_a_malformed_presentation_hint_is_refused() -> None:
    request = _request(0, "as-written")
    bad = CompletionRequest(
        model="", messages=request.messages, hints={"presentation": {"order": "sideways"}}
    )
    with pytest.raises(ScriptedConfigError, match="scale order"):
        await build_scripted_provider("utilitarian").complete(bad)
