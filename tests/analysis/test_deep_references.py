"""Deep statistics against references computed here with scikit-learn and scipy: robust
Mahalanobis distances (MinCovDet) and Isolation Forest flags in the space the analysis
names, and the correlation intervals over scenario means."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.covariance import MinCovDet
from sklearn.decomposition import PCA
from sklearn.ensemble import IsolationForest

from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.dimensions import correlations
from valuerank.analysis.sampling import SampleBasis
from valuerank.analysis.structure import RANDOM_STATE, outliers
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import strict_json

Z_975 = stats.norm.ppf(0.975)


def _zscores(cells: np.ndarray) -> np.ndarray:
    """Each scenario's column standardised across the models (population sd)."""
    z: np.ndarray = (cells - cells.mean(axis=0)) / cells.std(axis=0)
    return z


def _references(space: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    mcd = MinCovDet(random_state=RANDOM_STATE).fit(space)
    distances = np.sqrt(mcd.mahalanobis(space))
    threshold = math.sqrt(stats.chi2.ppf(0.975, space.shape[1]))
    forest = IsolationForest(random_state=RANDOM_STATE, contamination="auto").fit(space)
    return distances, threshold, -forest.score_samples(space), forest.predict(space) == -1


def test_robust_mahalanobis_in_scenario_space_where_the_covariance_is_estimable() -> None:
    # 12 models × 3 scenarios: more than twice as many models as scenarios.
    rng = np.random.default_rng(4)
    cells = np.clip(3 + rng.normal(0, 0.5, (12, 3)), 1, 5)
    cells[11] = [5.0, 1.0, 5.0]  # far from everyone
    models = tuple(f"m:{k:02d}" for k in range(12))
    found = outliers(models, cells)
    distances, threshold, scores, forest_flags = _references(_zscores(cells))
    mahalanobis = found["mahalanobis"]
    assert mahalanobis["space"] == "scenarios"
    ours = np.array([mahalanobis["distances"][m] for m in models])
    np.testing.assert_allclose(ours, distances, rtol=1e-9)
    assert mahalanobis["threshold"] == pytest.approx(threshold)
    assert mahalanobis["flagged"] == [
        m for m, d in zip(models, distances, strict=True) if d > threshold
    ]
    assert "m:11" in mahalanobis["flagged"]
    forest = found["isolationForest"]
    assert forest["space"] == "scenarios"
    np.testing.assert_allclose([forest["scores"][m] for m in models], scores, rtol=1e-9)
    assert forest["flagged"] == [m for m, f in zip(models, forest_flags, strict=True) if f]


def test_outliers_in_pca_space_when_the_covariance_is_not_estimable() -> None:
    rng = np.random.default_rng(5)
    base = rng.integers(1, 6, 30).astype(float)
    cells = np.clip(base + rng.normal(0, 0.6, (10, 30)), 1, 5)
    cells[9] = 6 - base  # a contrarian
    models = tuple(f"m:{k}" for k in range(10))
    found = outliers(models, cells)
    k = max(1, min(3, (10 - 1) // 3, 30))
    space = PCA(n_components=k, svd_solver="full").fit_transform(_zscores(cells))
    distances, threshold, scores, forest_flags = _references(space)
    assert found["mahalanobis"]["space"] == found["isolationForest"]["space"] == f"pca{k}"
    ours = np.array([found["mahalanobis"]["distances"][m] for m in models])
    np.testing.assert_allclose(ours, distances, rtol=1e-9)
    assert found["mahalanobis"]["flagged"] == [
        m for m, d in zip(models, distances, strict=True) if d > threshold
    ]
    assert found["isolationForest"]["flagged"] == [
        m for m, f in zip(models, forest_flags, strict=True) if f
    ]
    np.testing.assert_allclose(
        [found["isolationForest"]["scores"][m] for m in models], scores, rtol=1e-9
    )


def test_correlations_are_over_scenario_means_with_uncorrected_fisher_z_intervals() -> None:
    """Two samples per scenario: n is the scenarios, r is scipy's over the model's scenario
    means, and a sampled run's interval is the same as a full one's (no correction: the
    samples' noise attenuates r whatever the share run)."""
    spec = SyntheticSpec(
        models=2, scenarios=80, samples=2, seed=12, refusal_rate=0.0, missing_rate=0.0
    )
    full = synthetic_run(spec)
    sampled = synthetic_run(SyntheticSpec(**{**spec.__dict__, "sample": SampleBasis(20, 80, 400)}))
    plain, corrected = correlations(full), correlations(sampled)
    cells = sampled.cell_means()
    for i, model in enumerate(sampled.models):
        for j, dim in enumerate(sampled.dimensions):
            rows = ~np.isnan(cells[i]) & ~np.isnan(sampled.levels[:, j])
            x, y = sampled.levels[rows, j], cells[i, rows]
            ref = stats.pearsonr(x, y)
            ci = ref.confidence_interval()
            entry = corrected[model][dim]
            assert entry["n"] == x.size == 80
            assert entry["pearson"]["r"] == pytest.approx(ref.statistic)
            assert entry["pearson"]["interval"] == pytest.approx((ci.low, ci.high))
            assert entry == plain[model][dim]
            rho, n = float(stats.spearmanr(x, y).statistic), x.size
            se = math.sqrt((1 + rho * rho / 2) / (n - 3))
            assert entry["spearman"]["interval"] == pytest.approx(
                (math.tanh(math.atanh(rho) - Z_975 * se), math.tanh(math.atanh(rho) + Z_975 * se)),
                rel=1e-9,
            )


def test_the_deep_section_states_its_basis_and_applies_no_correction() -> None:
    """Correlations and Bradley–Terry cannot separate the scenarios' spread from the models'
    own variance: a sample's intervals are those of the same data read as a full run."""
    sample = SampleBasis(10, 60, 600)
    data = synthetic_run(SyntheticSpec(models=4, scenarios=60, seed=3, sample=sample))
    deep = strict_json(analyze_deep(data, bootstrap=10))
    assert deep["sample"]["basis"] == "based on 10 % sample: 60 of 600 scenarios"
    assert "SAMPLED_RUN" in {w["code"] for w in deep["warnings"]}
    methods = deep["methodsUsed"]
    assert not methods["correlation"].endswith("_fpc")
    assert not methods["bradleyTerry"].endswith("_fpc")
    assert methods["finitePopulationCorrection"] is None
    assert "unbounded population" in methods["scenarioPopulation"]
    full = strict_json(
        analyze_deep(synthetic_run(SyntheticSpec(models=4, scenarios=60, seed=3)), bootstrap=10)
    )
    assert full["methodsUsed"]["finitePopulationCorrection"] is None
    assert full["methodsUsed"]["bradleyTerry"] == methods["bradleyTerry"]
    assert "SAMPLED_RUN" not in {w["code"] for w in full["warnings"]}
    widths = 0
    for model, fit in deep["bradleyTerry"].items():
        for value, entry in (fit or {"values": {}})["values"].items():
            wide = full["bradleyTerry"][model]["values"][value]
            if entry["separated"] or wide["separated"]:
                continue
            assert (entry["lower"], entry["upper"]) == pytest.approx(
                (wide["lower"], wide["upper"]), rel=1e-9
            )  # same data: same interval, sampled or not
            assert entry["upper"] > entry["lower"]
            widths += 1
    assert widths >= 8
