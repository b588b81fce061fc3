"""Where models stand relative to each other: PCA over scenarios and outlier detection.

The model × scenario matrix of mean decisions is standardised per scenario (z-scores across
the models that decided it; scenarios with no spread carry no information about differences
and are left out; a missing cell is imputed with the scenario's mean, i.e. 0 after
standardising, and counted). PCA (scikit-learn) gives each model's coordinates, the explained
variance and the scenarios that load most on each component.

Outliers, three ways:
- robust Mahalanobis distance (Minimum Covariance Determinant, scikit-learn) — in the
  scenario space only where the covariance is estimable (more than twice as many models as
  scenarios, rare); otherwise in the space of the first k principal components with
  n > 3k. The space used is named. Flagged: squared distance above the χ²(k) 97.5 % quantile.
- Isolation Forest (scikit-learn, contamination "auto") in the same space.
- Jackknife influence on the consensus: the consensus profile is the mean decision of all
  models per scenario; a model's influence is the root-mean-square change of that profile
  when the model is left out. Flagged: modified z-score of the influence above 3.5.
"""

from __future__ import annotations

import warnings as pywarnings
from typing import Any

import numpy as np
from scipy import stats

from valuerank.analysis.agreement import OUTLIER_Z, modified_z
from valuerank.analysis.data import BoolArray, FloatArray, IntArray

# scikit-learn is imported by the functions that use it: it takes seconds of CPU to import,
# and every analysis job loads this module, while only the deep analysis calls them.

MAX_COMPONENTS = 5
TOP_LOADINGS = 10
MIN_MODELS = 4
MAHALANOBIS_QUANTILE = 0.975
RANDOM_STATE = 0


def standardise(cells: FloatArray) -> tuple[FloatArray, IntArray, int]:
    """(z matrix over the informative scenarios, their column indices, cells imputed)."""
    present = ~np.isnan(cells)
    counts = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nansum(cells, axis=0) / counts
        centred = np.where(present, cells - means, 0.0)
        sd = np.sqrt((centred**2).sum(axis=0) / counts)
    keep = np.flatnonzero((counts >= 2) & (sd > 0))
    z = centred[:, keep] / sd[keep]
    imputed = int((~present[:, keep]).sum())
    return z, keep.astype(np.intp), imputed


def deciding(models: tuple[str, ...], cells: FloatArray) -> tuple[tuple[str, ...], FloatArray]:
    """The models that decided at least one scenario, and their rows: a model that never
    decided has no position to place (it is listed as excluded)."""
    rows: BoolArray = np.asarray(~np.isnan(cells).all(axis=1), dtype=bool)
    kept = [m for k, m in enumerate(models) if bool(rows[k])]
    return tuple(kept), cells[rows]


def pca(models: tuple[str, ...], scenarios: tuple[str, ...], cells: FloatArray) -> dict[str, Any]:
    from sklearn.decomposition import PCA  # when used: see the imports

    everyone = models
    models, cells = deciding(models, cells)
    excluded = [m for m in everyone if m not in models]
    z, keep, imputed = standardise(cells)
    if len(models) < 2 or z.shape[1] == 0:
        return {
            "available": False,
            "reason": "needs two models and a scenario on which they differ",
            "excludedModels": excluded,
        }
    k = min(len(models) - 1, z.shape[1], MAX_COMPONENTS)
    model = PCA(n_components=k, svd_solver="full")
    coords = model.fit_transform(z)
    loadings = {}
    for c in range(k):
        component = model.components_[c]
        top = np.argsort(-np.abs(component), kind="stable")[:TOP_LOADINGS]
        loadings[f"PC{c + 1}"] = [
            {"scenarioId": scenarios[int(keep[t])], "loading": float(component[t])}
            for t in top.tolist()
        ]
    return {
        "available": True,
        "standardised": True,
        "components": k,
        "explainedVarianceRatio": model.explained_variance_ratio_.tolist(),
        "coordinates": {m: coords[i].tolist() for i, m in enumerate(models)},
        "scenarioLoadings": loadings,
        "scenariosUsed": int(z.shape[1]),
        "imputedCells": imputed,
        "excludedModels": excluded,
    }


