"""Run comparisons: paired deltas, Wilcoxon, McNemar/Stuart–Maxwell, value permutation tests,
the correction across everything tested."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from valuerank.analysis.comparison import compare
from valuerank.analysis.paired import changed_decisions, rank_biserial
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import run_of, strict_json

A, B, C = "m:a", "m:b", "m:c"


def _stuart_maxwell(table: np.ndarray) -> float:
    """The textbook statistic: d = row − column margins (one category dropped),
    S = the covariance of d, χ² = dᵀ S⁻¹ d (Stuart 1955; Maxwell 1970)."""
    k = table.shape[0]
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    d = (rows - cols)[:-1]
    s = np.zeros((k - 1, k - 1))
    for i in range(k - 1):
        for j in range(k - 1):
            s[i, j] = (
                rows[i] + cols[i] - 2 * table[i, i] if i == j else -(table[i, j] + table[j, i])
            )
    return float(d @ np.linalg.solve(s, d))


def test_decision_delta_against_references() -> None:
    rng = np.random.default_rng(31)
    base = rng.integers(1, 6, 40)
    moved = np.clip(base + rng.choice([0, 0, 1, 1, 2], 40), 1, 5)
    a = run_of([(A, f"s{k}", int(x)) for k, x in enumerate(base)] + [(C, "s0", 3)])
    b = run_of([(A, f"s{k}", int(x)) for k, x in enumerate(moved)] + [(B, "s0", 3)])
    result = strict_json(compare(a, b, bootstrap=500))
    assert result["models"] == {"shared": [A], "baselineOnly": [C], "comparisonOnly": [B]}
    assert "MODELS_NOT_SHARED" in [w["code"] for w in result["warnings"]]
    entry = result["perModel"][A]
    diff = (moved - base).astype(float)
    assert entry["delta"] == pytest.approx(diff.mean(), rel=1e-5)
    # Ties among ≤ 50 non-zero pairs: the exact sign-flip p (checked against scipy's
    # permutation_test in test_wilcoxon_is_exact_…), not scipy's normal approximation
    # (9.9e-06 here) that this test compared with before (issue 31).
    assert entry["wilcoxon"]["method"] == "exact_sign_flip"
    assert entry["wilcoxon"]["pValue"] == pytest.approx(2.38419e-07, rel=1e-4)
    assert entry["wilcoxon"]["statistic"] == stats.wilcoxon(diff, zero_method="wilcox").statistic
    assert entry["effectSize"]["dz"] == pytest.approx(diff.mean() / diff.std(ddof=1), rel=1e-5)
    assert entry["interval"]["lower"] < entry["delta"] < entry["interval"]["upper"]
    assert entry["interval"]["lower"] > 0  # the shift is real
    table = np.zeros((5, 5))
    np.add.at(table, (base - 1, moved - 1), 1)
    present = np.flatnonzero(table.sum(axis=0) + table.sum(axis=1))
    sub = table[np.ix_(present, present)]
    changed = entry["changedDecisions"]
    assert changed["test"] == "stuart_maxwell"
    assert changed["changed"] == int((base != moved).sum())
    assert changed["statistic"] == pytest.approx(_stuart_maxwell(sub), rel=1e-5)
    assert changed["pValue"] == pytest.approx(
        stats.chi2.sf(_stuart_maxwell(sub), len(present) - 1), rel=1e-5
    )
    assert result["divergedScenarios"][0]["meanAbsDelta"] == 2


def test_two_codes_use_mcnemar() -> None:
    a = np.array([1.0] * 10 + [5.0] * 10)
    b = np.array([1.0] * 4 + [5.0] * 6 + [5.0] * 9 + [1.0])
    found = changed_decisions(a, b)
    assert found["test"] == "mcnemar_exact" and found["changed"] == 7
    assert found["pValue"] == pytest.approx(stats.binomtest(1, 7).pvalue)
    nothing = changed_decisions(a, a)
    assert nothing["changed"] == 0 and nothing["pValue"] == 1.0


def test_rank_biserial() -> None:
    diff = np.array([1.0, 2, -1, 3, 0])
    ranks = stats.rankdata(np.abs(diff[diff != 0]))
    plus = ranks[diff[diff != 0] > 0].sum()
    minus = ranks[diff[diff != 0] < 0].sum()
    assert rank_biserial(diff) == pytest.approx((plus - minus) / (plus + minus))
    assert rank_biserial(np.zeros(3)) == 0.0


def test_value_deltas_and_the_correction_across_every_test() -> None:
    n = 60
    a = run_of(
        [(A, f"s{k}", 3) for k in range(n)],
        values=[(["Care"], ["Honesty"]) if k % 4 else (["Honesty"], ["Care"]) for k in range(n)],
    )
    b = run_of(
        [(A, f"s{k}", 3) for k in range(n)],
        values=[(["Honesty"], ["Care"]) if k % 4 else (["Care"], ["Honesty"]) for k in range(n)],
    )
    result = strict_json(compare(a, b, bootstrap=400, correction="holm"))
    care = result["values"][A]["Care"]
    assert care["baselineWinRate"] == 0.75
    assert care["comparisonWinRate"] == 0.25
    assert care["delta"] == -0.5
    assert care["interval"]["upper"] < 0 and care["pValue"] < 0.05
    assert care["test"] == "paired_permutation"
    # Every decision is 3 in both runs: the Wilcoxon and changed-decision tests cannot
    # reject (p = 1 by construction) and stay out of the family.
    per_model = result["perModel"][A]
    for dead in (per_model["wilcoxon"], per_model["changedDecisions"]):
        assert dead["pValue"] == 1.0 and dead["canReject"] is False
        assert dead["inFamily"] is False and dead["pValueCorrected"] == 1.0
    from statsmodels.stats.multitest import multipletests

    live = [result["values"][A][v] for v in ("Care", "Honesty")]
    expected = multipletests([e["pValue"] for e in live], method="holm")[1]
    assert [e["pValueCorrected"] for e in live] == pytest.approx(list(expected), rel=1e-5)
    assert all(e["inFamily"] and e["canReject"] for e in live)
    methods = result["methodsUsed"]
    assert methods["correction"] == "holm"
    assert (methods["testsInFamily"], methods["testsLeftOut"]) == (2, 2)


def test_tests_that_cannot_reject_do_not_dilute_a_real_effect() -> None:
    """The issue's case: one value moved, many did not (identical lists in both runs). The
    Holm-corrected p of the moved value is its raw p times the live tests only."""
    n = 40
    still = [f"Still{k:02d}" for k in range(28)]  # 28 values that never move: 28 dead tests
    pairs = [(still[k % 28], still[(k + 1) % 28]) for k in range(n)]

    def run(flip: bool) -> Any:
        values = []
        for k, (p, d) in enumerate(pairs):
            moved = (["Care"], ["Honesty"]) if (k % 4 != 0) != flip else (["Honesty"], ["Care"])
            values.append(([p, *moved[0]], [d, *moved[1]]))
        return run_of([(A, f"s{k:02d}", 3) for k in range(n)], values=values)

    result = strict_json(compare(run(False), run(True), bootstrap=400, correction="holm"))
    entries = result["values"][A]
    live = {v: e for v, e in entries.items() if e["canReject"]}
    assert set(live) == {"Care", "Honesty"}
    dead = [e for e in entries.values() if not e["canReject"]]
    assert len(dead) == 28 and all(e["pValue"] == 1.0 and not e["inFamily"] for e in dead)
    care = live["Care"]
    assert care["pValue"] < 0.01
    raw = sorted(e["pValue"] for e in live.values())
    assert care["pValueCorrected"] == pytest.approx(min(1.0, raw[0] * 2), rel=1e-5)
    assert care["significant"] is True
    assert result["methodsUsed"]["testsLeftOut"] == 28 + 2  # + Wilcoxon and changes


def test_more_samples_of_a_scenario_are_not_more_pairs() -> None:
    """The scenario is the unit: three identical samples per scenario give the same
    intervals and p-values as one."""
    rng = np.random.default_rng(12)
    base = rng.integers(1, 6, 30)
    moved = np.clip(base + rng.choice([0, 1, 1, -1], 30), 1, 5)
    judged = [(["Care"], ["Honesty"]) if x > 2 else (["Honesty"], ["Care"]) for x in moved]

    def run(codes: np.ndarray, values: list[Any], samples: int) -> Any:
        rows = [(A, f"s{k:02d}", int(x)) for k, x in enumerate(codes) for _ in range(samples)]
        return run_of(rows, values=[v for v in values for _ in range(samples)])

    plain = [(["Care"], ["Honesty"])] * 30
    once = strict_json(compare(run(base, plain, 1), run(moved, judged, 1), bootstrap=300))
    thrice = strict_json(compare(run(base, plain, 3), run(moved, judged, 3), bootstrap=300))
    for key in ("perModel", "values"):
        assert once[key] == thrice[key]
    assert once["perModel"][A]["n"] == 30


def test_comparing_runs_with_nothing_in_common() -> None:
    a = run_of([(A, "s1", 2)])
    b = run_of([(B, "s9", 4)])
    result = strict_json(compare(a, b))
    codes = {w["code"] for w in result["warnings"]}
    assert {"NO_SHARED_MODELS", "NO_SHARED_SCENARIOS", "MODELS_NOT_SHARED"} <= codes
    assert result["perModel"] == {} and result["divergedScenarios"] == []


def test_a_run_compared_with_itself_moves_nothing() -> None:
    data = synthetic_run(SyntheticSpec(models=3, scenarios=50, seed=2))
    result = strict_json(compare(data, data, bootstrap=100))
    for entry in result["perModel"].values():
        assert entry["delta"] == 0 and entry["wilcoxon"]["pValue"] == 1.0
        assert entry["changedDecisions"]["changed"] == 0
        assert entry["wilcoxon"]["significant"] is False


def test_codes_nobody_moved_from_are_left_out_of_the_test() -> None:
    # Code 3 stays 3 every time; 1 and 5 swap: the test is McNemar's over {1, 5}.
    a = np.array([3.0] * 6 + [1.0] * 5 + [5.0] * 2)
    b = np.array([3.0] * 6 + [5.0] * 5 + [1.0] * 2)
    found = changed_decisions(a, b)
    assert found["test"] == "mcnemar_exact" and found["changed"] == 7
    assert found["pValue"] == pytest.approx(stats.binomtest(2, 7).pvalue)
    # Three codes move in a cycle: Stuart–Maxwell over all three, finite.
    c = np.array([1.0, 2, 3, 1, 2, 3, 1, 4])
    d = np.array([2.0, 3, 1, 2, 3, 1, 1, 4])
    cycle = changed_decisions(c, d)
    assert cycle["test"] == "stuart_maxwell" and cycle["df"] == 2


def test_changed_decisions_do_not_depend_on_the_scales_direction() -> None:
    # Issue 31: each scenario's mean (two samples) halfway between codes was rounded half
    # up, so mirroring the scale (d -> 6 - d) changed the count and p. A halfway mean now
    # counts ½ for each neighbouring code, as in κ and α.
    rng = np.random.default_rng(7)
    base = rng.integers(1, 6, (30, 2)).mean(axis=1)
    moved = np.clip(rng.integers(1, 6, (30, 2)).mean(axis=1) + 0.5, 1, 5)
    assert np.any(base % 1 == 0.5) and np.any(moved % 1 == 0.5)
    found = changed_decisions(base, moved)
    mirrored = changed_decisions(6 - base, 6 - moved)
    assert mirrored["changed"] == pytest.approx(found["changed"])
    assert mirrored["pValue"] == pytest.approx(found["pValue"])
    assert mirrored["test"] == found["test"]


def test_a_halfway_mean_is_half_changed() -> None:
    # 3 → 3.5 is half a change; 2.5 → 2.5 too, as two fair coins tossed apart (κ's reading:
    # 2 or 3 each side, differing half the time): 5 halves and 3 whole changes
    a = np.array([3.0, 3.0, 3.0, 3.0, 2.5, 1.0, 1.0, 1.0, 5.0])
    b = np.array([3.5, 3.5, 3.5, 3.5, 2.5, 1.0, 5.0, 5.0, 1.0])
    found = changed_decisions(a, b)
    assert found["changed"] == pytest.approx(5.5)
    # the halfway means bring code 4 in: 3 → 4 twice (4 × ½), 1 → 5 twice, 5 → 1 once
    assert found["test"] == "stuart_maxwell"
    whole = changed_decisions(np.array([1.0] * 5 + [5.0]), np.array([5.0] * 4 + [1.0, 1.0]))
    assert whole["pValue"] == pytest.approx(stats.binomtest(1, 5).pvalue)


def test_wilcoxon_is_exact_for_few_pairs_with_ties_and_zeros() -> None:
    # Issue 31: 4 non-zero pairs (and zeros) gave the normal approximation's 0.046; every
    # sign of the 4 pairs equally likely gives 2/16.
    from valuerank.analysis.paired import wilcoxon

    found = wilcoxon(np.array([1.0, 1.0, 2.0, 1.0, 0.0, 0.0]))
    assert found["pValue"] == pytest.approx(0.125)
    assert found["method"] == "exact_sign_flip"
    # ties and zeros: the exact distribution of the sign flips of the midranks, as
    # scipy's permutation_test enumerates it
    diff = np.array([1.0, -1.0, 2.0, 2.0, 3.0, 0.0, 1.0, 2.0, -3.0, 4.0])
    nonzero = diff[diff != 0]

    def plus_ranks(x: np.ndarray, axis: int = -1) -> Any:
        ranks = stats.rankdata(np.abs(x), axis=axis)
        return np.sum(ranks * (x > 0), axis=axis)

    reference = stats.permutation_test(
        (nonzero,),
        plus_ranks,
        permutation_type="samples",
        n_resamples=2**nonzero.size,  # every sign: scipy then enumerates them exactly
    )
    result = wilcoxon(diff)
    assert result["pValue"] == pytest.approx(reference.pvalue)
    assert result["method"] == "exact_sign_flip"
    # no ties, no zeros: scipy's exact test
    clean = np.array([1.0, -2.0, 3.0, 4.0, 5.0, 6.0, -7.0, 8.0])
    assert wilcoxon(clean)["pValue"] == pytest.approx(stats.wilcoxon(clean, method="exact").pvalue)
    # many pairs: the normal approximation, as scipy's
    many = np.random.default_rng(1).integers(-3, 5, 80).astype(float)
    big = wilcoxon(many)
    assert big["method"] == "normal_approximation"
    assert big["pValue"] == pytest.approx(stats.wilcoxon(many, method="approx").pvalue)
