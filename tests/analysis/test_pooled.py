"""Win rates pooled over runs (the leaderboard): the pooled cell of one run is that run's own
win rate and interval; two runs pool like one run holding both runs' transcripts, a scenario
asked in both being one unit; a value counts only in runs that could name it; counts, runs
and transcripts behind each cell are the hand-counted ones."""

from __future__ import annotations

import pytest

from valuerank.analysis.data import AnalysisInput, ScenarioInfo
from valuerank.analysis.pooled import PooledCell, pool_win_rates, run_verdicts
from valuerank.analysis.profile import per_model

from .helpers import Row, run_of

A, B = "model-a", "model-b"
CARE, HONESTY = "Care", "Honesty"
Verdict = tuple[tuple[str, ...], tuple[str, ...]] | None

FIRST: list[tuple[Row, Verdict]] = [
    ((A, "s1", 4), ((CARE,), (HONESTY,))),
    ((A, "s1", 5), ((CARE,), ())),
    ((A, "s2", 2), ((HONESTY,), (CARE,))),
    ((A, "s3", 3), ((), ())),  # judged, neutral on both
    ((A, "s3", None), None),  # refused: not judged
    ((B, "s1", 1), ((HONESTY,), (CARE,))),
    ((B, "s2", 2), ((HONESTY,), (CARE,))),
    ((B, "s3", 4), ((CARE,), (HONESTY,))),
]
SECOND: list[tuple[Row, Verdict]] = [
    ((A, "s2", 5), ((CARE,), (HONESTY,))),
    ((A, "s4", 4), ((CARE,), ())),
    ((A, "s4", 4), ((CARE,), (HONESTY,))),
    ((B, "s4", 1), ((HONESTY,), (CARE,))),
    ((B, "s1", 3), None),
]


def run(rows: list[tuple[Row, Verdict]]) -> AnalysisInput:
    return run_of([r for r, _ in rows], values=[v for _, v in rows])


def assert_matches_profile(cell: PooledCell | None, profile: dict[str, object]) -> None:
    assert cell is not None
    count = profile["count"]
    interval = profile["confidenceInterval"]
    assert isinstance(count, dict) and isinstance(interval, dict)
    assert (cell.prioritized, cell.deprioritized, cell.neutral) == (
        count["prioritized"],
        count["deprioritized"],
        count["neutral"],
    )
    assert cell.win_rate == pytest.approx(profile["winRate"])
    assert cell.lower == pytest.approx(interval["lower"])
    assert cell.upper == pytest.approx(interval["upper"])
    assert cell.scenarios == interval["scenarios"]


def test_one_run_pools_to_its_own_win_rates_and_intervals() -> None:
    data = run(FIRST)
    pooled = pool_win_rates([run_verdicts("r1", data)])
    profile = per_model(data)
    for model in (A, B):
        for value in (CARE, HONESTY):
            assert_matches_profile(pooled[model][value], profile[model]["values"][value])
            cell = pooled[model][value]
            assert cell is not None and cell.runs == 1
    cell = pooled[A][CARE]
    assert cell is not None
    # A: judged on s1 twice, s2, s3 (the refusal is not judged): 4 judged transcripts.
    assert (cell.prioritized, cell.deprioritized, cell.neutral, cell.transcripts) == (2, 1, 1, 4)
    assert cell.win_rate == pytest.approx(2 / 3) and cell.scenarios == 2


def test_two_runs_pool_like_one_run_of_both_with_a_shared_scenario_as_one_unit() -> None:
    pooled = pool_win_rates([run_verdicts("r1", run(FIRST)), run_verdicts("r2", run(SECOND))])
    together = per_model(run(FIRST + SECOND))
    for model in (A, B):
        for value in (CARE, HONESTY):
            assert_matches_profile(pooled[model][value], together[model]["values"][value])
            cell = pooled[model][value]
            assert cell is not None and cell.runs == 2
    care = pooled[A][CARE]
    assert care is not None
    # s2 is in both runs: one unit, its verdicts summed (A's Care: 1 of 2 on s2).
    assert (care.prioritized, care.deprioritized, care.transcripts) == (5, 1, 7)
    assert care.scenarios == 3  # s1, s2, s4 (s3 was neutral)
    b_care = pooled[B][CARE]
    assert b_care is not None and b_care.transcripts == 4  # the unjudged answer is not counted


def test_a_value_counts_only_in_runs_that_could_name_it() -> None:
    def judged_run(values: list[tuple[str, ...]], universe: tuple[str, ...]) -> AnalysisInput:
        n = len(values)
        return AnalysisInput.build(
            models=[A] * n,
            scenario_ids=[f"s{i}" for i in range(n)],
            decisions=[3] * n,
            reasons=[None] * n,
            scenarios={f"s{i}": ScenarioInfo(f"s{i}") for i in range(n)},
            prioritized=values,
            deprioritized=[()] * n,
            judged=[True] * n,
            value_universe=universe,
        )

    with_care = judged_run([(CARE,), (), (HONESTY,)], (CARE, HONESTY))
    without_care = judged_run([(HONESTY,), ()], (HONESTY,))
    pooled = pool_win_rates([run_verdicts("r1", with_care), run_verdicts("r2", without_care)])
    care, honesty = pooled[A][CARE], pooled[A][HONESTY]
    assert care is not None and honesty is not None
    # The second run's rubric has no Care: its two answers are not neutral Care verdicts.
    assert (care.prioritized, care.neutral, care.runs, care.transcripts) == (1, 2, 1, 3)
    assert (honesty.prioritized, honesty.neutral, honesty.runs, honesty.transcripts) == (2, 3, 2, 5)
    # Only neutral verdicts: no rate and no interval, rather than 0.5 and [0, 1].
    only_neutral = pool_win_rates([run_verdicts("r3", judged_run([(), ()], (CARE,)))])
    cell = only_neutral[A][CARE]
    assert cell is not None and cell.win_rate is None and cell.lower is None
    assert (cell.neutral, cell.scenarios) == (2, 0)


def test_models_without_judged_transcripts_have_no_cell() -> None:
    unjudged = run_of([(B, "s1", 3), (B, "s2", 4)], values=[None, None])
    pooled = pool_win_rates([run_verdicts("r1", run(FIRST)), run_verdicts("r2", unjudged)])
    cell = pooled[B][CARE]
    assert cell is not None and cell.runs == 1  # only the first run judged B
    alone = pool_win_rates([run_verdicts("r2", unjudged)])
    assert alone == {B: {}}  # no value to judge
    assert pool_win_rates([]) == {}


def test_only_models_keeps_those_models_transcripts() -> None:
    data = run(FIRST)
    kept = data.only_models({B, "model-c"})
    assert kept.models == (B,) and kept.n == 3
    assert set(kept.model_idx.tolist()) == {0}
    assert per_model(kept)[B] == per_model(data)[B]
    assert data.only_models({A, B}) is data
