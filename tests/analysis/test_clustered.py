"""The scenario as the unit: the per-model intervals against statsmodels' cluster-robust OLS
and Cochran's two-stage formula, their width as a run expands, and their coverage."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from valuerank.analysis.clustered import design_factor, two_stage
from valuerank.analysis.data import AnalysisInput, ScenarioInfo
from valuerank.analysis.profile import per_model, win_rate_fit
from valuerank.analysis.sampling import SampleBasis
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

MODEL = "m:a"


def test_without_a_finite_population_the_variance_is_statsmodels_cluster_robust() -> None:
    """Unbalanced (refusals, missing samples), three samples per scenario: the mean's
    interval is statsmodels' OLS y ~ 1 with errors clustered by scenario (t, G − 1 df), and
    the win rate's variance the same fit on the 0/1 verdicts."""
    data = synthetic_run(
        SyntheticSpec(models=3, scenarios=50, samples=3, missing_rate=0.1, refusal_rate=0.1)
    )
    profile = per_model(data)
    rates = win_rate_fit(data)
    for i, model in enumerate(data.models):
        mine = (data.model_idx == i) & data.decided
        fit = sm.OLS(data.decision[mine], np.ones(mine.sum())).fit(
            cov_type="cluster", cov_kwds={"groups": data.scenario_idx[mine]}, use_t=True
        )
        ci = profile[model]["overall"]["confidenceInterval"]
        assert (ci["lower"], ci["upper"]) == pytest.approx(tuple(fit.conf_int()[0]), rel=1e-9)
        assert ci["method"] == "t_scenario_clustered"
        assert profile[model]["scenarios"] == len(np.unique(data.scenario_idx[mine]))
        for j, value in enumerate(data.values):
            status = data.value_status[:, j]
            decisive = (data.model_idx == i) & data.judged & (status != 0)
            if len(np.unique(data.scenario_idx[decisive])) < 2:
                continue
            y = (status[decisive] > 0).astype(float)
            ref = sm.OLS(y, np.ones(y.size)).fit(
                cov_type="cluster", cov_kwds={"groups": data.scenario_idx[decisive]}
            )
            assert rates.variance[i, j] == pytest.approx(ref.bse[0] ** 2, rel=1e-9, abs=1e-15)
            entry = profile[model]["values"][value]
            r, units = y.mean(), y.size
            if 0 < r < 1:
                size = units * r * (1 - r) / ((units - 1) * ref.bse[0] ** 2)
                lo, hi = proportion_confint(r * size, size, method="wilson")
                got = entry["confidenceInterval"]
                assert (got["lower"], got["upper"]) == pytest.approx((lo, hi), rel=1e-9)


def _balanced(means: Sequence[float], spread: Sequence[float]) -> list[tuple[str, float]]:
    return [(f"s{j}", mu + e) for j, mu in enumerate(means) for e in spread]


