"""Curriculum schedule: per-stage robot, obstacle and core counts and start-goal distance.

``CurriculumSchedule`` is the host-side description, in the original's dict-of-parallel-lists
layout. ``CurriculumTable`` holds it as tensors on a device and maps the step counter to the stage
parameters without a host sync. ``evaluation_stage_params`` lays out the fixed evaluation set (the
original: 10 episodes of each of the 6 stages, in stage order).

The stage at step ``t`` is ``k = (number of entries with timesteps[k] <= t) - 1``, so stage ``k``
covers ``[timesteps[k], timesteps[k+1])`` and the last stage lasts forever.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor

from marinenav.sim.constants import ROBOT_DEFAULTS
from marinenav.sim.scenario import Slots

_COUNT_KEYS = ("timesteps", "num_robots", "num_cores", "num_obstacles")
_KEYS = (*_COUNT_KEYS, "min_start_goal_dis")  # the original's dict keys, in its order


class StageParams(NamedTuple):
    """Per-environment scenario parameters, in ``generate_scenarios``' argument order."""

    num_robots: Tensor  # [n] int64
    num_obstacles: Tensor  # [n] int64
    num_cores: Tensor  # [n] int64
    min_start_goal_dis: Tensor  # [n] m


@dataclass(frozen=True)
class CurriculumSchedule:
    """Stage table: stage ``k`` starts at environment step ``timesteps[k]``.

    Every field has one entry per stage (any sequence is accepted and stored as a tuple).
    ``timesteps`` starts at 0 and is non-decreasing (a stage starting where the next one starts
    is never used, as in the original). Counts are non-negative integers; distances (m) are
    positive and finite. Invalid schedules raise ``ValueError``.
    """

    timesteps: tuple[int, ...]  # environment step at which each stage starts
    num_robots: tuple[int, ...]
    num_cores: tuple[int, ...]
    num_obstacles: tuple[int, ...]
    min_start_goal_dis: tuple[float, ...]  # m

    def __post_init__(self) -> None:
        values = {key: _as_ints(key, getattr(self, key)) for key in _COUNT_KEYS}
        values["min_start_goal_dis"] = _as_floats("min_start_goal_dis", self.min_start_goal_dis)
        for key, value in values.items():
            object.__setattr__(self, key, value)

        lengths = {key: len(value) for key, value in values.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"curriculum lists must have equal lengths, got {lengths}")
        if lengths["timesteps"] == 0:
            raise ValueError("curriculum schedule must have at least one stage")
        steps = self.timesteps
        if steps[0] != 0:
            raise ValueError(f"curriculum timesteps must start at 0, got {steps[0]}")
        for k in range(1, len(steps)):
            if steps[k] < steps[k - 1]:
                raise ValueError(
                    f"curriculum timesteps must not decrease: stage {k} starts at {steps[k]} "
                    f"< {steps[k - 1]}"
                )
        for key in ("num_robots", "num_cores", "num_obstacles"):
            for k, count in enumerate(getattr(self, key)):
                if count < 0:
                    raise ValueError(f"curriculum {key} of stage {k} is negative: {count}")
        # generated starts are at least min_start_goal_dis from their goals, and a robot within
        # goal_dis of its goal has reached it before its first step
        goal_dis = ROBOT_DEFAULTS["goal_dis"]
        for k, dis in enumerate(self.min_start_goal_dis):
            if not (dis > goal_dis and math.isfinite(dis)):
                raise ValueError(
                    f"curriculum min_start_goal_dis of stage {k} must be finite and above the "
                    f"goal distance {goal_dis:g} m (a robot within it starts at its goal), "
                    f"got {dis}"
                )

    @classmethod
    def from_dict(cls, d: Mapping[str, Sequence[Any]]) -> CurriculumSchedule:
        """From the original's layout: a dict of parallel lists with the keys of ``to_dict``."""
        missing = [key for key in _KEYS if key not in d]
        unknown = [key for key in d if key not in _KEYS]
        if missing or unknown:
            raise ValueError(
                f"curriculum dict needs exactly the keys {list(_KEYS)}; "
                f"missing {missing}, unknown {unknown}"
            )
        return cls(**{key: d[key] for key in _KEYS})

    def to_dict(self) -> dict[str, list[int] | list[float]]:
        """The original's layout: ``{"timesteps": [...], "num_robots": [...], ...}``."""
        return {key: list(getattr(self, key)) for key in _KEYS}

    @property
    def num_stages(self) -> int:
        return len(self.timesteps)

    def with_cores(self, cores: int) -> CurriculumSchedule:
        """The same stages with ``cores`` vortex cores in every one (the current sets)."""
        return dataclasses.replace(self, num_cores=(cores,) * self.num_stages)

    def stage_of(self, step: int) -> int:
        """Host-side stage index of an environment step count."""
        return sum(start <= step for start in self.timesteps) - 1

    def max_counts(self) -> tuple[int, int, int]:
        """``(robots, obstacles, cores)``: the largest count of each over all stages."""
        return max(self.num_robots), max(self.num_obstacles), max(self.num_cores)

    def check_slots(self, slots: Slots | tuple[int, int, int]) -> None:
        """Raise ``ValueError`` naming the first stage and quantity that exceeds ``slots``
        (robots, obstacles, cores)."""
        slots = Slots(*slots)
        limits = {
            "num_robots": slots.robots,
            "num_obstacles": slots.obstacles,
            "num_cores": slots.cores,
        }
        for k in range(self.num_stages):
            for key, limit in limits.items():
                count = getattr(self, key)[k]
                if count > limit:
                    raise ValueError(
                        f"curriculum stage {k} (from step {self.timesteps[k]}) asks for "
                        f"{key}={count}, more than the {limit} slots"
                    )


