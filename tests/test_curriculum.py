"""Curriculum schedule: the shipped table, stage lookup, validation, evaluation layout."""

from __future__ import annotations

import pytest
import torch

from marinenav.sim.curriculum import (
    DEFAULT_TRAINING_SCHEDULE,
    CurriculumSchedule,
    CurriculumTable,
    StageParams,
    evaluation_stage_params,
)

# The original's config layout (identical in all six training configs).
ORIGINAL_DICT = {
    "timesteps": [0, 1000000, 2000000, 3000000, 4000000, 5000000],
    "num_robots": [3, 4, 5, 5, 5, 5],
    "num_cores": [0, 0, 0, 0, 0, 0],
    "num_obstacles": [0, 0, 0, 2, 3, 4],
    "min_start_goal_dis": [30.0, 35.0, 40.0, 40.0, 40.0, 40.0],
}


def test_default_schedule_is_the_shipped_one() -> None:
    assert DEFAULT_TRAINING_SCHEDULE.to_dict() == ORIGINAL_DICT
    assert CurriculumSchedule.from_dict(ORIGINAL_DICT) == DEFAULT_TRAINING_SCHEDULE
    assert DEFAULT_TRAINING_SCHEDULE.num_stages == 6
    assert DEFAULT_TRAINING_SCHEDULE.max_counts() == (5, 4, 0)


def test_stage_index_at_the_boundaries() -> None:
    table = CurriculumTable(DEFAULT_TRAINING_SCHEDULE)
    steps = torch.tensor(
        [0, 999_999, 1_000_000, 1_999_999, 2_000_000, 4_999_999, 5_000_000, 6_000_000, 10**12]
    )
    expected = [0, 0, 1, 1, 2, 4, 5, 5, 5]
    assert table.stage_index(steps).tolist() == expected
    assert [DEFAULT_TRAINING_SCHEDULE.stage_of(int(s)) for s in steps] == expected
    assert table.stage_index(torch.tensor(999_999)).shape == ()
    assert int(table.stage_index(torch.tensor(6_000_000))) == 5


def test_equal_start_steps_skip_the_earlier_stage() -> None:
    # k = (number of entries <= t) - 1: a stage starting where the next one starts is never used
    schedule = CurriculumSchedule([0, 10, 10, 20], [1, 2, 3, 4], [0] * 4, [0] * 4, [5.0] * 4)
    table = CurriculumTable(schedule)
    assert table.stage_index(torch.tensor([9, 10, 19, 20])).tolist() == [0, 2, 2, 3]


def test_stage_params_for_all_environments() -> None:
    table = CurriculumTable(DEFAULT_TRAINING_SCHEDULE, dtype=torch.float64)
    params = table.stage_params(torch.tensor(3_500_000), 4)
    assert isinstance(params, StageParams)
    num_robots, num_obstacles, num_cores, min_dis = params
    assert num_robots.tolist() == [5] * 4 and num_robots.dtype == torch.int64
    assert num_obstacles.tolist() == [2] * 4
    assert num_cores.tolist() == [0] * 4
    assert min_dis.tolist() == [40.0] * 4 and min_dis.dtype == torch.float64
    first = table.stage_params(torch.tensor(0), 2)
    assert first.num_robots.tolist() == [3, 3] and first.min_start_goal_dis.tolist() == [30.0] * 2
    with pytest.raises(ValueError, match="scalar"):
        table.stage_params(torch.tensor([0, 1]), 2)


