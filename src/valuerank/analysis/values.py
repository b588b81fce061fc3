"""Bradley–Terry strengths of values per model, with separation reported, not hidden.

Each judged transcript where the consensus prioritised value A and deprioritised value B is
one "A beats B" comparison (every prioritised × deprioritised pair).

Separation. The maximum-likelihood strengths exist only where the "beats" graph is strongly
connected: a value that never loses (or never wins) has an infinite MLE, and a regularised
fit would report a number set by the arbitrary regularisation. So the strengths are fitted
(choix's Luce spectral ranking, no regularisation; log scale, mean 0 over the fitted values)
on the *identified core*: the largest strongly connected set of values (ties: the one with
more comparisons), on the comparisons among its values. Every other value is `separated`:
its strength and interval are null, and `direction` says where it sits — "above" when it
beats the core (through some chain) and the core never beats it, "below" for the reverse,
null when its place is not determined (disconnected, or no core at all). A run with
separated values carries BRADLEY_TERRY_SEPARATION.

Intervals. The sampling unit is the scenario (a scenario's samples and a transcript's
several pairs are not independent comparisons): the intervals are Wald intervals with the
cluster-robust (sandwich) covariance over scenarios, CRV1 with the small-sample factor
G/(G−1)·(N−1)/(N−k) — what statsmodels' GLM gives with `cov_type="cluster"` (the tests
check it). A percentile bootstrap over scenarios was used before: with a value that never
loses every resample is separated too, and the intervals collapsed onto the estimate. On
simulated runs whose three samples per scenario repeat one comparison, these intervals
cover the true strengths 95.5 % of the time (intervals counting the samples as independent
comparisons: 73 %; tests/analysis/test_values.py).
No finite-population correction: the strengths are fitted on judgments pooled over every
scenario, so the scenarios' spread cannot be told apart from the judgments' own variance, which
persists when every scenario is run. The scenarios count as a sample of an unbounded population
(conservative): expanding a run never widens these intervals in expectation (a sampled run's
standard errors times fpc made its expansion to 100 % widen them, up to 3×).
Fewer than two scenarios with comparisons in the core, or scenarios that each balance out on
their own (a zero standard error): no interval (BRADLEY_TERRY_NO_INTERVAL).
"""

from __future__ import annotations

from typing import Any

import choix
import numpy as np
from scipy.sparse.csgraph import connected_components, shortest_path

from valuerank.analysis.data import AnalysisInput, BoolArray, FloatArray, IntArray
from valuerank.analysis.intervals import z_of
from valuerank.analysis.profile import verdict_warnings
from valuerank.analysis.warning import AnalysisWarning

BOOTSTRAP = 200  # kept for callers that pass `bootstrap`: the intervals are analytic now
SEED = 20240611
METHOD = "choix_ilsr_mle_on_identified_core_wald_cluster_robust_crv1_over_scenarios"


def comparison_tensor(status: Any) -> FloatArray:
    """(transcripts, values, values): entry [t, a, b] = 1 when transcript t prioritised a
    and deprioritised b."""
    winners = (status > 0).astype(float)
    losers = (status < 0).astype(float)
    tensor: FloatArray = np.einsum("ta,tb->tab", winners, losers)
    return tensor


def identified_core(comparisons: FloatArray) -> IntArray:
    """Indices of the largest strongly connected set of values (ties: more comparisons
    inside, then the lowest index); empty when no two values beat each other both ways."""
    _, labels = connected_components(comparisons > 0, directed=True, connection="strong")
    best: tuple[int, float, int] | None = None
    for label in np.unique(labels).tolist():
        members = np.flatnonzero(labels == label)
        inside = float(comparisons[np.ix_(members, members)].sum())
        key = (members.size, inside, -int(members[0]))
        if best is None or key > best:
            best = key
            core = members
    if best is None or best[0] < 2:
        return np.array([], dtype=np.intp)
    return core.astype(np.intp)


def directions(comparisons: FloatArray, core: IntArray) -> list[str | None]:
    """Per value: None inside the core, else "above"/"below"/None (see the module doc)."""
    n = comparisons.shape[0]
    if core.size == 0:
        # No identified scale: only a value that never lost (never won) has a side.
        won, lost = comparisons.sum(axis=1) > 0, comparisons.sum(axis=0) > 0
        return ["above" if w and not lo else "below" if lo and not w else None
                for w, lo in zip(won, lost, strict=True)]  # fmt: skip
    reach: BoolArray = np.isfinite(shortest_path(comparisons > 0, directed=True, unweighted=True))
    to_core: list[bool] = np.asarray(reach[:, core].any(axis=1)).tolist()
    from_core: list[bool] = np.asarray(reach[core].any(axis=0)).tolist()
    inside = set(core.tolist())
    found: list[str | None] = []
    for v in range(n):
        if v in inside or to_core[v] == from_core[v]:
            found.append(None)
        else:
            found.append("above" if to_core[v] else "below")
    return found


def fit(comparisons: FloatArray) -> FloatArray | None:
    """The MLE (mean 0) of a strongly connected win-count matrix; None when it fails."""
    try:
        params = choix.ilsr_pairwise_dense(comparisons, alpha=0.0, max_iter=1000, tol=1e-10)
    except (RuntimeError, ValueError, FloatingPointError):
        return None
    if not np.all(np.isfinite(params)):
        return None
    centred: FloatArray = params - params.mean()
    return centred


