"""Each reader's reading of each transcript, per value (pure; no I/O).

A reader is a judge model or a person (named `human:<email>` by runs/human_readings.py;
`human` says which). A reading puts every value of the
rubric in one of three categories: prioritised, deprioritised or neither (a value named on
both lists is neither, as in the consensus). The consensus of the model judges is kept per
transcript beside them, so `judge_agreement` can compare each judge with it. Transcripts are
grouped by scenario (`unit_cluster`): the scenario is the unit of every interval.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.intp]
Int8Array = npt.NDArray[np.int8]

NEITHER, PRIORITIZED, DEPRIORITIZED = 0, 1, 2
CATEGORIES = ("neither", "prioritized", "deprioritized")
UNREAD = -1
Lists = tuple[tuple[str, ...], tuple[str, ...]]  # (prioritised, deprioritised) names


@dataclass(frozen=True)
class JudgeReadings:
    """Readers × transcripts × values, with the consensus per transcript (see module doc)."""

    readers: tuple[str, ...]
    values: tuple[str, ...]
    unit_cluster: IntArray  # (units,): the transcript's scenario, as an integer
    reading: Int8Array  # (units, readers, values): a category, UNREAD when not read
    consensus: Int8Array  # (units, values): the judges' consensus, UNREAD when none
    human: tuple[bool, ...] = ()  # per reader: a person (else a judge model)

    @property
    def models(self) -> list[int]:
        return [i for i in range(len(self.readers)) if not self._is_human(i)]

    @property
    def people(self) -> list[int]:
        return [i for i in range(len(self.readers)) if self._is_human(i)]

    def _is_human(self, reader: int) -> bool:
        return reader < len(self.human) and self.human[reader]


def categories(
    values: Sequence[str], prioritized: Iterable[str], deprioritized: Iterable[str]
) -> Int8Array:
    """A reading as one category per value (`values`' order; names outside it ignored)."""
    column = {name: j for j, name in enumerate(values)}
    row = np.zeros(len(values), dtype=np.int8)
    for sign, names in ((1, set(prioritized)), (-1, set(deprioritized))):
        for name in names:
            if name in column:
                row[column[name]] += sign
    found: Int8Array = np.where(
        row > 0, PRIORITIZED, np.where(row < 0, DEPRIORITIZED, NEITHER)
    ).astype(np.int8)
    return found


@dataclass
class ReadingsBuilder:
    """Readings collected row by row (the loader's judgments, people's readings and
    consensus), turned into arrays once by `build`. A row costs a few machine integers:
    its lists are kept once per distinct pair (judges repeat the same few), as an index."""

    values: tuple[str, ...] = ()
    _units: dict[str, int] = field(default_factory=dict)
    _clusters: dict[str, int] = field(default_factory=dict)
    _unit_cluster: array[int] = field(default_factory=lambda: array("q"))
    _readers: dict[str, int] = field(default_factory=dict)
    _human: dict[str, bool] = field(default_factory=dict)
    _lists: dict[Lists, int] = field(default_factory=dict)
    # Per row: unit, reader (-1: the consensus), index of its lists.
    _row_unit: array[int] = field(default_factory=lambda: array("q"))
    _row_reader: array[int] = field(default_factory=lambda: array("q"))
    _row_lists: array[int] = field(default_factory=lambda: array("q"))

    def _unit(self, transcript_id: str, scenario_id: str) -> int:
        unit = self._units.get(transcript_id)
        if unit is None:
            unit = self._units[transcript_id] = len(self._units)
            cluster = self._clusters.setdefault(scenario_id, len(self._clusters))
            self._unit_cluster.append(cluster)
        return unit

    def _row(self, unit: int, reader: int, pri: Sequence[str], dep: Sequence[str]) -> None:
        key = (tuple(pri), tuple(dep))
        self._row_unit.append(unit)
        self._row_reader.append(reader)
        self._row_lists.append(self._lists.setdefault(key, len(self._lists)))

    def add(
        self,
        transcript_id: str,
        scenario_id: str,
        reader: str,
        prioritized: Sequence[str],
        deprioritized: Sequence[str],
        *,
        human: bool = False,
    ) -> None:
        unit = self._unit(transcript_id, scenario_id)
        index = self._readers.setdefault(reader, len(self._readers))
        self._human[reader] = human
        self._row(unit, index, prioritized, deprioritized)

    def add_consensus(
        self,
        transcript_id: str,
        scenario_id: str,
        prioritized: Sequence[str],
        deprioritized: Sequence[str],
    ) -> None:
        self._row(self._unit(transcript_id, scenario_id), -1, prioritized, deprioritized)

    def build(self) -> JudgeReadings | None:
        """The readings (None when nobody read any transcript). Without a rubric's values
        the values are the names the readers used."""
        if not self._readers:
            return None
        names = {name for pri, dep in self._lists for name in (*pri, *dep)}
        values = self.values or tuple(sorted(names))
        coded = np.stack([categories(values, pri, dep) for pri, dep in self._lists])
        unit = np.frombuffer(self._row_unit, dtype=np.int64)
        reader = np.frombuffer(self._row_reader, dtype=np.int64)
        lists = np.frombuffer(self._row_lists, dtype=np.int64)
        units, readers = len(self._units), len(self._readers)
        reading = np.full((units, readers, len(values)), UNREAD, dtype=np.int8)
        judged = reader >= 0
        reading[unit[judged], reader[judged]] = coded[lists[judged]]
        consensus = np.full((units, len(values)), UNREAD, dtype=np.int8)
        consensus[unit[~judged]] = coded[lists[~judged]]
        for found in (reading, consensus):  # kept and shared between readers: none may write
            found.flags.writeable = False
        return JudgeReadings(
            readers=tuple(self._readers),
            values=values,
            unit_cluster=np.frombuffer(self._unit_cluster, dtype=np.int64).astype(np.intp),
            reading=reading,
            consensus=consensus,
            human=tuple(self._human[r] for r in self._readers),
        )