def test_evaluation_set_layout() -> None:
    params = evaluation_stage_params(DEFAULT_TRAINING_SCHEDULE, 10)
    assert params.num_robots.shape == (60,)
    assert params.num_robots.tolist() == sum(([n] * 10 for n in [3, 4, 5, 5, 5, 5]), [])
    assert params.num_obstacles.tolist() == sum(([n] * 10 for n in [0, 0, 0, 2, 3, 4]), [])
    assert params.num_cores.tolist() == [0] * 60
    assert params.min_start_goal_dis.tolist() == sum(
        ([d] * 10 for d in [30.0, 35.0, 40.0, 40.0, 40.0, 40.0]), []
    )
    uneven = evaluation_stage_params(DEFAULT_TRAINING_SCHEDULE, [1, 0, 2, 0, 0, 1])
    assert uneven.num_robots.tolist() == [3, 5, 5, 5]
    assert uneven.num_obstacles.tolist() == [0, 0, 0, 4]
    with pytest.raises(ValueError, match="6 stages"):
        evaluation_stage_params(DEFAULT_TRAINING_SCHEDULE, [10] * 5)
    with pytest.raises(ValueError, match="non-negative"):
        evaluation_stage_params(DEFAULT_TRAINING_SCHEDULE, [10, -1, 10, 10, 10, 10])


def _with(**changes) -> dict:
    d = {key: list(value) for key, value in ORIGINAL_DICT.items()}
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_robots": [3, 4, 5]}, "equal lengths"),
        ({key: [] for key in ORIGINAL_DICT}, "at least one stage"),
        ({"timesteps": [1, 1000000, 2000000, 3000000, 4000000, 5000000]}, "start at 0"),
        ({"timesteps": [0, 2000000, 1000000, 3000000, 4000000, 5000000]}, "stage 2 starts"),
        ({"num_obstacles": [0, 0, 0, 2, -3, 4]}, "num_obstacles of stage 4 is negative"),
        ({"num_cores": [0, 0, 0, 0, 0, 0.5]}, "num_cores must hold integers"),
        ({"min_start_goal_dis": [30.0, 0.0, 40.0, 40.0, 40.0, 40.0]},
         "stage 1 must be finite and above the goal distance 2 m"),
        ({"min_start_goal_dis": [30.0, 35.0, -1.0, 40.0, 40.0, 40.0]},
         "stage 2 must be finite and above the goal distance 2 m"),
        ({"min_start_goal_dis": [30.0, 35.0, 40.0, 2.0, 40.0, 40.0]},
         r"stage 3 must be finite and above the goal distance 2 m \(a robot within it starts at "
         r"its goal\), got 2.0"),
        ({"num_robots": "345555"}, "must be a list"),
    ],
)
def test_invalid_schedules_raise(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CurriculumSchedule.from_dict(_with(**changes))


def test_from_dict_needs_exactly_the_original_keys() -> None:
    missing = _with()
    del missing["num_cores"]
    with pytest.raises(ValueError, match=r"missing \['num_cores'\]"):
        CurriculumSchedule.from_dict(missing)
    with pytest.raises(ValueError, match=r"unknown \['num_obs'\]"):
        CurriculumSchedule.from_dict(_with(num_obs=[0] * 6))


def test_integral_floats_are_accepted_as_counts() -> None:
    schedule = CurriculumSchedule.from_dict(_with(timesteps=[0, 1e6, 2e6, 3e6, 4e6, 5e6]))
    assert schedule.timesteps == DEFAULT_TRAINING_SCHEDULE.timesteps
    assert all(isinstance(t, int) for t in schedule.timesteps)


def test_check_slots_names_the_stage_and_quantity() -> None:
    DEFAULT_TRAINING_SCHEDULE.check_slots((5, 4, 0))
    with pytest.raises(ValueError, match=r"stage 5 .*num_obstacles=4.* 3 slots"):
        DEFAULT_TRAINING_SCHEDULE.check_slots((5, 3, 0))
    with pytest.raises(ValueError, match=r"stage 1 .*num_robots=4.* 3 slots"):
        DEFAULT_TRAINING_SCHEDULE.check_slots((3, 4, 0))
    with_cores = CurriculumSchedule([0, 100], [2, 2], [0, 3], [1, 1], [20.0, 20.0])
    assert with_cores.max_counts() == (2, 1, 3)
    with pytest.raises(ValueError, match=r"stage 1 .*num_cores=3"):
        with_cores.check_slots((2, 1, 2))
