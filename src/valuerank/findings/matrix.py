"""The model × scenario matrix of a run, or of several runs of a definition (pure; no I/O).

Rows are scenarios, columns are (run, model) pairs, and a cell holds one model's decisions on
one scenario: the transcripts by sample, how many samples gave each code of the 1–5 scale,
how many gave none (refused or unreadable), and their mean over the decided ones.

Where models differ, by row:

- `disagreement` is the **range** of the columns' means (largest − smallest, 0–4 on the 1–5
  scale): how far apart the two furthest models are. It is read the same way with two models
  or ten, which a standard deviation is not (it shrinks as agreeing models are added); the
  population SD of the means is given beside it (`sd`).
- a row's models **differ** when its disagreement is at least a threshold (by default 1: one
  whole step of the scale).
- a row is **split** when some model leans below the scale's midpoint (mean < 3) and another
  above it (mean > 3): the models would act in opposite directions.
- the **odd one out** is the column farthest from the median of the others, when there are
  three or more means, it is strictly the farthest, and it is at least the threshold away.

A column without a decided sample on a scenario has no mean and takes no part in these.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

CODES = (1, 2, 3, 4, 5)
MIDPOINT = 3.0
DEFAULT_THRESHOLD = 1.0
MAX_RANGE = float(CODES[-1] - CODES[0])


@dataclass(frozen=True)
class Column:
    """One model of one run."""

    run_id: str
    model: str


@dataclass(frozen=True)
class ScenarioFacts:
    """What a row says of its scenario: its name (subject line), its dimension levels (name →
    score) and its rank in the run's sample (`position`; ties and unknowns sort by id)."""

    scenario_id: str
    name: str = ""
    levels: Mapping[str, float] = field(default_factory=dict)
    position: int | None = None


@dataclass(frozen=True)
class Answer:
    """One transcript as the matrix reads it: where it goes and the decision it counts."""

    run_id: str
    model: str
    scenario_id: str
    transcript_id: str
    sample_index: int
    decision: int | None


@dataclass(frozen=True)
class Cell:
    """One column's transcripts of one scenario (by sample index) and their decisions."""

    transcript_ids: tuple[str, ...] = ()
    counts: tuple[int, ...] = (0, 0, 0, 0, 0)  # transcripts per code 1–5
    undecided: int = 0

    @property
    def n(self) -> int:
        return len(self.transcript_ids)

    @property
    def decided(self) -> int:
        return sum(self.counts)

    @cached_property  # read for every sort, filter, column mean and pair of a kept matrix
    def mean(self) -> float | None:
        if not self.decided:
            return None
        return sum(code * k for code, k in zip(CODES, self.counts, strict=True)) / self.decided

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "decided": self.decided,
            "undecided": self.undecided,
            "mean": self.mean,
            "counts": {str(code): k for code, k in zip(CODES, self.counts, strict=True)},
            "transcript_ids": list(self.transcript_ids),
        }


@dataclass(frozen=True)
class Row:
    scenario: ScenarioFacts
    cells: tuple[Cell, ...]  # in the matrix's column order
    disagreement: float | None  # range of the means; None with fewer than two
    sd: float | None
    split: bool
    odd_one_out: int | None  # index of the column

    def differs(self, threshold: float) -> bool:
        return self.disagreement is not None and self.disagreement >= threshold - 1e-9


@dataclass(frozen=True)
class Pair:
    """How two columns compare over the scenarios both decided: the mean absolute gap of
    their means and on how many of them the gap is at least the threshold."""

    a: int
    b: int
    shared: int
    mean_gap: float | None
    differ: int


