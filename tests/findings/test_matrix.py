"""The model × scenario matrix, computed by hand on small runs: cells, the row's range and
SD, differ/split/odd one out, the pairs' gaps, sorting and filtering."""

from __future__ import annotations

import statistics

import pytest

from valuerank.findings.matrix import (
    Answer,
    Column,
    ScenarioFacts,
    SortKeyError,
    build_matrix,
    shown_rows,
    sort_keys,
    sort_rows,
)

A, B, C = Column("r1", "m:a"), Column("r1", "m:b"), Column("r1", "m:c")
SCENARIOS = [
    ScenarioFacts("s1", "first", {"Harm": 1, "Cost": 3}, position=0),
    ScenarioFacts("s2", "second", {"Harm": 3, "Cost": 1}, position=1),
    ScenarioFacts("s3", "third", {"Harm": 2}, position=2),
]


def answers(table: dict[tuple[Column, str], list[int | None]]) -> list[Answer]:
    found = []
    for (column, scenario), codes in table.items():
        for i, code in enumerate(codes):
            tid = f"{column.model}-{scenario}-{i}"
            found.append(Answer(column.run_id, column.model, scenario, tid, i, code))
    return found


TABLE: dict[tuple[Column, str], list[int | None]] = {
    (A, "s1"): [1, 2],  # mean 1.5
    (B, "s1"): [5, 5],  # mean 5
    (C, "s1"): [2, None],  # mean 2, one refusal
    (A, "s2"): [3],
    (B, "s2"): [3],
    (C, "s2"): [4],
    (A, "s3"): [None],  # no decision: no mean
    (B, "s3"): [2],
}


def test_cells_count_decisions_and_keep_transcripts_by_sample() -> None:
    shuffled = list(reversed(answers(TABLE)))
    m = build_matrix([A, B, C], SCENARIOS, shuffled)
    s1 = m.rows[0]
    assert s1.scenario.scenario_id == "s1"
    a, b, c = s1.cells
    assert a.transcript_ids == ("m:a-s1-0", "m:a-s1-1")  # by sample, whatever the input order
    assert a.counts == (1, 1, 0, 0, 0) and a.mean == 1.5 and a.undecided == 0
    assert b.counts == (0, 0, 0, 0, 2) and b.mean == 5
    assert c.n == 2 and c.decided == 1 and c.undecided == 1 and c.mean == 2
    assert c.to_dict()["counts"] == {"1": 0, "2": 1, "3": 0, "4": 0, "5": 0}
    s3 = m.rows[2]
    assert s3.cells[0].mean is None and s3.cells[0].undecided == 1
    assert s3.cells[2].n == 0 and s3.cells[2].mean is None  # C never answered s3


def test_disagreement_is_the_range_of_the_means_with_the_sd_beside_it() -> None:
    m = build_matrix([A, B, C], SCENARIOS, answers(TABLE))
    s1, s2, s3 = m.rows
    assert s1.disagreement == pytest.approx(3.5)  # 5 − 1.5
    assert s1.sd == pytest.approx(statistics.pstdev([1.5, 5, 2]))
    assert s2.disagreement == pytest.approx(1.0) and s3.disagreement is None  # one mean only
    assert [r.differs(1.0) for r in m.rows] == [True, True, False]
    assert [r.differs(1.5) for r in m.rows] == [True, False, False]
    assert [r.split for r in m.rows] == [True, False, False]  # s2: 3, 3, 4 is not split


def test_the_odd_one_out_is_strictly_farthest_and_at_least_the_threshold_away() -> None:
    m = build_matrix([A, B, C], SCENARIOS, answers(TABLE))
    assert m.rows[0].odd_one_out == 1  # B (5) against the median 1.75 of A and C
    assert m.rows[1].odd_one_out == 2  # C (4) against 3 and 3: exactly the threshold
    assert (
        build_matrix([A, B, C], SCENARIOS, answers(TABLE), threshold=1.5).rows[1].odd_one_out
        is None
    )
    two = build_matrix([A, B], SCENARIOS, answers({(A, "s1"): [1], (B, "s1"): [5]}))
    assert two.rows[0].odd_one_out is None  # with two, neither is the odd one
    even: dict[tuple[Column, str], list[int | None]] = {
        (A, "s1"): [1],
        (B, "s1"): [3],
        (C, "s1"): [5],
    }
    assert build_matrix([A, B, C], SCENARIOS, answers(even)).rows[0].odd_one_out is None  # a tie
    assert build_matrix([A, B, C], SCENARIOS, answers(TABLE)).odd_counts() == [0, 1, 1]


