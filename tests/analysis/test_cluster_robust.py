"""CR2 with Bell–McCaffrey df, against the cases where it reduces to an independent library:
statsmodels' HC2 (one observation per cluster) and scipy's one-sample t-test on the cluster
means (intercept only, equal cluster sizes: the CR2 variance is the variance of the mean of
the means and the df are G − 1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats
from statsmodels.regression.linear_model import OLS

from valuerank.analysis.cluster_robust import cr2_fit


def test_one_observation_per_cluster_is_statsmodels_hc2() -> None:
    rng = np.random.default_rng(3)
    n = 60
    design = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = design @ [1.0, 2.0, -1.0] + rng.normal(size=n) * (1 + design[:, 1] ** 2)
    fit = cr2_fit(y, design, np.arange(n))
    reference = OLS(y, design).fit(cov_type="HC2")
    assert fit.params == pytest.approx(reference.params, rel=1e-12)
    assert fit.bse == pytest.approx(reference.bse, rel=1e-10)
    # Satterthwaite df lie between 1 and n − k (the homoskedastic df).
    assert np.all((fit.df > 1) & (fit.df <= n - 3 + 1e-9))


@pytest.mark.parametrize(("clusters", "size"), [(5, 2), (12, 4), (40, 3)])
def test_intercept_only_is_the_t_test_on_cluster_means(clusters: int, size: int) -> None:
    rng = np.random.default_rng(clusters)
    groups = np.repeat(np.arange(clusters), size)
    y = 0.3 + rng.normal(size=clusters)[groups] + rng.normal(size=groups.size)
    rng.shuffle(order := np.arange(groups.size))  # rows need not be sorted by cluster
    fit = cr2_fit(y[order], np.ones((groups.size, 1)), groups[order])
    means = np.array([y[groups == g].mean() for g in range(clusters)])
    test = stats.ttest_1samp(means, 0.0)
    interval = test.confidence_interval(0.95)
    assert fit.df[0] == pytest.approx(clusters - 1, rel=1e-9)
    assert fit.bse[0] == pytest.approx(stats.sem(means), rel=1e-10)
    assert fit.pvalues[0] == pytest.approx(test.pvalue, rel=1e-9)
    assert [fit.lower[0], fit.upper[0]] == pytest.approx([interval.low, interval.high], rel=1e-9)


def test_unbalanced_clusters_and_a_cluster_that_pins_a_parameter() -> None:
    """Clusters of different sizes are stacked by size; a cluster whose rows alone determine
    a coefficient (I − H_gg singular) takes the pseudo-inverse instead of failing."""
    rng = np.random.default_rng(9)
    groups = np.concatenate([np.repeat(np.arange(10), 3), np.arange(10, 20), [20, 20]])
    x = rng.normal(size=groups.size)
    dummy = (groups == 20).astype(float)  # only cluster 20 has it: its residuals are 0
    design = np.column_stack([np.ones(groups.size), x, dummy])
    y = 1 + 0.5 * x + 2 * dummy + rng.normal(size=groups.size)
    fit = cr2_fit(y, design, groups)
    assert np.all(np.isfinite(fit.params)) and np.all(np.isfinite(fit.bse[:2]))
    reference = OLS(y, design).fit()
    assert fit.params == pytest.approx(reference.params, rel=1e-10)
    assert fit.lower[1] < fit.params[1] < fit.upper[1]


def _brute_force_cr2(
    y: np.ndarray, design: np.ndarray, groups: np.ndarray, level: float
) -> tuple[Any, ...]:
    """CR2 and the Imbens–Kolesár df written from their definitions, with every n × n matrix
    formed: A_g = (I − H_gg)^(−1/2) per cluster, V = B (Σ X_g' A_g e_g e_g' A_g X_g) B, and
    df = (Σλ)² / Σλ², λ the eigenvalues of G'G with G's column g = (I − H)_{·g} A_g X_g B e_j."""
    n, k = design.shape
    bread = np.linalg.inv(design.T @ design)
    params = bread @ design.T @ y
    resid = y - design @ params
    residual_maker = np.eye(n) - design @ bread @ design.T
    labels = np.unique(groups)
    adjust = {}
    meat = np.zeros((k, k))
    for g in labels:
        rows = np.flatnonzero(groups == g)
        values, vectors = np.linalg.eigh(residual_maker[np.ix_(rows, rows)])
        inverse_root = np.where(values > 1e-10, 1 / np.sqrt(np.clip(values, 1e-300, None)), 0)
        adjust[g] = vectors @ np.diag(inverse_root) @ vectors.T
        score = design[rows].T @ adjust[g] @ resid[rows]
        meat += np.outer(score, score)
    bse = np.sqrt(np.diag(bread @ meat @ bread))
    df = np.empty(k)
    for j in range(k):
        columns = []
        for g in labels:
            rows = np.flatnonzero(groups == g)
            columns.append(residual_maker[:, rows] @ adjust[g] @ design[rows] @ bread[:, j])
        gram = np.column_stack(columns).T @ np.column_stack(columns)
        eigen = np.linalg.eigvalsh(gram)
        df[j] = eigen.sum() ** 2 / (eigen**2).sum()
    critical = stats.t.ppf(0.5 + level / 2, df)
    pvalues = 2 * stats.t.sf(np.abs(params / bse), df)
    return params, bse, df, params - critical * bse, params + critical * bse, pvalues


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_unequal_clusters_match_a_brute_force_cr2(seed: int) -> None:
    """Clusters of 1 to 7 rows, shuffled, with a cluster-level and a row-level regressor: SEs,
    df, intervals and p-values equal the definition computed with n × n matrices."""
    rng = np.random.default_rng(seed)
    sizes = rng.permutation(np.array([1, 2, 2, 3, 4, 5, 7, 3, 1, 6, 2, 4]))
    groups = np.repeat(np.arange(sizes.size) * 7 + 3, sizes)  # labels need not be 0..G-1
    n = groups.size
    level_x = rng.normal(size=sizes.size)[np.searchsorted(np.unique(groups), groups)]
    design = np.column_stack([np.ones(n), rng.normal(size=n), level_x])
    y = design @ [0.5, 1.0, -2.0] + rng.normal(size=sizes.size).repeat(sizes) + rng.normal(size=n)
    order = rng.permutation(n)
    y, design, groups = y[order], design[order], groups[order]
    fit = cr2_fit(y, design, groups, level=0.9)
    params, bse, df, lower, upper, pvalues = _brute_force_cr2(y, design, groups, 0.9)
    assert fit.params == pytest.approx(params, rel=1e-10)
    assert fit.bse == pytest.approx(bse, rel=1e-9)
    assert fit.df == pytest.approx(df, rel=1e-8)
    assert fit.lower == pytest.approx(lower, rel=1e-8)
    assert fit.upper == pytest.approx(upper, rel=1e-8)
    assert fit.pvalues == pytest.approx(pvalues, rel=1e-7)
    assert fit.resid == pytest.approx(y - design @ params, abs=1e-10)
