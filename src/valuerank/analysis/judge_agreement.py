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


def _per_cluster(rows: FloatArray, cluster: npt.NDArray[np.intp], clusters: int) -> FloatArray:
    out = np.zeros((clusters, rows.shape[1]))
    np.add.at(out, cluster, rows)
    return out


def category_counts(reading: npt.NDArray[np.int8]) -> FloatArray:
    """(units, coders) categories (UNREAD missing) -> (units, K) counts per category."""
    return np.stack([(reading == c).sum(axis=1) for c in range(K)], axis=1).astype(float)


def coincidences(counts: FloatArray) -> FloatArray:
    """Each unit's contribution to the coincidence matrix, (units, K*K); units with fewer
    than two readings contribute nothing (they are not pairable)."""
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - np.eye(K)[None] * counts[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = np.where((m >= 2)[:, None, None], pairs / (m - 1)[:, None, None], 0.0)
    return rows.reshape(len(counts), K * K)


def fleiss_rows(counts: FloatArray) -> FloatArray:
    """Each unit's [1, m, P_i, n_ic…] (units read by fewer than two: zeros)."""
    m = counts.sum(axis=1)
    keep = m >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        p_i = np.where(keep, ((counts * counts).sum(axis=1) - m) / (m * (m - 1)), 0.0)
    rows = np.column_stack([keep, np.where(keep, m, 0), p_i, counts * keep[:, None]])
    return rows.astype(float)


def contingency(a: npt.NDArray[np.int8], b: npt.NDArray[np.int8]) -> FloatArray:
    """(units,) categories of two readers -> (units, K*K) one-hot pairs where both read."""
    both = (a != UNREAD) & (b != UNREAD)
    rows = np.zeros((len(a), K * K))
    index = np.where(both, a.astype(np.intp) * K + b.astype(np.intp), 0)
    rows[np.arange(len(a)), index] = both
    return rows


# --- the bootstrap: every statistic registered, then computed on the same draws ----------


@dataclass
class _Bootstrap:
    cluster: npt.NDArray[np.intp]
    clusters: int
    tables: list[FloatArray] = field(default_factory=list)
    stats: list[tuple[slice, Stat]] = field(default_factory=list)

    def add(self, rows: FloatArray, stat: Stat) -> int:
        """Register a statistic of `rows` (per transcript) summed over transcripts."""
        start = sum(t.shape[1] for t in self.tables)
        self.tables.append(_per_cluster(rows, self.cluster, self.clusters))
        self.stats.append((slice(start, start + rows.shape[1]), stat))
        return len(self.stats) - 1

    def run(self, draws: int, seed: int) -> tuple[FloatArray, FloatArray]:
        """(point estimates, (draws, stats) bootstrap estimates)."""
        matrix = np.concatenate(self.tables, axis=1) if self.tables else np.zeros((0, 0))
        total = matrix.sum(axis=0)[None]
        point = np.array([stat(total[:, s])[0] for s, stat in self.stats])
        rng = np.random.default_rng(seed)
        found = np.full((draws, len(self.stats)), np.nan)
        uniform = np.full(self.clusters, 1.0 / max(self.clusters, 1))
        for start in range(0, draws, CHUNK):
            size = min(CHUNK, draws - start)
            weights = rng.multinomial(self.clusters, uniform, size=size).astype(float)
            summed = weights @ matrix
            for k, (s, stat) in enumerate(self.stats):
                found[start : start + size, k] = stat(summed[:, s])
        return point, found


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
    boot = _Bootstrap(readings.unit_cluster, clusters)
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
        out["values"][value] = _value_entry(boot, pending, reading[:, models, v])
    consensus = [readings.consensus[:, v] for v in range(len(readings.values))]
    for j in models:
        name = readings.readers[j]
        out["withConsensus"][name] = _versus(boot, pending, readings, j, consensus)
        if people:
            out["withPeople"][name] = _versus_people(boot, pending, readings, j, people)
    point, found = boot.run(draws, seed)
    for fill in pending:
        fill(point, found)
    return out


def _value_entry(
    boot: _Bootstrap, pending: list[Fill], coded: npt.NDArray[np.int8]
) -> dict[str, Any]:
    """α and Fleiss' κ between the model judges on one value, filled once the bootstrap ran."""
    counts = category_counts(coded)
    read_by = counts.sum(axis=1)
    pairable = read_by >= 2
    entry: dict[str, Any] = {
        "readings": {c: int(counts[:, i].sum()) for i, c in enumerate(CATEGORIES)},
        "units": int(pairable.sum()),
    }
    a = boot.add(coincidences(counts), alpha_of)
    raters = np.unique(read_by[pairable])
    f = boot.add(fleiss_rows(counts), fleiss_of) if len(raters) == 1 else None

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


def _pair_entry(boot: _Bootstrap, pending: list[Fill], rows: FloatArray) -> dict[str, Any]:
    """{n, share, kappa} of summed contingency rows, filled once the bootstrap ran."""
    entry: dict[str, Any] = {"n": int(rows.sum())}
    s, k = boot.add(rows, share_of), boot.add(rows, kappa_of)

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
    others: list[npt.NDArray[np.int8]],
) -> dict[str, Any]:
    """Judge j against one reading per value (`others[v]`): overall and per value."""
    per_value = [contingency(readings.reading[:, j, v], others[v]) for v in range(len(others))]
    overall = sum(per_value, np.zeros((len(readings.unit_cluster), K * K)))
    entry = _pair_entry(boot, pending, overall)
    entry["transcripts"] = int((overall.sum(axis=1) > 0).sum())
    entry["values"] = {
        value: _pair_entry(boot, pending, rows)
        for value, rows in zip(readings.values, per_value, strict=True)
    }
    return entry


def _versus_people(
    boot: _Bootstrap,
    pending: list[Fill],
    readings: JudgeReadings,
    j: int,
    people: list[int],
) -> dict[str, Any]:
    """Judge j against every person's reading (each (person, transcript) pair counts once)."""
    units = len(readings.unit_cluster)
    per_value = []
    for v in range(len(readings.values)):
        rows = np.zeros((units, K * K))
        for p in people:
            rows += contingency(readings.reading[:, j, v], readings.reading[:, p, v])
        per_value.append(rows)
    overall = sum(per_value, np.zeros((units, K * K)))
    entry = _pair_entry(boot, pending, overall)
    entry["transcripts"] = int((overall.sum(axis=1) > 0).sum())
    entry["values"] = {
        value: _pair_entry(boot, pending, rows)
        for value, rows in zip(readings.values, per_value, strict=True)
    }
    return entry