def _space(z: FloatArray) -> tuple[FloatArray, str]:
    """The matrix outliers are looked for in, and its name."""
    from sklearn.decomposition import PCA  # when used: see the imports

    n, p = z.shape
    if n > 2 * p:
        return z, "scenarios"
    k = max(1, min(3, (n - 1) // 3, p))
    coords = PCA(n_components=k, svd_solver="full").fit_transform(z)
    return coords, f"pca{k}"


def outliers(models: tuple[str, ...], cells: FloatArray) -> dict[str, Any]:
    from sklearn.ensemble import IsolationForest  # when used: see the imports

    everyone = models
    models, cells = deciding(models, cells)
    z, _, _ = standardise(cells)
    result: dict[str, Any] = {
        "jackknife": jackknife(models, cells),
        "excludedModels": [m for m in everyone if m not in models],
    }
    if len(models) < MIN_MODELS or z.shape[1] == 0:
        reason = f"needs at least {MIN_MODELS} models and a scenario on which they differ"
        result["mahalanobis"] = {"available": False, "reason": reason}
        result["isolationForest"] = {"available": False, "reason": reason}
        return result
    space, name = _space(z)
    result["mahalanobis"] = _mahalanobis(models, space, name)
    forest = IsolationForest(random_state=RANDOM_STATE, contamination="auto").fit(space)
    scores = -forest.score_samples(space)
    flags = forest.predict(space) == -1
    result["isolationForest"] = {
        "available": True,
        "space": name,
        "scores": {m: float(scores[i]) for i, m in enumerate(models)},
        "flagged": [m for i, m in enumerate(models) if flags[i]],
    }
    return result


def _mahalanobis(models: tuple[str, ...], space: FloatArray, name: str) -> dict[str, Any]:
    from sklearn.covariance import MinCovDet  # when used: see the imports

    k = space.shape[1]
    try:
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore")  # MCD warns on near-singular covariances
            mcd = MinCovDet(random_state=RANDOM_STATE).fit(space)
            squared = mcd.mahalanobis(space)
    except (ValueError, np.linalg.LinAlgError) as exc:
        return {"available": False, "space": name, "reason": f"covariance not estimable: {exc}"}
    if not np.all(np.isfinite(squared)):
        return {"available": False, "space": name, "reason": "covariance not estimable"}
    threshold = float(stats.chi2.ppf(MAHALANOBIS_QUANTILE, k))
    return {
        "available": True,
        "space": name,
        "method": "minimum_covariance_determinant",
        "distances": {m: float(np.sqrt(squared[i])) for i, m in enumerate(models)},
        "threshold": float(np.sqrt(threshold)),
        "flagged": [m for i, m in enumerate(models) if squared[i] > threshold],
    }


def jackknife(models: tuple[str, ...], cells: FloatArray) -> dict[str, Any]:
    present = ~np.isnan(cells)
    counts = present.sum(axis=0)
    usable = counts >= 2
    if len(models) < 2 or not usable.any():
        return {"available": False, "reason": "needs two models deciding a common scenario"}
    sums = np.nansum(cells, axis=0)
    consensus = sums[usable] / counts[usable]
    x = cells[:, usable]
    here = present[:, usable]
    with np.errstate(invalid="ignore", divide="ignore"):
        left_out = np.where(
            here, (sums[usable] - np.nan_to_num(x)) / (counts[usable] - 1), consensus
        )
    influence = np.sqrt(((left_out - consensus) ** 2).mean(axis=1))
    flagged: list[str] = []
    if len(models) >= MIN_MODELS:
        z = modified_z(influence)
        flagged = [m for i, m in enumerate(models) if z[i] > OUTLIER_Z]
    return {
        "available": True,
        "influence": {m: float(influence[i]) for i, m in enumerate(models)},
        "threshold": {"modifiedZ": OUTLIER_Z},
        "flagged": flagged,
    }