def cluster_covariance(strengths: FloatArray, per_scenario: FloatArray) -> FloatArray | None:
    """CRV1 sandwich covariance of the centred strengths, clustered by scenario
    (`per_scenario`: (scenarios, k, k) win counts); None with fewer than two scenarios."""
    clusters = per_scenario[per_scenario.sum(axis=(1, 2)) > 0]
    g, k = clusters.shape[0], strengths.size
    total = clusters.sum(axis=0)
    n_obs = float(total.sum())
    if g < 2 or n_obs <= k - 1:
        return None
    p = 1 / (1 + np.exp(strengths[None, :] - strengths[:, None]))  # p[a, b] = P(a beats b)
    # Score of value a in a scenario: wins not expected minus losses not expected.
    scores = (clusters * (1 - p)).sum(axis=2) - (clusters.transpose(0, 2, 1) * p).sum(axis=2)
    pair_info = (total + total.T) * p * p.T
    hessian = np.diag(pair_info.sum(axis=1)) - pair_info
    meat = scores.T @ scores
    # Reference coding (value 0 fixed), as a GLM would fit it, then centred.
    bread = np.linalg.inv(hessian[1:, 1:])
    ref = np.zeros((k, k))
    ref[1:, 1:] = bread @ meat[1:, 1:] @ bread
    ref *= g / (g - 1) * (n_obs - 1) / (n_obs - (k - 1))
    centre = np.eye(k) - 1 / k
    covariance: FloatArray = centre @ ref @ centre
    return covariance


def per_scenario(scenario_idx: Any, per_transcript: FloatArray) -> FloatArray:
    """Win matrices summed per scenario: (scenarios present, values, values)."""
    order = np.argsort(scenario_idx, kind="stable")
    ordered = scenario_idx[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    summed: FloatArray = np.add.reduceat(per_transcript[order], starts, axis=0)
    return summed


def _model_fit(
    names: list[str], total: FloatArray, sub: FloatArray
) -> tuple[dict[str, Any], list[str]]:
    """One model's entry over its involved values, and the problems met ("separated",
    "no_interval")."""
    core = identified_core(total)
    side = directions(total, core)
    strengths = fit(total[np.ix_(core, core)]) if core.size else None
    covariance = None
    if strengths is not None:
        covariance = cluster_covariance(strengths, sub[:, core][:, :, core])
    se = None if covariance is None else np.sqrt(np.clip(np.diag(covariance), 0, None))
    if se is not None and np.any(se < 1e-9):
        # Every scenario balanced on its own (scores all 0): the sandwich has no spread to
        # measure, and a zero-width interval would claim certainty.
        se, covariance = None, None
    z = z_of(0.95)
    position = {int(v): n for n, v in enumerate(core.tolist())}
    values: dict[str, Any] = {}
    for v, name in enumerate(names):
        n = position.get(v)
        s = None if strengths is None or n is None else float(strengths[n])
        e = None if se is None or n is None else float(se[n])
        values[name] = {
            "strength": s,
            "lower": None if e is None or s is None else s - z * e,
            "upper": None if e is None or s is None else s + z * e,
            "standardError": e,
            "separated": s is None,
            "direction": side[v],
            "wins": int(total[v].sum()),
            "losses": int(total[:, v].sum()),
        }
    problems = []
    if any(e["separated"] for e in values.values()):
        problems.append("separated")
    if strengths is not None and covariance is None:
        problems.append("no_interval")
    return values, problems


def _warning(model: str, problem: str, values: dict[str, Any]) -> AnalysisWarning:
    if problem == "separated":
        listed = ", ".join(
            f"{v} ({e['direction'] or 'unordered'})" for v, e in values.items() if e["separated"]
        )
        return AnalysisWarning(
            "BRADLEY_TERRY_SEPARATION",
            f"Bradley–Terry strengths of {model} are not identified for: {listed}: they never "
            "lost (above), never won (below) or are not linked both ways to the other values, "
            "so their maximum-likelihood strength is infinite or undetermined",
            "Their strength and interval are null and `direction` gives their side; judge more "
            "scenarios to see them lose (or win) at least once",
        )
    return AnalysisWarning(
        "BRADLEY_TERRY_NO_INTERVAL",
        f"Bradley–Terry intervals of {model} need comparisons from at least two scenarios "
        "that do not each balance out on their own",
        "The strengths are shown without intervals; judge more scenarios",
    )


def bradley_terry(
    data: AnalysisInput, *, bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """Per model: each value's strength and 95 % interval (null when not identified; the
    model is None when it has no comparison between two values). `bootstrap` and `seed`
    are accepted for callers and unused: the intervals are analytic."""
    del bootstrap, seed
    warnings: list[AnalysisWarning] = []
    result: dict[str, Any] = {}
    if not data.values:
        return result, warnings
    tensor = comparison_tensor(data.value_status)
    warnings += verdict_warnings(data)
    for i, model in enumerate(data.models):
        rows = np.flatnonzero((data.model_idx == i) & data.judged)
        per_transcript = tensor[rows]
        total = per_transcript.sum(axis=0)
        involved = np.flatnonzero((total.sum(axis=0) + total.sum(axis=1)) > 0)
        if involved.size < 2:
            result[model] = None
            continue
        sub = per_scenario(data.scenario_idx[rows], per_transcript[:, involved][:, :, involved])
        names = [data.values[v] for v in involved.tolist()]
        values, problems = _model_fit(names, total[np.ix_(involved, involved)], sub)
        warnings += [_warning(model, problem, values) for problem in problems]
        result[model] = {
            "comparisons": int(total.sum()),
            "scenarios": int(sub.shape[0]),
            "regularised": False,  # kept for readers of older results: never regularised now
            "identified": sum(not e["separated"] for e in values.values()),
            "separatedValues": sum(e["separated"] for e in values.values()),
            "bootstrapDraws": None,
            "values": values,
        }
    return result, warnings
