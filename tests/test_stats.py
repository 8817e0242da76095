"""Success-rate intervals: Wilson's score interval against values from its formula worked by
hand, and the bootstrap interval of a mean over seeds."""

from __future__ import annotations

import pytest

from marinenav.stats import (
    bootstrap_mean_interval,
    difference_interval,
    format_rate,
    wilson_interval,
)


def test_wilson_interval_known_values() -> None:
    # 8 of 10: centre (0.8 + 1.92/10) / 1.384 = 0.7168, half 0.2263 (z = 1.96)
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-3) and high == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 20) == (0.0, pytest.approx(0.1611, abs=1e-3))
    assert wilson_interval(20, 20) == (pytest.approx(0.8389, abs=1e-3), 1.0)
    # narrower with more episodes at the same rate
    assert wilson_interval(480, 600)[1] - wilson_interval(480, 600)[0] < high - low
    assert format_rate(8, 10) == "0.800 [0.490, 0.943] (n=10)"
    with pytest.raises(ValueError):
        wilson_interval(3, 0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_bootstrap_interval_of_seed_means() -> None:
    mean, low, high = bootstrap_mean_interval([0.7, 0.8, 0.9])
    assert mean == pytest.approx(0.8)
    assert 0.7 - 1e-12 <= low < mean < high <= 0.9 + 1e-12
    assert bootstrap_mean_interval([0.5]) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError):
        bootstrap_mean_interval([])


def test_difference_interval_matches_newcombes_worked_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, table II, example (a): 56/70 - 48/80,
    # method 10 (hybrid score): 0.0524 to 0.3339
    difference, low, high = difference_interval(56, 70, 48, 80)
    assert difference == pytest.approx(0.2)
    assert low == pytest.approx(0.0524, abs=1e-4) and high == pytest.approx(0.3339, abs=1e-4)
    # the interval of b - a mirrors it
    assert difference_interval(48, 80, 56, 70)[1:] == pytest.approx((-high, -low))
