"""How far the judges agree, per value, and with people (`analysis.judgeAgreement`; pure).

Every reading puts a value in one of three nominal categories (prioritised, deprioritised,
neither; analysis/readings.py). Per value of the rubric:

- Krippendorff's α (nominal) between the model judges: units = transcripts, coders =
  judges, missing readings allowed; computed from the coincidence matrix.
- Fleiss' κ between the model judges when every transcript read by two or more of them was
  read by the same number (otherwise null, with the reason).
- Each judge against the judges' consensus (the transcript's stored consensus, which the
  judge itself voted in): share of agreement and Cohen's κ; and, where people read
  transcripts, each judge against each person's reading over the transcripts both read.

Every statistic is a function of tables summed over transcripts, so they are summed per
scenario once and a bootstrap draw is a weighted sum of the scenarios' tables: the scenario is
the resampled unit (clustered), `DRAWS` draws from a fixed seed (deterministic), percentile
95 % intervals. A statistic that is undefined (a single category, no pairable transcript) is
null, and so is an interval no draw defines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from valuerank.analysis.readings import CATEGORIES, UNREAD, JudgeReadings

FloatArray = npt.NDArray[np.float64]
Stat = Callable[[FloatArray], FloatArray]  # summed tables (draws, k) -> statistic (draws,)
Fill = Callable[[FloatArray, FloatArray], None]  # puts (point, draws) into an entry

SEED = 20240613
DRAWS = 1000
CHUNK = 250  # bootstrap draws per matrix product (bounds memory on runs of many scenarios)
LEVEL = 0.95
K = len(CATEGORIES)

METHOD = (
    "per value, three nominal categories (prioritised / deprioritised / neither); "
    "Krippendorff's alpha (nominal, coincidence matrix, missing readings allowed) between "
    "model judges; Fleiss' kappa when every transcript was read by the same number of "
    "judges; each judge against the consensus and against people: share of agreement and "
    f"Cohen's kappa (unweighted); 95% percentile intervals from {DRAWS} bootstrap draws "
    f"resampling scenarios (seed {SEED})"
)


# --- statistics of summed tables (vectorised over a leading axis of draws) --------------


def alpha_of(coincidence: FloatArray) -> FloatArray:
    """Nominal α from coincidence matrices (…, K*K): 1 − (n−1)(n − Σo_cc) / (n² − Σn_c²)."""
    o = coincidence.reshape(*coincidence.shape[:-1], K, K)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    expected = n * n - (n_c * n_c).sum(axis=-1)
    observed = n - np.trace(o, axis1=-2, axis2=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where((expected > 0) & (n > 1), alpha, np.nan)


def fleiss_of(sums: FloatArray) -> FloatArray:
    """Fleiss' κ from [units, Σ_i m, Σ_i P_i, Σ_i n_ic (K)] per draw: (P̄ − P̄e) / (1 − P̄e)."""
    units, readings, agreement = sums[..., 0], sums[..., 1], sums[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_bar = agreement / units
        p_c = sums[..., 3:] / readings[..., None]
        p_e = (p_c * p_c).sum(axis=-1)
        kappa = (p_bar - p_e) / (1.0 - p_e)
    return np.where((units > 0) & (p_e < 1.0), kappa, np.nan)


def kappa_of(table: FloatArray) -> FloatArray:
    """Cohen's κ from contingency tables (…, K*K): (p_o − p_e) / (1 − p_e)."""
    t = table.reshape(*table.shape[:-1], K, K)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(t, axis1=-2, axis2=-1) / n
        p_e = (t.sum(axis=-1) * t.sum(axis=-2)).sum(axis=-1) / (n * n)
        kappa = (p_o - p_e) / (1.0 - p_e)
    return np.where((n > 0) & (p_e < 1.0), kappa, np.nan)


def share_of(table: FloatArray) -> FloatArray:
    """The share of pairs in agreement (the diagonal) of contingency tables (…, K*K)."""
    t = table.reshape(*table.shape[:-1], K, K)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.trace(t, axis1=-2, axis2=-1) / n, np.nan)


# --- per-transcript tables, summed per scenario ------------------------------------------


def category_counts(reading: npt.NDArray[np.int8]) -> FloatArray:
    """(units, coders) categories (UNREAD missing) -> (units, K) counts per category."""
    return np.stack([(reading == c).sum(axis=1) for c in range(K)], axis=1).astype(float)