@dataclass(frozen=True)
class Matrix:
    columns: tuple[Column, ...]
    dimensions: tuple[str, ...]
    rows: tuple[Row, ...]
    threshold: float = DEFAULT_THRESHOLD

    # The figures over every row are computed once per matrix (a kept matrix is read again
    # and again) and handed out as new lists.

    def column_means(self) -> list[float | None]:
        """Each column's mean over the scenarios it decided (every scenario weighs the same,
        however many samples it has)."""
        return list(self._column_means)

    def odd_counts(self) -> list[int]:
        """How many rows each column is the odd one out of."""
        return list(self._odd_counts)

    def pairs(self) -> list[Pair]:
        """Each pair of columns' gap over the scenarios both decided."""
        return list(self._pairs)

    @cached_property
    def _column_means(self) -> tuple[float | None, ...]:
        found: list[float | None] = []
        for i in range(len(self.columns)):
            means = [m for row in self.rows if (m := row.cells[i].mean) is not None]
            found.append(statistics.fmean(means) if means else None)
        return tuple(found)

    @cached_property
    def _odd_counts(self) -> tuple[int, ...]:
        counts = [0] * len(self.columns)
        for row in self.rows:
            if row.odd_one_out is not None:
                counts[row.odd_one_out] += 1
        return tuple(counts)

    @cached_property
    def _pairs(self) -> tuple[Pair, ...]:
        found = []
        for a in range(len(self.columns)):
            for b in range(a + 1, len(self.columns)):
                gaps = [
                    abs(ma - mb)
                    for row in self.rows
                    if (ma := row.cells[a].mean) is not None
                    and (mb := row.cells[b].mean) is not None
                ]
                found.append(
                    Pair(
                        a,
                        b,
                        len(gaps),
                        statistics.fmean(gaps) if gaps else None,
                        sum(1 for g in gaps if g >= self.threshold - 1e-9),
                    )
                )
        return tuple(found)


def _odd_one_out(means: Sequence[tuple[int, float]], threshold: float) -> int | None:
    if len(means) < 3:
        return None
    distances = []
    for i, (column, mean) in enumerate(means):
        others = [m for j, (_, m) in enumerate(means) if j != i]
        distances.append((abs(mean - statistics.median(others)), column))
    distances.sort(reverse=True)
    (far, column), (next_far, _) = distances[0], distances[1]
    if far - next_far <= 1e-9 or far < threshold - 1e-9:
        return None
    return column


def _row(scenario: ScenarioFacts, cells: tuple[Cell, ...], threshold: float) -> Row:
    means = [(i, m) for i, cell in enumerate(cells) if (m := cell.mean) is not None]
    values = [m for _, m in means]
    two = len(values) >= 2
    return Row(
        scenario=scenario,
        cells=cells,
        disagreement=max(values) - min(values) if two else None,
        sd=statistics.pstdev(values) if two else None,
        split=any(v < MIDPOINT for v in values) and any(v > MIDPOINT for v in values),
        odd_one_out=_odd_one_out(means, threshold),
    )


