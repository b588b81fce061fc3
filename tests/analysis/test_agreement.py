"""modelAgreement, κ and α against scipy/statsmodels and Krippendorff's published data."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa

from valuerank.analysis.agreement import (
    code_weights,
    krippendorff_alpha,
    model_agreement,
    modified_z,
    outlier_models,
    paired_dz,
    weighted_kappa,
)
from valuerank.analysis.correlation import spearman

from .helpers import run_of

NAN = np.nan


def test_spearman_matches_scipy() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(1, 6, 25).astype(float)
    b = a + rng.normal(0, 1.5, 25)
    ref = stats.spearmanr(a, b)
    rho, p = spearman(a, b)
    assert rho == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert spearman(np.array([1.0, 2]), np.array([2.0, 1])) == (None, None)
    assert spearman(np.array([3.0, 3, 3]), np.array([1.0, 2, 3])) == (None, None)


def test_pairs_are_keyed_in_sorted_order_over_scenarios_both_decided() -> None:
    # Model ids contain ':' (the original crashed splitting its pair keys on it).
    models = ("openai:gpt-4.1", "anthropic:claude", "scripted:contrarian?seed=2")
    rng = np.random.default_rng(5)
    base = rng.integers(1, 6, 30).astype(float)
    decisions = {
        models[0]: base,
        models[1]: np.clip(base + rng.integers(-1, 2, 30), 1, 5),
        models[2]: 6 - base,
    }
    decisions[models[1]][:4] = NAN  # refused four scenarios: they drop from its pairs only
    rows = [
        (m, f"s{k:02d}", None if np.isnan(x) else int(x))
        for m, xs in decisions.items()
        for k, x in enumerate(xs)
    ]
    data = run_of(rows)
    section, warnings = model_agreement(data.models, data.cell_means())
    assert not warnings
    pairs = section["pairwise"]
    a, b, c = sorted(models)
    assert set(pairs) == {f"{a}:{b}", f"{a}:{c}", f"{b}:{c}"}
    entry = pairs[f"{a}:{c}"]
    assert (entry["model1"], entry["model2"]) == (a, c)
    both = ~np.isnan(decisions[a]) & ~np.isnan(decisions[c])
    ref = stats.spearmanr(decisions[a][both], decisions[c][both])
    assert entry["n"] == int(both.sum()) == 26
    assert entry["spearmanRho"] == pytest.approx(ref.statistic)
    assert entry["pValue"] == pytest.approx(ref.pvalue)
    diff = decisions[a][both] - decisions[c][both]
    # Issue 31: "effectSize 0.052, negligible" beside ρ = −0.88 read as agreement; it is
    # the size of the pair's mean difference, and is named so.
    assert "effectSize" not in entry and "effectInterpretation" not in entry
    assert entry["meanDifference"] == pytest.approx(diff.mean())
    assert entry["meanDifferenceDz"] == pytest.approx(diff.mean() / diff.std(ddof=1))
    assert entry["meanDifferenceSize"] in {"negligible", "small", "medium", "large"}
    # Holm over the three p-values: sorted ascending, times 3, 2, 1, running maximum.
    raw = sorted((p["pValue"], k) for k, p in pairs.items())
    running = 0.0
    for rank, (p, key) in enumerate(raw):
        running = max(running, min(1.0, p * (3 - rank)))
        assert pairs[key]["pValueCorrected"] == pytest.approx(running)
        assert pairs[key]["significant"] == (running <= 0.05)
    mirrored = pairs[f"{b}:{c}"] if "contrarian" in c else pairs[f"{a}:{c}"]
    assert mirrored["spearmanRho"] < -0.5
    rhos = [p["spearmanRho"] for p in pairs.values()]
    assert section["overallAgreement"] == pytest.approx(np.mean(rhos))


def test_undefined_pairs_are_null_and_warned() -> None:
    rows = [
        ("m:a", "s1", 3),
        ("m:a", "s2", 3),
        ("m:a", "s3", 3),
        ("m:b", "s1", 1),
        ("m:b", "s2", 4),
        ("m:b", "s3", 5),
    ]
    data = run_of(rows)
    section, warnings = model_agreement(data.models, data.cell_means())
    entry = section["pairwise"]["m:a:m:b"]
    assert entry["spearmanRho"] is None and entry["pValueCorrected"] is None
    assert entry["significant"] is False
    assert section["overallAgreement"] is None
    assert [w.code for w in warnings] == ["UNDEFINED_CORRELATION"]


def test_paired_dz() -> None:
    a, b = np.array([3.0, 4, 5, 2]), np.array([1.0, 3, 5, 1])
    d = a - b
    assert paired_dz(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    assert paired_dz(a, a) == 0.0
    assert paired_dz(a, a - 1) is None  # a constant shift: infinite d, reported as undefined


def test_outliers_by_modified_z_score() -> None:
    means = {"a": 0.61, "b": 0.63, "c": 0.6, "d": 0.62, "contrarian": -0.7}
    assert outlier_models(means) == ["contrarian"]
    assert outlier_models({"a": 0.6, "b": 0.6, "c": -0.7}) == []  # three models: too few
    z = modified_z(np.array([1.0, 2, 3, 4, 100]))
    assert z[-1] == pytest.approx(0.6745 * 97 / 1.0)


def test_weighted_kappa_matches_statsmodels() -> None:
    rng = np.random.default_rng(6)
    a = rng.integers(1, 6, 50).astype(float)
    b = np.clip(a + rng.integers(-1, 2, 50), 1, 5).astype(float)
    table = np.zeros((5, 5))
    np.add.at(table, (a.astype(int) - 1, b.astype(int) - 1), 1)
    ref = cohens_kappa(table, wt="quadratic").kappa
    assert weighted_kappa(a, b) == pytest.approx(ref)
    assert weighted_kappa(np.array([3.0]), np.array([3.0])) is None


def test_krippendorff_alpha_on_his_published_reliability_data() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders, 12 units,
    # missing values; published ordinal alpha = 0.815.
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
            [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
        ]
    )
    assert krippendorff_alpha(data) == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(np.array([[1.0, 2, 3]])) is None  # one coder
    assert krippendorff_alpha(np.array([[3.0, 3], [3.0, 3]])) is None  # no variation
    assert krippendorff_alpha(np.array([[1.0, NAN], [NAN, 2.0]])) is None  # nothing pairable


def test_a_halfway_cell_counts_half_for_each_code() -> None:
    weights = code_weights(np.array([1.0, 2.5, 2.4, 2.6, NAN, 4.5]))
    np.testing.assert_array_equal(
        weights,
        [
            [1, 0, 0, 0, 0],
            [0, 0.5, 0.5, 0, 0],
            [0, 1, 0, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0.5, 0.5],
        ],
    )


def _halfway_cells(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Cell means of two samples each: a third of them halfway between two codes."""
    first = rng.integers(1, 6, shape)
    second = np.clip(first + rng.choice([0, 0, 1, -1], shape), 1, 5)
    halves: np.ndarray = (first + second) / 2
    return halves