def coincidences(counts: FloatArray, cluster: npt.NDArray[np.intp], clusters: int) -> FloatArray:
    """(clusters, K*K): each scenario's coincidence matrix, Σ_u (n_uc·n_uk − δ_ck·n_uc) /
    (m_u − 1) over its transcripts read twice or more (the others are not pairable)."""
    m = counts.sum(axis=1)
    weight = np.where(m >= 2, 1.0 / np.maximum(m - 1.0, 1.0), 0.0)
    columns = []
    for c in range(K):
        for k in range(K):
            term = weight * counts[:, c] * (counts[:, k] - (1.0 if c == k else 0.0))
            columns.append(np.bincount(cluster, weights=term, minlength=clusters))
    return np.stack(columns, axis=1)


def fleiss_sums(counts: FloatArray, cluster: npt.NDArray[np.intp], clusters: int) -> FloatArray:
    """(clusters, 3+K): each scenario's [units, Σ m_i, Σ P_i, Σ n_ic…] over its transcripts
    read twice or more."""
    m = counts.sum(axis=1)
    keep = m >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        p_i = np.where(keep, ((counts * counts).sum(axis=1) - m) / (m * (m - 1)), 0.0)
    parts = [keep.astype(float), np.where(keep, m, 0.0), p_i]
    parts += [counts[:, c] * keep for c in range(K)]
    return np.stack([np.bincount(cluster, weights=x, minlength=clusters) for x in parts], axis=1)


def contingency(
    a: npt.NDArray[np.int8], b: npt.NDArray[np.int8], cluster: npt.NDArray[np.intp], clusters: int
) -> FloatArray:
    """(clusters, K*K): per scenario, how many transcripts two readers put in each pair of
    categories (where both read). Summed at once: a run's transcripts never become rows."""
    both = (a != UNREAD) & (b != UNREAD)
    index = cluster[both] * (K * K) + a[both].astype(np.intp) * K + b[both].astype(np.intp)
    counts = np.bincount(index, minlength=clusters * K * K)
    return counts.reshape(clusters, K * K).astype(float)


def _read(coded: npt.NDArray[np.int8]) -> npt.NDArray[np.bool_]:
    """(units, values) -> (units,): the reader read the transcript."""
    read: npt.NDArray[np.bool_] = (coded != UNREAD).any(axis=-1)
    return read


# --- the bootstrap: every statistic registered, then computed on the same draws ----------


@dataclass
class _Bootstrap:
    """Tables per scenario, each with the statistics computed from it; `run` evaluates every
    statistic on the whole run and on each draw (draws of the same scenarios for all)."""

    clusters: int
    tables: list[FloatArray] = field(default_factory=list)
    stats: list[tuple[int, Stat]] = field(default_factory=list)  # (table, function)

    def add(self, table: FloatArray, *functions: Stat) -> list[int]:
        """Register `table` (clusters, k) and a statistic of it per function: their indices."""
        self.tables.append(table)
        first = len(self.stats)
        self.stats += [(len(self.tables) - 1, f) for f in functions]
        return list(range(first, len(self.stats)))

    def _evaluate(self, summed: FloatArray, found: FloatArray) -> None:
        """Every statistic of `summed` (rows, columns of every table) into `found` (rows,
        stats): one call per function and table width, over all its tables at once."""
        starts = np.cumsum([0] + [t.shape[1] for t in self.tables])
        groups: dict[tuple[Stat, int], list[int]] = {}
        for k, (t, f) in enumerate(self.stats):
            groups.setdefault((f, self.tables[t].shape[1]), []).append(k)
        for (f, width), ks in groups.items():
            index = np.array([starts[self.stats[k][0]] for k in ks])[:, None] + np.arange(width)
            found[:, ks] = f(summed[:, index])

    def run(self, draws: int, seed: int) -> tuple[FloatArray, FloatArray]:
        """(point estimates, (draws, stats) bootstrap estimates)."""
        matrix = np.concatenate(self.tables, axis=1)
        point = np.full((1, len(self.stats)), np.nan)
        self._evaluate(matrix.sum(axis=0)[None], point)
        rng = np.random.default_rng(seed)
        found = np.full((draws, len(self.stats)), np.nan)
        uniform = np.full(self.clusters, 1.0 / self.clusters)
        for start in range(0, draws, CHUNK):
            size = min(CHUNK, draws - start)
            weights = rng.multinomial(self.clusters, uniform, size=size).astype(float)
            self._evaluate(weights @ matrix, found[start : start + size])
        return point[0], found


def _interval(draws: FloatArray) -> list[float] | None:
    defined = draws[np.isfinite(draws)]
    if defined.size == 0:
        return None
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return [float(low), float(high)]


def _figure(point: FloatArray, boot: FloatArray, k: int) -> dict[str, Any]:
    value = point[k]
    return {
        "value": None if not np.isfinite(value) else float(value),
        "ci95": None if not np.isfinite(value) else _interval(boot[:, k]),
    }


# --- the section ---------------------------------------------------------------------------