def build_matrix(
    columns: Sequence[Column],
    scenarios: Iterable[ScenarioFacts],
    answers: Iterable[Answer],
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> Matrix:
    """The matrix of `answers`: a row per scenario (those without an answer too), a column
    per entry of `columns` plus any (run, model) answering that `columns` lacks, in the order
    given. A decision outside 1–5 counts as none."""
    order = {c: i for i, c in enumerate(columns)}
    known = {s.scenario_id: s for s in scenarios}
    grouped: dict[tuple[str, int], list[Answer]] = {}
    for answer in answers:
        column = Column(answer.run_id, answer.model)
        if column not in order:
            order[column] = len(order)
        if answer.scenario_id not in known:
            known[answer.scenario_id] = ScenarioFacts(answer.scenario_id, answer.scenario_id)
        grouped.setdefault((answer.scenario_id, order[column]), []).append(answer)
    ordered_columns = tuple(sorted(order, key=order.__getitem__))
    rows = []
    for scenario in known.values():
        cells = []
        for i in range(len(ordered_columns)):
            found = sorted(grouped.get((scenario.scenario_id, i), []), key=_by_sample)
            counts = [0] * len(CODES)
            for a in found:
                if a.decision in CODES:
                    counts[a.decision - CODES[0]] += 1
            cells.append(
                Cell(
                    transcript_ids=tuple(a.transcript_id for a in found),
                    counts=tuple(counts),
                    undecided=len(found) - sum(counts),
                )
            )
        rows.append(_row(scenario, tuple(cells), threshold))
    dimensions = tuple(sorted({d for s in known.values() for d in s.levels}))
    rows.sort(key=lambda r: _natural(r.scenario))
    return Matrix(ordered_columns, dimensions, tuple(rows), threshold)


def _by_sample(answer: Answer) -> tuple[int, str]:
    return answer.sample_index, answer.transcript_id


def _natural(s: ScenarioFacts) -> tuple[bool, int, str]:
    return s.position is None, s.position or 0, s.scenario_id


# --- sorting and filtering ------------------------------------------------------------------

SORT_DISAGREEMENT = "disagreement"
SORT_SCENARIO = "scenario"
SORT_DIMENSION = "dimension:"
SORT_COLUMN = "column:"


class SortKeyError(ValueError):
    """A sort key the matrix has no meaning for."""


def sort_keys(matrix: Matrix) -> list[str]:
    """Every key `sort_rows` takes for this matrix (each may be prefixed with `-`)."""
    return [
        SORT_DISAGREEMENT,
        SORT_SCENARIO,
        *(SORT_DIMENSION + d for d in matrix.dimensions),
        *(f"{SORT_COLUMN}{i}" for i in range(len(matrix.columns))),
    ]


def sort_rows(matrix: Matrix, key: str) -> list[Row]:
    """The rows ordered by `key`, in its natural direction — `disagreement`: the most first;
    `scenario`: the run's sampling order; `dimension:NAME`: the lowest level first;
    `column:I`: that column's lowest mean first — reversed by a leading `-`. Rows lacking
    the value sort last either way; ties keep the most disputed first, then scenario order."""
    reverse = key.startswith("-")
    name = key[1:] if reverse else key
    if name not in sort_keys(matrix):
        raise SortKeyError(f"unknown sort key {key!r}")
    rows = sorted(matrix.rows, key=lambda r: _natural(r.scenario))
    if name == SORT_SCENARIO:
        return rows[::-1] if reverse else rows
    # Python's sorts are stable (reversed ones too): sorting by the tie-breaker first keeps
    # it among equal values of the key.
    rows.sort(key=lambda r: -1.0 if r.disagreement is None else r.disagreement, reverse=True)
    value: Callable[[Row], float | None]
    if name == SORT_DISAGREEMENT:
        value = _disagreement
    elif name.startswith(SORT_DIMENSION):
        value = _level_of(name[len(SORT_DIMENSION) :])
    else:
        value = _mean_of(int(name[len(SORT_COLUMN) :]))
    descending = (name == SORT_DISAGREEMENT) != reverse
    present = [(v, r) for r in rows if (v := value(r)) is not None]
    present.sort(key=lambda pair: pair[0], reverse=descending)
    return [r for _, r in present] + [r for r in rows if value(r) is None]


def _disagreement(row: Row) -> float | None:
    return row.disagreement


def _level_of(dimension: str) -> Callable[[Row], float | None]:
    def value(row: Row) -> float | None:
        level = row.scenario.levels.get(dimension)
        return None if level is None else float(level)

    return value


def _mean_of(column: int) -> Callable[[Row], float | None]:
    def value(row: Row) -> float | None:
        return row.cells[column].mean

    return value


SHOW_ALL = "all"
SHOW_DIFFER = "differ"
SHOW_SPLIT = "split"
SHOWS = (SHOW_ALL, SHOW_DIFFER, SHOW_SPLIT)


def shown_rows(rows: Sequence[Row], show: str, threshold: float) -> list[Row]:
    """`all` rows, those where the models `differ` (disagreement ≥ threshold), or those
    `split` across the scale's midpoint."""
    if show == SHOW_DIFFER:
        return [r for r in rows if r.differs(threshold)]
    if show == SHOW_SPLIT:
        return [r for r in rows if r.split]
    return list(rows)
