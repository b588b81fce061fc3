"""Agreement between judges (analysis/judge_agreement.py) checked against independent
libraries: Krippendorff's α against the `krippendorff` package, Fleiss' κ against statsmodels,
Cohen's κ against scikit-learn, on random data and on edge cases; the bootstrap is
deterministic and resamples scenarios."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from valuerank.analysis.judge_agreement import judge_agreement
from valuerank.analysis.readings import UNREAD, JudgeReadings, ReadingsBuilder, categories

VALUES = ("Care", "Fairness", "Liberty")


def readings(
    reading: np.ndarray,
    clusters: np.ndarray | None = None,
    consensus: np.ndarray | None = None,
    readers: tuple[str, ...] | None = None,
) -> JudgeReadings:
    units, judges, values = reading.shape
    named = readers or tuple(f"judge:{j}" for j in range(judges))
    return JudgeReadings(
        readers=named,
        human=tuple(r.startswith("human:") for r in named),
        values=VALUES[:values],
        unit_cluster=np.arange(units) % 7 if clusters is None else clusters,
        reading=reading.astype(np.int8),
        consensus=(np.zeros((units, values)) if consensus is None else consensus).astype(np.int8),
    )


def package_alpha(coded: np.ndarray) -> float | None:
    data = coded.T.astype(float)
    data[data == UNREAD] = np.nan
    try:
        value = krippendorff.alpha(
            reliability_data=data, level_of_measurement="nominal", value_domain=[0, 1, 2]
        )
    except ValueError:  # the package refuses data without two categories or pairs
        return None
    return None if not np.isfinite(value) else float(value)


def random_reading(rng: np.random.Generator, units: int, judges: int, missing: float) -> np.ndarray:
    # Judges that agree more than chance: a true category per unit, then noise.
    truth = rng.integers(0, 3, (units, 1, len(VALUES)))
    noise = rng.integers(0, 3, (units, judges, len(VALUES)))
    reading = np.where(rng.random((units, judges, len(VALUES))) < 0.6, truth, noise)
    reading[rng.random((units, judges)) < missing] = UNREAD
    return reading


@pytest.mark.parametrize("seed", range(12))
def test_alpha_equals_the_krippendorff_package_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    reading = random_reading(rng, int(rng.integers(5, 80)), int(rng.integers(2, 6)), 0.25)
    found = judge_agreement(readings(reading))
    assert found is not None
    for v, value in enumerate(VALUES):
        expected = package_alpha(reading[:, :, v])
        got = found["values"][value]["alpha"]["value"]
        if expected is None:
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "coded",
    [
        [[0, 0], [0, 0], [0, 0]],  # one category only: undefined
        [[1, 1], [2, 2], [0, 0]],  # perfect agreement
        [[1, 2], [2, 1], [0, 1]],  # systematic disagreement: negative
        [[1, UNREAD], [UNREAD, 2], [0, 0], [2, 2]],  # singly read units are not pairable
        [[1, UNREAD], [UNREAD, 2]],  # nothing pairable: undefined
        [[1, 1, UNREAD], [2, 0, 0], [0, 0, 0], [1, 2, 2]],  # varying numbers of readings
    ],
)
def test_alpha_equals_the_package_on_edge_cases(coded: list[list[int]]) -> None:
    array = np.array(coded)
    found = judge_agreement(readings(array[:, :, None]))
    assert found is not None
    got = found["values"]["Care"]["alpha"]["value"]
    expected = package_alpha(array)
    assert (got is None) == (expected is None)
    if expected is not None:
        assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_kappa_equals_statsmodels_when_every_transcript_has_the_same_readers(
    seed: int,
) -> None:
    rng = np.random.default_rng(100 + seed)
    judges = int(rng.integers(2, 6))
    reading = random_reading(rng, int(rng.integers(5, 60)), judges, 0.0)
    found = judge_agreement(readings(reading))
    assert found is not None
    for v, value in enumerate(VALUES):
        table = np.stack([(reading[:, :, v] == c).sum(axis=1) for c in range(3)], axis=1)
        expected = fleiss_kappa(table, method="fleiss")
        entry = found["values"][value]["fleissKappa"]
        assert entry["raters"] == judges
        assert entry["value"] == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_is_null_with_the_reason_when_readers_differ() -> None:
    reading = np.array([[1, 1, UNREAD], [2, 2, 2], [0, 1, 0]])[:, :, None]
    found = judge_agreement(readings(reading))
    assert found is not None
    entry = found["values"]["Care"]["fleissKappa"]
    assert entry["value"] is None and entry["ci95"] is None
    assert "different numbers of judges (2 to 3)" in entry["reason"]
    assert found["values"]["Care"]["alpha"]["value"] is not None  # α takes missing readings


@pytest.mark.parametrize("seed", range(6))
def test_each_judge_against_the_consensus_is_sklearns_cohen_kappa(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    reading = random_reading(rng, 50, 3, 0.2)
    consensus = random_reading(rng, 50, 1, 0.1)[:, 0, :]
    found = judge_agreement(readings(reading, consensus=consensus))
    assert found is not None
    for j in range(3):
        entry = found["withConsensus"][f"judge:{j}"]
        for v, value in enumerate(VALUES):
            a, b = reading[:, j, v], consensus[:, v]
            both = (a != UNREAD) & (b != UNREAD)
            per_value = entry["values"][value]
            assert per_value["n"] == int(both.sum())
            assert per_value["share"]["value"] == pytest.approx(np.mean(a[both] == b[both]))
            expected = cohen_kappa_score(a[both], b[both], labels=[0, 1, 2])
            assert per_value["kappa"]["value"] == pytest.approx(expected, abs=1e-12)
        # Pooled over values: every (transcript, value) pair counts once.
        a = reading[:, j, :].ravel()
        b = consensus.ravel()
        both = (a != UNREAD) & (b != UNREAD)
        expected = cohen_kappa_score(a[both], b[both], labels=[0, 1, 2])
        assert entry["kappa"]["value"] == pytest.approx(expected, abs=1e-12)


def test_people_are_compared_with_judges_not_counted_among_them() -> None:
    rng = np.random.default_rng(7)
    models = random_reading(rng, 40, 2, 0.0)
    person = np.full((40, 1, len(VALUES)), UNREAD)
    person[:15] = models[:15, :1]  # the person agrees with judge 0 on the 15 they read
    reading = np.concatenate([models, person], axis=1)
    found = judge_agreement(
        readings(reading, readers=("judge:a", "judge:b", "human:ann@example.com"))
    )
    assert found is not None
    assert found["judges"] == ["judge:a", "judge:b"]
    assert found["people"] == ["human:ann@example.com"]
    alone = judge_agreement(readings(models, readers=("judge:a", "judge:b")))
    assert alone is not None
    assert found["values"] == alone["values"]  # the person's readings change no α
    versus = found["withPeople"]["judge:a"]
    assert versus["transcripts"] == 15
    assert versus["share"]["value"] == 1.0 and versus["kappa"]["value"] == pytest.approx(1.0)
    assert found["withPeople"]["judge:b"]["transcripts"] == 15
    assert "withPeople" in alone and alone["withPeople"] == {}


def test_the_bootstrap_is_deterministic_and_resamples_scenarios() -> None:
    rng = np.random.default_rng(11)
    reading = random_reading(rng, 60, 3, 0.1)
    first = judge_agreement(readings(reading))
    assert first == judge_agreement(readings(reading))
    assert first is not None
    low, high = first["values"]["Care"]["alpha"]["ci95"]
    assert low <= first["values"]["Care"]["alpha"]["value"] <= high
    # Every transcript of a scenario duplicated: the same scenarios, so about the same
    # interval; resampling transcripts instead would narrow it by about √2.
    doubled = np.concatenate([reading, reading])
    clusters = np.concatenate([np.arange(60) % 7, np.arange(60) % 7])
    again = judge_agreement(readings(doubled, clusters=clusters))
    assert again is not None
    low2, high2 = again["values"]["Care"]["alpha"]["ci95"]
    assert high2 - low2 > 0.8 * (high - low)


def test_nobody_read_anything_gives_none_and_output_is_strict_json() -> None:
    assert judge_agreement(None) is None
    assert ReadingsBuilder(values=VALUES).build() is None
    builder = ReadingsBuilder(values=VALUES)
    builder.add("t1", "s1", "judge:a", ["Care"], ["Liberty"])
    builder.add("t1", "s1", "judge:b", ["Care", "Liberty"], ["Liberty"])
    builder.add("t1", "s1", "human:ann@example.org", ["Care"], [], human=True)
    builder.add_consensus("t1", "s1", ["Care"], [])
    built = builder.build()
    assert built is not None
    assert built.reading[0, 1].tolist() == [1, 0, 0]  # named on both lists: neither
    assert built.models == [0, 1] and built.people == [2]
    found = judge_agreement(built)
    json.dumps(found, allow_nan=False)
    assert found is not None and found["values"]["Care"]["alpha"]["value"] is None


def test_categories_ignore_names_outside_the_rubric() -> None:
    assert categories(VALUES, ["Care", "Other"], ["Fairness"]).tolist() == [1, 2, 0]
