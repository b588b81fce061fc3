"""CR2 with Bell–McCaffrey df, against the cases where it reduces to an independent library:
statsmodels' HC2 (one observation per cluster) and scipy's one-sample t-test on the cluster
means (intercept only, equal cluster sizes: the CR2 variance is the variance of the mean of
the means and the df are G − 1)."""

from __future__ import annotations

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