def test_weighted_kappa_with_halfway_cells_matches_statsmodels_on_the_split_table() -> None:
    rng = np.random.default_rng(7)
    cells = _halfway_cells(rng, (2, 60))
    assert np.isclose(cells % 1, 0.5).mean() > 0.2
    wa, wb = code_weights(cells[0]), code_weights(cells[1])
    table = np.einsum("nc,nk->ck", wa, wb)  # a halfway cell puts ½ in each of its two rows
    ref = cohens_kappa(table, wt="quadratic").kappa
    assert weighted_kappa(wa, wb) == pytest.approx(ref)
    # No direction is favoured: reading the scale backwards gives the same κ (rounding half
    # up sends 2.5 up to 3 but its mirror 3.5 to 4, i.e. 2 on the reversed scale).
    assert weighted_kappa(code_weights(6 - cells[0]), code_weights(6 - cells[1])) == (
        pytest.approx(ref)
    )
    rounded_up = weighted_kappa(np.floor(cells[0] + 0.5), np.floor(cells[1] + 0.5))
    mirrored = weighted_kappa(np.floor(6 - cells[0] + 0.5), np.floor(6 - cells[1] + 0.5))
    assert rounded_up != pytest.approx(mirrored)


def test_krippendorff_alpha_with_halfway_cells_is_the_alpha_of_every_coin_toss() -> None:
    """Each halfway cell as a fair coin between its two codes: the coincidences are the
    average over every outcome of the coins — the `krippendorff` package's coincidences of
    the enumerated outcomes (each unit repeated so that every unit weighs the same), over
    their number — and α follows from them with the package's own expected coincidences and
    ordinal distances. (α of the enumerated data itself differs: its n is larger.)"""
    from krippendorff.krippendorff import (
        _coincidences,
        _distances,
        _ordinal_metric,
        _random_coincidences,
        _reliability_data_to_value_counts,
    )

    rng = np.random.default_rng(9)
    cells = _halfway_cells(rng, (3, 12))
    cells[0, :2] = NAN
    ties = [np.flatnonzero(np.isclose(cells[:, u] % 1, 0.5)) for u in range(12)]
    most = max(len(t) for t in ties)
    columns = []
    for u, tied in enumerate(ties):
        for outcome in itertools.product((0.0, 1.0), repeat=len(tied)):
            column = np.floor(cells[:, u] + 0.5)
            column[tied] = np.floor(cells[tied, u]) + np.array(outcome)
            columns += [column] * 2 ** (most - len(tied))
    domain = np.arange(1, 6)
    counts = _reliability_data_to_value_counts(np.stack(columns, axis=1), domain)
    o = _coincidences(counts) / 2**most
    n_v = o.sum(axis=0)
    d: np.ndarray = _distances(domain, _ordinal_metric, n_v)
    ref = 1 - (o * d).sum() / (_random_coincidences(n_v) * d).sum()
    assert krippendorff_alpha(code_weights(cells)) == pytest.approx(ref, rel=1e-9)
    whole = np.floor(cells + 0.5)  # whole codes: the package itself
    assert krippendorff_alpha(whole) == pytest.approx(
        krippendorff.alpha(
            reliability_data=whole, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        ),
        rel=1e-9,
    )
