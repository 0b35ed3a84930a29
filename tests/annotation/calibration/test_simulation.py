"""``calibration_simulation`` on the shipped demo data: the issue's targets (coverage ≥ 0.93 at
nominal 95 %, width ratio < 1 against human-only at the same n), deterministic for a seed."""

import pytest

from annotation.simulation.calibration import calibration_simulation


def test_calibration_simulation_meets_the_targets_and_is_deterministic():
    result = calibration_simulation(7, simulations=1000)
    assert result["simulations"] == 1000 and result["n_judge"] == 806
    assert result["coverage"] >= 0.93
    assert result["width_ratio"] < 1
    for model in result["noise_models"].values():
        assert model["coverage"] >= 0.93 and model["width_ratio"] < 1
    assert result["adaptive_lenient_judge"]["coverage"] >= 0.93
    assert calibration_simulation(7, simulations=1000) == result
    measured = {"correct": {"correct": 0.9, "omitted": 0.1}, "omitted": {"omitted": 0.85, "correct": 0.15},
                "incorrect": {"incorrect": 0.5, "omitted": 0.5}}
    with_measured = calibration_simulation(7, simulations=200, measured=measured)
    assert with_measured["noise_models"]["measured"]["coverage"] >= 0.9