def _as_ints(name: str, values: Any) -> tuple[int, ...]:
    """``values`` as a tuple of ints; integral floats (``1e6``) are accepted."""
    out = []
    for value in _as_list(name, values):
        if isinstance(value, numbers.Integral):
            out.append(int(value))
        elif isinstance(value, numbers.Real) and float(value).is_integer():
            out.append(int(float(value)))
        else:
            raise ValueError(f"curriculum {name} must hold integers, got {value!r}")
    return tuple(out)


def _as_floats(name: str, values: Any) -> tuple[float, ...]:
    out = []
    for value in _as_list(name, values):
        if not isinstance(value, numbers.Real):
            raise ValueError(f"curriculum {name} must hold numbers, got {value!r}")
        out.append(float(value))
    return tuple(out)


def _as_list(name: str, values: Any) -> list[Any]:
    """Any sequence (list, tuple, OmegaConf ListConfig, 1-D array) as a list."""
    if isinstance(values, str | bytes | Mapping):
        raise ValueError(f"curriculum {name} must be a list, got {values!r}")
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"curriculum {name} must be a list, got {values!r}") from None


DEFAULT_TRAINING_SCHEDULE = CurriculumSchedule(
    timesteps=[0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000],
    num_robots=[3, 4, 5, 5, 5, 5],
    num_cores=[0, 0, 0, 0, 0, 0],
    num_obstacles=[0, 0, 0, 2, 3, 4],
    min_start_goal_dis=[30.0, 35.0, 40.0, 40.0, 40.0, 40.0],
)
"""The schedule shipped in all six training configs; 6,000,000 training steps."""

DEFAULT_EPISODES_PER_STAGE = 10
"""Evaluation episodes per stage in the original (60 fixed evaluation episodes)."""


class CurriculumTable:
    """A schedule as tensors on one device, for stage lookups without a host sync.

    Args:
        schedule: the stages.
        device: where the lookups run (that of the step counter).
        dtype: floating dtype of the returned ``min_start_goal_dis``.
    """

    def __init__(
        self,
        schedule: CurriculumSchedule,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.schedule = schedule
        self.timesteps = torch.tensor(schedule.timesteps, dtype=torch.int64, device=device)
        self.num_robots = torch.tensor(schedule.num_robots, dtype=torch.int64, device=device)
        self.num_obstacles = torch.tensor(schedule.num_obstacles, dtype=torch.int64, device=device)
        self.num_cores = torch.tensor(schedule.num_cores, dtype=torch.int64, device=device)
        self.min_start_goal_dis = torch.tensor(
            schedule.min_start_goal_dis, dtype=dtype, device=device
        )

    def stage_index(self, step: Tensor) -> Tensor:
        """Stage of each environment step count ``step`` (int64, any shape) -> same shape, int64.

        Steps before 0 map to stage 0.
        """
        stage = torch.searchsorted(self.timesteps, step.to(torch.int64), right=True) - 1
        return stage.clamp_(min=0)

    def stage_params(self, step: Tensor, n: int) -> StageParams:
        """Parameters of the stage of a scalar int64 ``step`` for ``n`` environments.

        Returns ``StageParams(num_robots [n], num_obstacles [n], num_cores [n],
        min_start_goal_dis [n])``, on the table's device; no host sync.
        """
        if step.dim() != 0:
            raise ValueError(f"step must be a scalar tensor, got shape {tuple(step.shape)}")
        stage = self.stage_index(step).expand(n)
        return StageParams(
            num_robots=self.num_robots[stage],
            num_obstacles=self.num_obstacles[stage],
            num_cores=self.num_cores[stage],
            min_start_goal_dis=self.min_start_goal_dis[stage],
        )


def evaluation_stage_params(
    schedule: CurriculumSchedule,
    episodes_per_stage: int | Sequence[int] = DEFAULT_EPISODES_PER_STAGE,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> StageParams:
    """Per-episode parameters of a fixed evaluation set: stage 0's episodes first, then stage 1's.

    Args:
        schedule: the stages (the original evaluates with the training schedule's numbers).
        episodes_per_stage: one count for every stage, or one count per stage.
        device, dtype: of the returned tensors (``dtype`` for the distances).

    Returns:
        ``StageParams`` of ``N = sum(episodes)`` entries, environment ``i`` holding episode ``i``.
    """
    if isinstance(episodes_per_stage, int):
        counts = [episodes_per_stage] * schedule.num_stages
    else:
        counts = [int(count) for count in episodes_per_stage]
    if len(counts) != schedule.num_stages:
        raise ValueError(
            f"episodes_per_stage has {len(counts)} entries for {schedule.num_stages} stages"
        )
    if any(count < 0 for count in counts):
        raise ValueError(f"episodes_per_stage must be non-negative, got {counts}")
    table = CurriculumTable(schedule, device=device, dtype=dtype)
    stage = torch.repeat_interleave(
        torch.arange(schedule.num_stages, device=device),
        torch.tensor(counts, dtype=torch.int64, device=device),
    )
    return StageParams(
        num_robots=table.num_robots[stage],
        num_obstacles=table.num_obstacles[stage],
        num_cores=table.num_cores[stage],
        min_start_goal_dis=table.min_start_goal_dis[stage],
    )
