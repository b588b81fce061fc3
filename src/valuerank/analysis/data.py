"""What an analysis reads: a run's transcripts as numpy arrays (no I/O here).

One row per transcript: its model, its scenario, the decision code (NaN when refused or
unparseable), why there is none, and — when judges ran — the values their consensus says the
answer prioritised (+1) or deprioritised (-1). Scenario-level facts (name, dimension levels)
sit in per-scenario arrays indexed by `scenario_idx`. Everything downstream is vectorised over
these arrays; building them is the only place that walks rows one by one.

The scenario unit is the level *combination*: a run that asks a scenario in several phrasings
or with its scale reversed gives repeats of one unit, like its samples (the loader,
findings/loading.py, maps run scenario ids to combinations), and each transcript records how
it was asked in `order` (0 as written, 1 reversed; its decision is already mapped back to the
definition's direction) and `phrasing` (an index into `phrasings`, ``""`` the first
phrasing). A run without presentations has every transcript at 0 and 0, as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from valuerank.analysis.judged import RubricBasis
from valuerank.analysis.readings import JudgeReadings
from valuerank.analysis.sampling import SampleBasis

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]
Int8Array = npt.NDArray[np.int8]

SCALE = (1, 5)  # decision codes
CODES = np.arange(SCALE[0], SCALE[1] + 1)

# Why a transcript has no decision (`transcripts.decision_reason`).
DECIDED, REFUSED, UNPARSEABLE = 0, 1, 2
REFUSAL_REASON = "refusal"


@dataclass(frozen=True)
class ScenarioInfo:
    """A scenario's name (its subject line) and its dimension levels (name -> score)."""

    name: str
    levels: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalysisInput:
    """A run's transcripts as parallel arrays (see the module docstring)."""

    models: tuple[str, ...]
    scenarios: tuple[str, ...]
    scenario_names: tuple[str, ...]
    dimensions: tuple[str, ...]
    levels: FloatArray  # (scenarios, dimensions); NaN: the scenario lacks the dimension
    model_idx: IntArray  # (transcripts,)
    scenario_idx: IntArray  # (transcripts,)
    decision: FloatArray  # (transcripts,); NaN: no decision
    outcome: Int8Array  # (transcripts,): DECIDED, REFUSED or UNPARSEABLE
    values: tuple[str, ...]
    value_status: Int8Array  # (transcripts, values): +1 prioritised, -1 deprioritised, 0
    judged: BoolArray  # (transcripts,): the judges' consensus is known
    sample: SampleBasis | None = None
    # What the definition says the figures mean (analysis/stakes.py): each dimension's
    # value ("Freedom") and the decision scale's labels by code; empty when unknown.
    dimension_values: Mapping[str, str] = field(default_factory=dict)
    scale_labels: Mapping[int, str] = field(default_factory=dict)
    # The values rubric the judges read (None: none), for why no value was judged.
    rubric: RubricBasis | None = None
    # Each judge's and person's own reading per transcript (None: nobody read one).
    readings: JudgeReadings | None = None
    # How each transcript was asked (module docstring); None: all as written, first phrasing.
    order: Int8Array | None = None  # (transcripts,): 0 as written, 1 reversed
    phrasing: IntArray | None = None  # (transcripts,): index into `phrasings`
    phrasings: tuple[str, ...] = ("",)

    def __post_init__(self) -> None:
        n = self.n
        if self.order is None:
            object.__setattr__(self, "order", np.zeros(n, dtype=np.int8))
        if self.phrasing is None:
            object.__setattr__(self, "phrasing", np.zeros(n, dtype=np.intp))

    @property
    def orders(self) -> Int8Array:
        """`order`, never None (filled in `__post_init__`)."""
        assert self.order is not None
        return self.order

    @property
    def phrasing_idx(self) -> IntArray:
        """`phrasing`, never None (filled in `__post_init__`)."""
        assert self.phrasing is not None
        return self.phrasing

    @property
    def n(self) -> int:
        return int(self.decision.shape[0])

    @property
    def decided(self) -> BoolArray:
        return ~np.isnan(self.decision)

    def cell_means(self) -> FloatArray:
        """(models, scenarios): the mean decision of each model on each scenario over its
        decided samples; NaN where it decided none."""
        return cell_means(self.model_idx, self.scenario_idx, self.decision, self.shape)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.models), len(self.scenarios)

    def only_models(self, keep: Collection[str]) -> AnalysisInput:
        """The same input with only the transcripts of the models in `keep` (in this
        input's order); the scenarios and values stay as they are."""
        kept = tuple(m for m in self.models if m in keep)
        if kept == self.models:
            return self
        new_index = np.full(len(self.models), -1, dtype=np.intp)
        for i, model in enumerate(kept):
            new_index[self.models.index(model)] = i
        moved = new_index[self.model_idx]
        rows = moved >= 0
        return replace(
            self,
            models=kept,
            model_idx=moved[rows],
            scenario_idx=self.scenario_idx[rows],
            decision=self.decision[rows],
            outcome=self.outcome[rows],
            value_status=self.value_status[rows],
            judged=self.judged[rows],
            readings=None,  # the readings of every model's transcripts: not filtered here
            order=self.orders[rows],
            phrasing=self.phrasing_idx[rows],
        )

    @classmethod
    def build(
        cls,
        *,
        models: Sequence[str],
        scenario_ids: Sequence[str],
        decisions: Sequence[int | None],
        reasons: Sequence[str | None],
        scenarios: Mapping[str, ScenarioInfo],
        prioritized: Sequence[Sequence[str]] | None = None,
        deprioritized: Sequence[Sequence[str]] | None = None,
        judged: Sequence[bool] | None = None,
        value_universe: Sequence[str] = (),
        sample: SampleBasis | None = None,
        dimension_values: Mapping[str, str] | None = None,
        scale_labels: Mapping[int, str] | None = None,
        rubric: RubricBasis | None = None,
        readings: JudgeReadings | None = None,
        orders: Sequence[int] | None = None,
        phrasings: Sequence[str] | None = None,
    ) -> AnalysisInput:
        """Arrays from per-transcript columns. `scenarios` describes every scenario id used
        (others get their id as name and no levels); `judged[i]` says whether transcript i
        has a consensus (its value lists are then meaningful, empty or not). `orders[i]`
        (0 as written, 1 reversed) and `phrasings[i]` (``""`` the first) say how transcript i
        was asked; None: all as written, in the first phrasing."""
        n = len(models)
        for name, column in (("scenario_ids", scenario_ids), ("decisions", decisions)):
            if len(column) != n:
                raise ValueError(f"{name} has {len(column)} items for {n} transcripts")
        if len(reasons) != n:
            raise ValueError(f"reasons has {len(reasons)} items for {n} transcripts")
        model_names, model_idx = np.unique(np.asarray(models, dtype=object), return_inverse=True)
        all_ids = sorted(set(scenario_ids) | set(scenarios))
        index_of = {sid: i for i, sid in enumerate(all_ids)}
        scenario_idx = np.fromiter((index_of[s] for s in scenario_ids), dtype=np.intp, count=n)
        order = np.zeros(n, dtype=np.int8) if orders is None else np.asarray(orders, np.int8)
        keys = [""] * n if phrasings is None else list(phrasings)
        if order.shape != (n,) or len(keys) != n:
            raise ValueError(f"orders and phrasings need {n} items, one per transcript")
        phrasing_keys = tuple(sorted(set(keys) | {""}))
        phrasing_index = {key: i for i, key in enumerate(phrasing_keys)}
        phrasing = np.fromiter((phrasing_index[k] for k in keys), dtype=np.intp, count=n)
        decision = np.array([np.nan if d is None else float(d) for d in decisions], dtype=float)
        if np.any((decision < SCALE[0]) | (decision > SCALE[1])):
            raise ValueError(f"decision codes must be {SCALE[0]}..{SCALE[1]} or None")
        outcome = np.full(n, DECIDED, dtype=np.int8)
        missing = np.isnan(decision)
        refused = np.array([r == REFUSAL_REASON for r in reasons], dtype=bool)
        outcome[missing & refused] = REFUSED
        outcome[missing & ~refused] = UNPARSEABLE
        dims = sorted({d for info in scenarios.values() for d in info.levels})
        levels = np.full((len(all_ids), len(dims)), np.nan)
        names = []
        for i, sid in enumerate(all_ids):
            info = scenarios.get(sid)
            names.append(info.name if info is not None and info.name else sid)
            if info is not None:
                for j, dim in enumerate(dims):
                    if dim in info.levels and info.levels[dim] is not None:
                        levels[i, j] = float(info.levels[dim])
        judged_arr = np.zeros(n, dtype=bool) if judged is None else np.asarray(judged, dtype=bool)
        values, status = _value_status(n, prioritized, deprioritized, value_universe)
        status[~judged_arr] = 0
        # A refusal takes no side on the scale: what judges read into it is not a value the
        # model prioritised over another (a refuser got win rates from it, issue 31).
        status[outcome == REFUSED] = 0
        return cls(
            models=tuple(str(m) for m in model_names),
            scenarios=tuple(all_ids),
            scenario_names=tuple(names),
            dimensions=tuple(dims),
            levels=levels,
            model_idx=model_idx.astype(np.intp).reshape(-1),
            scenario_idx=scenario_idx,
            decision=decision,
            outcome=outcome,
            values=values,
            value_status=status,
            judged=judged_arr,
            sample=sample,
            dimension_values=dict(dimension_values or {}),
            scale_labels=dict(scale_labels or {}),
            rubric=rubric,
            readings=readings,
            order=order,
            phrasing=phrasing,
            phrasings=phrasing_keys,
        )


