"""benchmarks/imazu_speeds.py: the own ships' speed per window of steps in the Imazu cases (the
windows from hand-built speeds, and a planner's record against the cases' start)."""

from __future__ import annotations

import pytest

from tests.run_utils import ROOT, benchmark_module

_SCRIPT = benchmark_module("imazu_speeds.py")
PLANNER = ROOT / "tests/data/pretrained/traced_AC_IQN_model.pt"


def test_window_means_average_each_window_and_leave_unreached_ones_empty() -> None:
    per_step = [1.5, 2.5, 3.0, 3.0, 2.0]
    assert _SCRIPT.window_means(per_step, 2, 4) == [2.0, 3.0, 2.0, None]
    assert _SCRIPT.window_means(per_step, 5, 1) == [2.4]


def test_a_planners_record_starts_at_the_cases_speed() -> None:
    """Every own ship of the 22 cases starts at 1.5 m/s (ImazuConfig.speed), so the first step's
    mean is 1.5; the record has a step per planner call and the travel time is the solved
    cases' mean, within the 1001-step limit."""
    per_step, travel_time = _SCRIPT.sail(PLANNER)
    assert per_step[0] == pytest.approx(1.5, abs=1e-9)
    assert 20 < len(per_step) <= 1001
    assert all(speed >= 0 for speed in per_step)
    assert 0 < travel_time <= 500.5