def test_a_sampled_balanced_run_follows_cochrans_two_stage_formula() -> None:
    """n = 8 of N = 20 scenarios, m = 3: v = fpc²·s₁²/n + (1 − fpc²)·s₂²/(n·m) with s₁² the
    scenario means' variance and s₂² the within-scenario one (Cochran th. 10.2 with the
    first stage's (N − n)/(N − 1)), and Satterthwaite's degrees of freedom."""
    means = [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 3.0, 5.0]
    rows = _balanced(means, (-0.5, 0.0, 1.0))
    a = np.array([[sum(y for s, y in rows if s == f"s{j}") for j in range(8)]])
    b = np.full((1, 8), 3.0)
    cells = np.array([[y for s, y in rows if s == f"s{j}"] for j in range(8)])
    q = ((cells - cells.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)[None, :]
    g = (20 - 8) / (20 - 1)
    fit = two_stage(a, b, q, g)
    s1 = np.var(cells.mean(axis=1), ddof=1)
    s2 = np.mean(np.var(cells, axis=1, ddof=1))
    v_b, v_w = s1 / 8, s2 / 24
    assert fit.variance[0] == pytest.approx(g * v_b + (1 - g) * v_w)
    df = (g * v_b + (1 - g) * v_w) ** 2 / ((g * v_b) ** 2 / 7 + ((1 - g) * v_w) ** 2 / 16)
    assert fit.df[0] == pytest.approx(df)
    assert design_factor(fit)[0] == pytest.approx(np.sqrt((g * v_b + (1 - g) * v_w) / v_b))
    full = two_stage(a, b, q, 0.0)  # every scenario run: the samples' noise alone
    assert full.variance[0] == pytest.approx(v_w) and full.df[0] == pytest.approx(16)


# A finite population of scenarios with known expected decisions and win rates.
N = 40
SAMPLES = 3
CODES = np.arange(1, 6)


def _population(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(latent means, expected decision codes, chances of prioritising) per scenario."""
    latent = rng.normal(3, 0.9, N)
    noise = 0.8
    edges = np.concatenate(([-np.inf], CODES[:-1] + 0.5, [np.inf]))
    chances = np.diff(stats.norm.cdf((edges[None, :] - latent[:, None]) / noise), axis=1)
    return latent, chances @ CODES, stats.norm.cdf(latent - 3)


def _answers(
    rng: np.random.Generator, latent: np.ndarray, prioritise: np.ndarray, samples: int
) -> tuple[np.ndarray, np.ndarray]:
    codes = np.clip(np.floor(latent[:, None] + rng.normal(0, 0.8, (N, samples)) + 0.5), 1, 5)
    verdicts = rng.random((N, samples)) < prioritise[:, None]
    return codes, verdicts


def _run(
    order: np.ndarray, codes: np.ndarray, verdicts: np.ndarray, n: int, total: int | None
) -> AnalysisInput:
    """The run of the first n scenarios of `order` (a nested sample, as `runs expand` grows
    it), every sample of each."""
    picked = order[:n]
    samples = codes.shape[1]
    sid = [f"s{j:03d}" for j in np.repeat(picked, samples)]
    prioritised = verdicts[picked].ravel()
    return AnalysisInput.build(
        models=[MODEL] * len(sid),
        scenario_ids=sid,
        decisions=[int(c) for c in codes[picked].ravel()],
        reasons=[None] * len(sid),
        scenarios={s: ScenarioInfo(name=s) for s in sid},
        prioritized=[["Care"] if p else [] for p in prioritised],
        deprioritized=[[] if p else ["Care"] for p in prioritised],
        judged=[True] * len(sid),
        sample=SampleBasis(100 * n / N, n, total if n < N else n),
    )


def _widths(data: AnalysisInput) -> tuple[float, float]:
    entry = per_model(data)[MODEL]
    mean = entry["overall"]["confidenceInterval"]
    rate = entry["values"]["Care"]["confidenceInterval"]
    return mean["upper"] - mean["lower"], rate["upper"] - rate["lower"]


@pytest.mark.parametrize("samples", [1, SAMPLES])
def test_expanding_a_run_never_widens_its_intervals_in_expectation(samples: int) -> None:
    """A 10 % sample expanded to 25, 50, 75, 90 and 100 % (the same answers plus more
    scenarios), averaged over 100 populations: both intervals narrow at every step — the
    last one too, where the former correction switched to uncorrected intervals and widened
    them up to 3×."""
    rng = np.random.default_rng(20)
    steps = (4, 10, 20, 30, 36, 40)
    widths = np.zeros((100, len(steps), 2))
    for k in range(widths.shape[0]):
        latent, _, prioritise = _population(rng)
        codes, verdicts = _answers(rng, latent, prioritise, samples)
        order = rng.permutation(N)
        for s, n in enumerate(steps):
            widths[k, s] = _widths(_run(order, codes, verdicts, n, N))
    average = widths.mean(axis=0)
    assert np.all(np.diff(average, axis=0) < 0), average
    # One run at 90 % and at 100 %: with repeated samples the full run is narrower nearly
    # always, not only on average.
    if samples > 1:
        assert np.mean(widths[:, -1, 0] <= widths[:, -2, 0]) > 0.8


@pytest.mark.parametrize(("n", "total"), [(10, N), (24, N), (N, N), (10, None)])
def test_intervals_cover_the_populations_figures_at_the_nominal_rate(
    n: int, total: int | None
) -> None:
    """500 runs of n of one population's N scenarios, three samples each: the 95 % intervals
    cover the population's expected mean decision and win rate (over all N scenarios, the
    models' noise averaged out) 92–98 % of the time — the full run too. With the population
    unknown the intervals stay valid, conservatively."""
    rng = np.random.default_rng(n + (total or 0))
    latent, expected, prioritise = _population(rng)
    truth_mean, truth_rate = expected.mean(), prioritise.mean()
    hits = np.zeros((500, 2), dtype=bool)
    for k in range(hits.shape[0]):
        codes, verdicts = _answers(rng, latent, prioritise, SAMPLES)
        entry = per_model(_run(rng.permutation(N), codes, verdicts, n, total))[MODEL]
        mean = entry["overall"]["confidenceInterval"]
        rate = entry["values"]["Care"]["confidenceInterval"]
        hits[k] = (
            mean["lower"] <= truth_mean <= mean["upper"],
            rate["lower"] <= truth_rate <= rate["upper"],
        )
    coverage = hits.mean(axis=0)
    if total is None:
        assert np.all(coverage >= 0.92), coverage
    else:
        assert np.all((coverage >= 0.92) & (coverage <= 0.98)), coverage
