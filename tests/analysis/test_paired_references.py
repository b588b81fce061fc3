"""A comparison's intervals, tests and effect sizes against references computed here with
scipy (`bootstrap`, `permutation_test`) and statsmodels (`mcnemar`, `proportion_effectsize`),
for full and sampled runs (no finite-population correction: the same intervals)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_effectsize

from valuerank.analysis.comparison import SEED, compare
from valuerank.analysis.data import AnalysisInput
from valuerank.analysis.paired import changed_decisions
from valuerank.analysis.sampling import SampleBasis

from .helpers import run_of, strict_json

A = "openai:gpt-4.1"


def _stream(model: str, purpose: int) -> np.random.Generator:
    """The seed the comparison documents for a model's draws (0 decisions, 1 values bootstrap,
    2 value permutations)."""
    return np.random.default_rng([SEED, zlib.crc32(model.encode()), purpose])


def _win(p: np.ndarray, d: np.ndarray) -> np.ndarray:
    total = p + d
    return np.where(total > 0, p / np.where(total > 0, total, 1), 0.5)


Pair = tuple[AnalysisInput, AnalysisInput, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _pair(n: int, seed: int, *, sample: tuple[SampleBasis, SampleBasis] | None = None) -> Pair:
    """Two runs of model A over n scenarios: decisions that shift up, and value judgments
    (Care vs Honesty) whose balance moves."""
    rng = np.random.default_rng(seed)
    base = rng.integers(1, 6, n)
    moved = np.clip(base + rng.choice([-1, 0, 1, 1, 2], n), 1, 5)
    care_a = rng.random(n) < 0.6
    care_b = rng.random(n) < 0.35
    values_a = [(["Care"], ["Honesty"]) if c else (["Honesty"], ["Care"]) for c in care_a]
    values_b = [(["Care"], ["Honesty"]) if c else (["Honesty"], ["Care"]) for c in care_b]
    a = run_of(
        [(A, f"s{k:03d}", int(x)) for k, x in enumerate(base)],
        values=values_a,
        sample=None if sample is None else sample[0],
    )
    b = run_of(
        [(A, f"s{k:03d}", int(x)) for k, x in enumerate(moved)],
        values=values_b,
        sample=None if sample is None else sample[1],
    )
    return a, b, base.astype(float), moved.astype(float), care_a, care_b


def _decision_reference(
    x: np.ndarray, y: np.ndarray, draws: int
) -> stats._resampling.BootstrapResult:
    return stats.bootstrap(
        (x, y),
        lambda a, b, axis=-1: b.mean(axis=axis) - a.mean(axis=axis),
        paired=True,
        method="percentile",
        n_resamples=draws,
        rng=_stream(A, 0),
    )


def _value_reference(
    care_a: np.ndarray, care_b: np.ndarray, draws: int
) -> stats._resampling.BootstrapResult:
    """scipy's paired bootstrap of Care's win-rate delta over the four count columns."""
    pa, da = care_a.astype(float), (~care_a).astype(float)
    pb, db = care_b.astype(float), (~care_b).astype(float)
    return stats.bootstrap(
        (pa, da, pb, db),
        lambda p1, d1, p2, d2, axis=-1: (
            _win(p2.sum(axis=axis), d2.sum(axis=axis)) - _win(p1.sum(axis=axis), d1.sum(axis=axis))
        ),
        paired=True,
        method="percentile",
        n_resamples=draws,
        rng=_stream(A, 1),
    )


def test_paired_bootstrap_intervals_are_scipys() -> None:
    a, b, x, y, care_a, care_b = _pair(60, 1)
    result = strict_json(compare(a, b, bootstrap=700))
    entry = result["perModel"][A]
    ref = _decision_reference(x, y, 700).confidence_interval
    assert entry["interval"]["lower"] == pytest.approx(ref.low, abs=1e-6)
    assert entry["interval"]["upper"] == pytest.approx(ref.high, abs=1e-6)
    assert entry["interval"]["method"] == "paired_bootstrap_percentile"
    care = result["values"][A]["Care"]
    value_ref = _value_reference(care_a, care_b, 700).confidence_interval
    assert care["interval"]["lower"] == pytest.approx(value_ref.low, abs=1e-6)
    assert care["interval"]["upper"] == pytest.approx(value_ref.high, abs=1e-6)
    assert result["samples"]["pairedPopulation"] is None
    assert "SAMPLED_RUN" not in {w["code"] for w in result["warnings"]}


def test_sampled_runs_get_the_plain_bootstrap_and_say_so() -> None:
    """No finite-population correction: a scenario's mean difference keeps the models'
    randomness at 100 %, so a sample's intervals are scipy's plain paired bootstrap."""
    total = 240
    bases = (SampleBasis(25, 60, total), SampleBasis(25, 60, total))
    a, b, x, y, care_a, care_b = _pair(60, 2, sample=bases)
    result = strict_json(compare(a, b, bootstrap=600))
    ref = _decision_reference(x, y, 600).confidence_interval
    entry = result["perModel"][A]
    assert entry["interval"]["method"] == "paired_bootstrap_percentile"
    assert entry["interval"]["finitePopulationCorrection"] is None
    assert entry["interval"]["lower"] == pytest.approx(ref.low, abs=1e-6)
    assert entry["interval"]["upper"] == pytest.approx(ref.high, abs=1e-6)
    value_ref = _value_reference(care_a, care_b, 600).confidence_interval
    care = result["values"][A]["Care"]
    assert care["interval"]["method"] == "paired_bootstrap_percentile"
    assert care["interval"]["lower"] == pytest.approx(value_ref.low, abs=1e-6)
    assert care["interval"]["upper"] == pytest.approx(value_ref.high, abs=1e-6)
    # What the figures rest on: both bases, a warning, and that no correction applies.
    assert result["samples"]["pairedPopulation"] == total
    assert result["samples"]["baseline"]["basis"] == "based on 25 % sample: 60 of 240 scenarios"
    sampled = [w for w in result["warnings"] if w["code"] == "SAMPLED_RUN"]
    assert len(sampled) == 1 and "baseline based on 25 % sample: 60 of 240" in sampled[0]["message"]
    assert "no finite-population correction" in sampled[0]["recommendation"]
    assert result["methodsUsed"]["finitePopulationCorrection"] is None
    assert "unbounded population" in result["methodsUsed"]["scenarioPopulation"]
    assert result["methodsUsed"]["deltaInterval"] == "paired_bootstrap_percentile"


def test_a_full_run_against_a_sample_of_every_shared_scenario_is_not_zero_width() -> None:
    """Every pairable scenario paired (fpc would be 0): the interval keeps its width."""
    bases = (SampleBasis(100, 60, 60), SampleBasis(50, 60, 120))
    a, b, *_ = _pair(60, 3, sample=bases)
    result = strict_json(compare(a, b, bootstrap=200))
    assert result["samples"]["pairedPopulation"] == 60
    interval = result["perModel"][A]["interval"]
    assert interval["finitePopulationCorrection"] is None
    assert interval["lower"] < result["perModel"][A]["delta"] < interval["upper"]


@pytest.mark.parametrize(("percentage", "sampled"), [(50, 100), (90, 180)], ids=["50%", "90%"])
def test_expanding_the_compared_run_to_every_scenario_does_not_widen_the_intervals(
    percentage: int, sampled: int
) -> None:
    """A full baseline against a sample of `sampled` of 200 scenarios, then against the
    sample expanded: the same pairs plus the rest of the scenarios, which repeat the first
    ones' pairs. Neither interval widens and none has zero width (scaling the sample's
    deviations by fpc made the 90 % sample's interval 3× narrower than its expansion's)."""
    total = 200
    rng = np.random.default_rng(7)
    base = rng.integers(1, 6, sampled)
    moved = np.clip(base + rng.choice([-1, 0, 1, 1, 2], sampled), 1, 5)
    care_a, care_b = rng.random(sampled) < 0.6, rng.random(sampled) < 0.35
    extra = total - sampled

    def run(decisions: np.ndarray, care: np.ndarray, sample: SampleBasis) -> AnalysisInput:
        decisions = np.concatenate([decisions, decisions[:extra]])[: sample.scenarios]
        care = np.concatenate([care, care[:extra]])[: sample.scenarios]
        return run_of(
            [(A, f"s{k:03d}", int(d)) for k, d in enumerate(decisions)],
            values=[(["Care"], ["Honesty"]) if c else (["Honesty"], ["Care"]) for c in care],
            sample=sample,
        )

    every = SampleBasis(100, total, total)
    baseline = run(base, care_a, every)
    part = strict_json(
        compare(baseline, run(moved, care_b, SampleBasis(percentage, sampled, total)))
    )
    full = strict_json(compare(baseline, run(moved, care_b, every)))
    assert (part["perModel"][A]["n"], full["perModel"][A]["n"]) == (sampled, total)
    for before, after in (
        (part["perModel"][A]["interval"], full["perModel"][A]["interval"]),
        (part["values"][A]["Care"]["interval"], full["values"][A]["Care"]["interval"]),
    ):
        assert 0 < after["upper"] - after["lower"] < before["upper"] - before["lower"]


def test_an_unknown_population_gives_no_paired_population() -> None:
    bases = (SampleBasis(25, 60, None), SampleBasis(25, 60, 240))
    a, b, *_ = _pair(60, 4, sample=bases)
    result = strict_json(compare(a, b, bootstrap=100))
    assert result["samples"]["pairedPopulation"] is None
    assert "SAMPLED_RUN" in {w["code"] for w in result["warnings"]}
    assert result["perModel"][A]["interval"]["method"] == "paired_bootstrap_percentile"


def _permutation_reference(care_a: np.ndarray, care_b: np.ndarray, draws: int) -> float:
    """scipy's paired permutation test of Care's win-rate delta: each scenario's (p, d)
    counts packed into one number per side so that swapping sides swaps both."""
    x = care_a * 1000.0 + (~care_a)
    y = care_b * 1000.0 + (~care_b)

    def statistic(first: np.ndarray, second: np.ndarray, axis: int = -1) -> np.ndarray:
        p1, d1 = np.divmod(first, 1000)
        p2, d2 = np.divmod(second, 1000)
        delta: np.ndarray = _win(p2.sum(axis=axis), d2.sum(axis=axis)) - _win(
            p1.sum(axis=axis), d1.sum(axis=axis)
        )
        return delta

    result = stats.permutation_test(
        (x, y),
        statistic,
        permutation_type="samples",
        vectorized=True,
        n_resamples=draws,
        rng=np.random.default_rng(5),
    )
    return float(result.pvalue)


def test_small_permutation_tests_are_exact_like_scipys() -> None:
    a, b, _, _, care_a, care_b = _pair(9, 6)  # 2⁹ = 512 swaps ≤ 1,000 draws: every one
    care = strict_json(compare(a, b, bootstrap=1000))["values"][A]["Care"]
    assert care["test"] == "paired_permutation_exact"
    assert care["pValue"] == pytest.approx(_permutation_reference(care_a, care_b, 1000), rel=1e-9)


def test_random_permutation_p_values_agree_with_scipys() -> None:
    a, b, _, _, care_a, care_b = _pair(80, 7)
    care = strict_json(compare(a, b, bootstrap=4000))["values"][A]["Care"]
    assert care["test"] == "paired_permutation"
    reference = _permutation_reference(care_a, care_b, 4000)
    # Two Monte Carlo estimates of one p-value, 4,000 draws each: se ≤ 0.008 apiece.
    assert abs(care["pValue"] - reference) < 0.03
    assert 0.001 < reference < 0.5  # a p-value where the comparison means something


def test_value_effect_size_is_cohens_h() -> None:
    a, b, *_ = _pair(60, 8)
    result = strict_json(compare(a, b, bootstrap=100))
    for entry in result["values"][A].values():
        ref = proportion_effectsize(entry["comparisonWinRate"], entry["baselineWinRate"])
        assert entry["effectSize"]["cohensH"] == pytest.approx(ref, rel=1e-5)
        size = abs(ref)
        words = "negligible" if size < 0.2 else "small" if size < 0.5 else "medium"
        assert entry["effectSize"]["interpretation"] == (words if size < 0.8 else "large")
    assert result["methodsUsed"]["valueEffectSize"] == "cohens_h"


def test_many_discordant_pairs_use_mcnemars_chi_square() -> None:
    # 1 → 5 eighteen times, 5 → 1 nine times: 27 discordant pairs.
    a = np.array([1.0] * 30 + [5.0] * 20)
    b = np.array([5.0] * 18 + [1.0] * 12 + [1.0] * 9 + [5.0] * 11)
    found = changed_decisions(a, b)
    table = np.array([[12, 18], [9, 11]])
    ref = mcnemar(table, exact=False, correction=False)
    assert found["test"] == "mcnemar" and found["changed"] == 27
    assert found["statistic"] == pytest.approx(ref.statistic)
    assert found["pValue"] == pytest.approx(ref.pvalue)
    assert found["statistic"] == pytest.approx((18 - 9) ** 2 / 27)  # the textbook χ²
    assert found["pValue"] == pytest.approx(stats.chi2.sf((18 - 9) ** 2 / 27, 1))