def judge_agreement(
    readings: JudgeReadings | None, *, draws: int = DRAWS, seed: int = SEED
) -> dict[str, Any] | None:
    """`analysis.judgeAgreement` (docs/analysis.md), or None when nobody read a transcript."""
    if readings is None or not readings.readers:
        return None
    models, people = readings.models, readings.people
    reading = readings.reading
    clusters = int(readings.unit_cluster.max()) + 1 if len(readings.unit_cluster) else 0
    boot = _Bootstrap(clusters)
    pending: list[Fill] = []
    out: dict[str, Any] = {
        "judges": [readings.readers[j] for j in models],
        "people": [readings.readers[p] for p in people],
        "transcripts": len(readings.unit_cluster),
        "scenarios": clusters,
        "values": {},
        "withConsensus": {},
        "withPeople": {},
        "bootstrap": {"draws": draws, "seed": seed, "resampled": "scenario", "level": LEVEL},
    }
    for v, value in enumerate(readings.values):
        coded = reading[:, models, v]
        out["values"][value] = _value_entry(boot, pending, coded, readings.unit_cluster)
    for j in models:
        name = readings.readers[j]
        out["withConsensus"][name] = _versus(boot, pending, readings, j, None)
        if people:
            out["withPeople"][name] = _versus(boot, pending, readings, j, people)
    point, found = boot.run(draws, seed)
    for fill in pending:
        fill(point, found)
    return out


def _value_entry(
    boot: _Bootstrap,
    pending: list[Fill],
    coded: npt.NDArray[np.int8],
    cluster: npt.NDArray[np.intp],
) -> dict[str, Any]:
    """α and Fleiss' κ between the model judges on one value, filled once the bootstrap ran."""
    counts = category_counts(coded)
    read_by = counts.sum(axis=1)
    pairable = read_by >= 2
    entry: dict[str, Any] = {
        "readings": {c: int(counts[:, i].sum()) for i, c in enumerate(CATEGORIES)},
        "units": int(pairable.sum()),
    }
    clusters = boot.clusters
    [a] = boot.add(coincidences(counts, cluster, clusters), alpha_of)
    raters = np.unique(read_by[pairable])
    f = boot.add(fleiss_sums(counts, cluster, clusters), fleiss_of)[0] if len(raters) == 1 else None

    def fill(point: FloatArray, found: FloatArray) -> None:
        entry["alpha"] = {**_figure(point, found, a), "level": "nominal"}
        if f is not None:
            entry["fleissKappa"] = {**_figure(point, found, f), "raters": int(raters[0])}
        else:
            entry["fleissKappa"] = {"value": None, "ci95": None, "reason": _why_no_fleiss(raters)}

    pending.append(fill)
    return entry


def _why_no_fleiss(raters: Any) -> str:
    if len(raters) == 0:
        return "no transcript was read by two judges or more"
    return (
        f"transcripts were read by different numbers of judges ({int(raters.min())} to "
        f"{int(raters.max())}); Fleiss' kappa needs the same number for every transcript "
        "(Krippendorff's alpha does not)"
    )


def _pair_entry(boot: _Bootstrap, pending: list[Fill], table: FloatArray) -> dict[str, Any]:
    """{n, share, kappa} of contingency tables per scenario, filled once the bootstrap ran."""
    entry: dict[str, Any] = {"n": int(table.sum())}
    s, k = boot.add(table, share_of, kappa_of)

    def fill(point: FloatArray, found: FloatArray) -> None:
        entry["share"] = _figure(point, found, s)
        entry["kappa"] = _figure(point, found, k)

    pending.append(fill)
    return entry


def _versus(
    boot: _Bootstrap,
    pending: list[Fill],
    readings: JudgeReadings,
    j: int,
    others: list[int] | None,
) -> dict[str, Any]:
    """Judge j against the consensus (`others` None) or against each of `others` (people:
    each (person, transcript) pair counts once), overall and per value."""
    cluster, clusters = readings.unit_cluster, boot.clusters
    mine = readings.reading[:, j, :]
    theirs = [readings.consensus] if others is None else [readings.reading[:, p, :] for p in others]
    per_value = [
        sum(
            (contingency(mine[:, v], other[:, v], cluster, clusters) for other in theirs),
            np.zeros((clusters, K * K)),
        )
        for v in range(len(readings.values))
    ]
    overall = sum(per_value, np.zeros((clusters, K * K)))
    entry = _pair_entry(boot, pending, overall)
    read_by_others = np.any([_read(other) for other in theirs], axis=0)
    entry["transcripts"] = int((_read(mine) & read_by_others).sum())
    pairs = zip(readings.values, per_value, strict=True)
    entry["values"] = {value: _pair_entry(boot, pending, table) for value, table in pairs}
    return entry