def test_column_means_weigh_each_scenario_once_and_pairs_give_gaps() -> None:
    m = build_matrix([A, B, C], SCENARIOS, answers(TABLE))
    assert m.column_means() == pytest.approx([(1.5 + 3) / 2, (5 + 3 + 2) / 3, (2 + 4) / 2])
    pairs = {(p.a, p.b): p for p in m.pairs()}
    assert set(pairs) == {(0, 1), (0, 2), (1, 2)}
    ab = pairs[(0, 1)]
    assert ab.shared == 2 and ab.mean_gap == pytest.approx((3.5 + 0) / 2) and ab.differ == 1
    bc = pairs[(1, 2)]
    assert bc.shared == 2 and bc.mean_gap == pytest.approx((3 + 1) / 2) and bc.differ == 2


def test_unlisted_scenarios_and_columns_are_added_and_bad_codes_count_as_none() -> None:
    extra = [
        Answer("r2", "m:z", "s9", "t1", 0, 4),
        Answer("r1", "m:a", "s1", "t2", 0, 7),  # outside the scale
    ]
    m = build_matrix([A], SCENARIOS, extra)
    assert m.columns == (A, Column("r2", "m:z"))
    assert [r.scenario.scenario_id for r in m.rows] == ["s1", "s2", "s3", "s9"]
    assert m.rows[-1].scenario.name == "s9" and m.rows[-1].cells[1].mean == 4
    assert m.rows[0].cells[0].undecided == 1 and m.rows[0].cells[0].mean is None
    assert m.dimensions == ("Cost", "Harm")


def test_sorting_by_disagreement_dimension_and_column() -> None:
    m = build_matrix([A, B, C], SCENARIOS, answers(TABLE))

    def ids(key: str) -> list[str]:
        return [r.scenario.scenario_id for r in sort_rows(m, key)]

    assert ids("disagreement") == ["s1", "s2", "s3"]  # s3 has none: last
    assert ids("-disagreement") == ["s2", "s1", "s3"]  # still last reversed
    assert ids("scenario") == ["s1", "s2", "s3"] and ids("-scenario") == ["s3", "s2", "s1"]
    assert ids("dimension:Harm") == ["s1", "s3", "s2"]
    assert ids("-dimension:Harm") == ["s2", "s3", "s1"]
    assert ids("dimension:Cost") == ["s2", "s1", "s3"]  # s3 lacks Cost: last
    assert ids("column:1") == ["s3", "s2", "s1"]  # B: 2, 3, 5
    assert ids("-column:0") == ["s2", "s1", "s3"]  # A: 3, 1.5, none
    assert "dimension:Harm" in sort_keys(m) and "column:2" in sort_keys(m)
    for bad in ("dimension:Nope", "column:3", "colour"):
        with pytest.raises(SortKeyError):
            sort_rows(m, bad)


def test_ties_keep_the_most_disputed_first_then_the_run_order() -> None:
    table: dict[tuple[Column, str], list[int | None]] = {
        (A, "s1"): [3], (B, "s1"): [3],  # range 0
        (A, "s2"): [1], (B, "s2"): [4],  # range 3
        (A, "s3"): [2], (B, "s3"): [3],  # range 1
        (A, "s4"): [2], (B, "s4"): [3],  # range 1, after s3 in the run
    }  # fmt: skip
    one_level = [ScenarioFacts(f"s{i}", levels={"X": 1}, position=i) for i in range(1, 5)]
    m = build_matrix([A, B], one_level, answers(table))
    order = [r.scenario.scenario_id for r in sort_rows(m, "dimension:X")]
    assert order == ["s2", "s3", "s4", "s1"]
    assert [r.scenario.scenario_id for r in sort_rows(m, "-dimension:X")] == order


def test_filters_keep_rows_that_differ_or_split() -> None:
    m = build_matrix([A, B, C], SCENARIOS, answers(TABLE))
    rows = sort_rows(m, "scenario")
    assert [r.scenario.scenario_id for r in shown_rows(rows, "all", 1.0)] == ["s1", "s2", "s3"]
    assert [r.scenario.scenario_id for r in shown_rows(rows, "differ", 1.0)] == ["s1", "s2"]
    assert [r.scenario.scenario_id for r in shown_rows(rows, "differ", 2.0)] == ["s1"]
    assert [r.scenario.scenario_id for r in shown_rows(rows, "split", 1.0)] == ["s1"]
