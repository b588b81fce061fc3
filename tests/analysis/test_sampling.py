"""What a sampled run's figures rest on, and the finite-population correction."""

from __future__ import annotations

import math

import pytest

from valuerank.analysis.sampling import SampleBasis, between_weight_of, between_weights


def test_a_sampled_run_says_what_it_rests_on() -> None:
    basis = SampleBasis(percentage=10, scenarios=12, total=120)
    assert basis.basis == "based on 10 % sample: 12 of 120 scenarios"
    assert basis.fpc == math.sqrt(108 / 119)
    data = basis.to_dict()
    assert data["fraction"] == 0.1 and data["sampled"] is True


def test_the_correction_shrinks_as_the_run_expands_and_vanishes_at_full() -> None:
    factors = [SampleBasis(p, n, 120).fpc for p, n in ((10, 12), (50, 60), (90, 108))]
    corrections = [f for f in factors if f is not None]
    assert corrections == factors  # every sampled run has one
    assert corrections == sorted(corrections, reverse=True)
    full = SampleBasis(100, 120, 120)
    assert full.fpc is None and not full.sampled
    assert full.basis == "based on all 120 scenarios"


def test_an_unknown_population_gets_no_correction() -> None:
    basis = SampleBasis(25, 7, None)
    assert basis.sampled and basis.fpc is None
    assert "population size unknown" in basis.basis


def test_the_between_scenario_weight_is_fpc_squared_and_falls_to_zero_at_full() -> None:
    weights = [SampleBasis(p, n, 120).between_weight for p, n in ((10, 12), (90, 108))]
    assert weights == [pytest.approx(108 / 119), pytest.approx(12 / 119)]
    assert SampleBasis(100, 120, 120).between_weight == 0.0
    assert SampleBasis(25, 7, None).between_weight == 1.0  # N unknown: no correction
    assert between_weight_of(None) == 1.0


def test_a_figure_rests_on_its_own_scenarios_of_the_population() -> None:
    # issue 31: a model that decided 10 of a full run's 12 scenarios is a sample of 12
    full = SampleBasis(100, 12, 12)
    assert between_weights(full, [12, 10]).tolist() == [0.0, pytest.approx(2 / 11)]
    sampled = SampleBasis(30, 4, 12)
    assert between_weights(sampled, [4, 3]).tolist() == [
        pytest.approx(8 / 11),
        pytest.approx(9 / 11),
    ]
    assert between_weights(SampleBasis(25, 7, None), [7]).tolist() == [1.0]
    assert between_weights(None, [3]).tolist() == [1.0]


def test_fewer_scenarios_than_the_population_is_a_sample_whatever_the_share() -> None:
    assert SampleBasis(100, 8, 27).sampled