def _value_status(
    n: int,
    prioritized: Sequence[Sequence[str]] | None,
    deprioritized: Sequence[Sequence[str]] | None,
    universe: Sequence[str],
) -> tuple[tuple[str, ...], Int8Array]:
    """(values, status matrix): +1 prioritised, -1 deprioritised, 0 neither or both."""
    pri = prioritized if prioritized is not None else [()] * n
    dep = deprioritized if deprioritized is not None else [()] * n
    names = sorted(set(universe) | set(itertools.chain(*pri)) | set(itertools.chain(*dep)))
    column = {name: j for j, name in enumerate(names)}
    status = np.zeros((n, len(names)), dtype=np.int8)
    for sign, lists in ((1, pri), (-1, dep)):
        rows = np.repeat(np.arange(n), [len(v) for v in lists])
        cols = np.fromiter(
            (column[v] for v in itertools.chain(*lists)), dtype=np.intp, count=len(rows)
        )
        status[rows, cols] += sign  # named on both lists: 0 (a conflict is no verdict)
    return tuple(names), status


def cell_means(
    model_idx: IntArray, scenario_idx: IntArray, decision: FloatArray, shape: tuple[int, int]
) -> FloatArray:
    """Mean decision per (model, scenario) cell over decided rows; NaN for empty cells."""
    decided = ~np.isnan(decision)
    flat = model_idx[decided] * shape[1] + scenario_idx[decided]
    size = shape[0] * shape[1]
    sums = np.bincount(flat, weights=decision[decided], minlength=size)
    counts = np.bincount(flat, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means.reshape(shape)
