"""PCA against numpy's SVD; outliers on planted structure; the jackknife identity."""

from __future__ import annotations

import numpy as np
import pytest

from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.structure import jackknife, outliers, pca, standardise
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import strict_json


def _cells(models: int, scenarios: int, seed: int, contrarian: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(1, 6, scenarios).astype(float)
    cells = np.clip(base + rng.normal(0, 0.6, (models, scenarios)), 1, 5)
    if contrarian:
        cells[-1] = 6 - base
    return cells


def test_pca_matches_the_svd_of_the_standardised_matrix() -> None:
    cells = _cells(6, 40, 1)
    cells[2, 5] = np.nan
    models = tuple(f"m:{k}" for k in range(6))
    scenarios = tuple(f"s{k}" for k in range(40))
    result = pca(models, scenarios, cells)
    z, keep, imputed = standardise(cells)
    assert imputed == 1 and result["imputedCells"] == 1
    centred = z - z.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    ratios = singular**2 / (singular**2).sum()
    assert result["explainedVarianceRatio"] == pytest.approx(
        ratios[: result["components"]].tolist()
    )
    coords = np.array([result["coordinates"][m] for m in models])
    ref = centred @ vt[: result["components"]].T
    np.testing.assert_allclose(np.abs(coords), np.abs(ref), atol=1e-8)  # up to sign
    top = result["scenarioLoadings"]["PC1"][0]
    assert top["scenarioId"] == scenarios[int(keep[np.argmax(np.abs(vt[0]))])]
    # The contrarian sits alone at one end of the first component.
    first = coords[:, 0]
    assert np.argmax(np.abs(first - np.median(first))) == 5


def test_outliers_flag_a_planted_contrarian() -> None:
    cells = _cells(10, 60, 2)
    models = tuple(f"m:{k}" for k in range(10))
    found = outliers(models, cells)
    assert found["mahalanobis"]["space"].startswith("pca")
    assert "m:9" in found["mahalanobis"]["flagged"]
    assert "m:9" in found["jackknife"]["flagged"]
    assert found["jackknife"]["flagged"] == ["m:9"]
    assert found["isolationForest"]["scores"]["m:9"] == max(
        found["isolationForest"]["scores"].values()
    )


def test_jackknife_influence_is_the_rms_shift_of_the_consensus() -> None:
    cells = _cells(5, 20, 3)
    models = tuple(f"m:{k}" for k in range(5))
    result = jackknife(models, cells)
    consensus = cells.mean(axis=0)
    for i, model in enumerate(models):
        without = np.delete(cells, i, axis=0).mean(axis=0)
        expected = np.sqrt(((without - consensus) ** 2).mean())
        assert result["influence"][model] == pytest.approx(expected)


def test_few_models_say_why_nothing_is_computed() -> None:
    cells = _cells(3, 10, 4)
    found = outliers(("a:1", "a:2", "a:3"), cells)
    assert found["mahalanobis"]["available"] is False
    assert "at least 4 models" in found["mahalanobis"]["reason"]
    assert found["jackknife"]["flagged"] == []
    assert pca(("a:1",), ("s",), np.array([[3.0]]))["available"] is False


def test_deep_analysis_is_strict_json_with_insights() -> None:
    data = synthetic_run(SyntheticSpec(models=6, scenarios=80, seed=5))
    deep = strict_json(analyze_deep(data, bootstrap=20))
    assert set(deep) >= {
        "pca", "outliers", "correlations", "agreement", "bradleyTerry",
        "mostContestedScenarios", "insights", "narrative", "methodsUsed", "warnings",
    }  # fmt: skip
    assert deep["agreement"]["krippendorffAlpha"]["level"] == "ordinal"
    pair = next(iter(deep["agreement"]["pairwise"].values()))
    assert {"spearmanRho", "weightedKappa", "model1", "model2"} <= set(pair)
    assert deep["insights"] and all(isinstance(s, str) for s in deep["insights"])
