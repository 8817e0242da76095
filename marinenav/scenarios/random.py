"""``scenario=random``: the original's random scenarios under its curriculum (the default).

Robots, then vortex cores, then static obstacles are placed uniformly at random in the 55 m x
55 m map with the original's acceptance rules (clearances, minimum start-goal distance, a
budget of 500 attempts per kind: :func:`marinenav.sim.generation.generate_scenarios`), with the
counts of the curriculum stage the clock is in (``conf/curriculum/``; docs/simulator.md,
"Scenarios and the curriculum"). The options are the curriculum's: ``conf/scenario/random.yaml``
takes them from the ``curriculum`` group, so ``curriculum=fast`` changes them.

Two options of the layout's own, for training only: ``traffic``, the chance that each vessel
but the first is traffic that does not give way (it starts under way at ``traffic_speed``
straight for its goal and holds course and speed: ``VesselRole.HOLD``, docs/simulator.md,
"Traffic"), and ``traffic_speed``. At 0 (the default) nothing is drawn: the generator's stream
and every episode are the original's. The evaluation sets stay the original's (cooperative
vessels only), so a run trained with traffic is measured on the same sets as any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from marinenav.scenarios.base import ScenarioLayout, check_slots, register_layout
from marinenav.sim.constants import VesselRole
from marinenav.sim.curriculum import (
    DEFAULT_TRAINING_SCHEDULE,
    CurriculumSchedule,
    CurriculumTable,
    evaluation_stage_params,
)
from marinenav.sim.generation import generate_scenarios
from marinenav.sim.scenario import Scenario, Slots, default_scenario
from marinenav.sim.scenario_json import scenarios_to_dicts
from marinenav.sim.traffic import under_way

_PAPER = DEFAULT_TRAINING_SCHEDULE


@dataclass
class RandomConfig:
    """One entry per curriculum stage (defaults: the paper's six stages)."""

    timesteps: list[int] = field(default_factory=lambda: list(_PAPER.timesteps))
    num_robots: list[int] = field(default_factory=lambda: list(_PAPER.num_robots))
    num_cores: list[int] = field(default_factory=lambda: list(_PAPER.num_cores))
    num_obstacles: list[int] = field(default_factory=lambda: list(_PAPER.num_obstacles))
    min_start_goal_dis: list[float] = field(
        default_factory=lambda: list(_PAPER.min_start_goal_dis)
    )  # m
    traffic: float = 0.0  # chance that a vessel other than the first holds course and speed
    traffic_speed: float = 1.5  # m/s, the speed such a vessel starts with and keeps


@register_layout
class RandomLayout(ScenarioLayout):
    """The curriculum's random scenarios.

    Args:
        config: the stages; or pass ``schedule`` (a :class:`CurriculumSchedule`) instead.
    """

    name = "random"
    Config = RandomConfig

    def __init__(
        self, config: RandomConfig | None = None, schedule: CurriculumSchedule | None = None
    ) -> None:
        if schedule is None:
            c = config or RandomConfig()
            schedule = CurriculumSchedule(
                timesteps=c.timesteps, num_robots=c.num_robots, num_cores=c.num_cores,
                num_obstacles=c.num_obstacles, min_start_goal_dis=c.min_start_goal_dis,
            )  # fmt: skip
        elif config is not None:
            raise ValueError("give a RandomConfig or a schedule, not both")
        c = config or RandomConfig()
        if not 0.0 <= c.traffic <= 1.0:
            raise ValueError(f"scenario.traffic must be in [0, 1] (a chance), got {c.traffic}")
        if not 0.5 <= c.traffic_speed <= 3.0:
            raise ValueError(
                f"scenario.traffic_speed must be in [0.5, 3] m/s, got {c.traffic_speed}"
            )
        self.traffic, self.traffic_speed = c.traffic, c.traffic_speed
        self.schedule = schedule
        # device tables, made once per (device, dtype) the layout is used on
        self._tables: dict[tuple[torch.device, torch.dtype], CurriculumTable] = {}

    @property
    def slots(self) -> Slots:
        return Slots(*self.schedule.max_counts())

    @property
    def num_stages(self) -> int:
        return self.schedule.num_stages

    def stage_start(self, stage: int) -> int:
        super().stage_start(stage)  # range check
        return self.schedule.timesteps[stage]

    def generate(self, base: Scenario, step: Tensor, generator: torch.Generator) -> Scenario:
        key = (base.start.device, base.start.dtype)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = CurriculumTable(self.schedule, *key)
        counts = table.stage_params(step, base.num_envs)
        scenario = generate_scenarios(base, *counts, generator=generator)
        if self.traffic == 0:  # no draw: the original's episodes, the generator's stream
            return scenario
        return self._with_traffic(scenario, generator)

    def _with_traffic(self, scenario: Scenario, generator: torch.Generator) -> Scenario:
        """``scenario`` with each present vessel but the first made, with chance
        :attr:`traffic`, a vessel that holds course and speed: heading for its goal from its
        start, under way at :attr:`traffic_speed` with the thrusts that keep it there. The
        first vessel of every episode stays the policy's."""
        n, R = scenario.robot_present.shape
        device, dtype = scenario.start.device, scenario.start.dtype
        draw = torch.rand((n, R), generator=generator, dtype=dtype, device=device)
        hold = scenario.robot_present & (draw < self.traffic)
        hold[:, 0] = False
        out = scenario.tensors()
        out["robot_role"] = torch.where(hold, int(VesselRole.HOLD), scenario.robot_role)
        course = scenario.goal - scenario.start  # [n, R, 2] m, world frame
        heading = torch.atan2(course[..., 1], course[..., 0])  # from x (North) toward y (East)
        theta, velocity, thrust = under_way(heading, torch.full_like(heading, self.traffic_speed))
        out["init_theta"] = torch.where(hold, theta, scenario.init_theta)
        out["init_velocity_r"] = torch.where(hold.unsqueeze(-1), velocity, scenario.init_velocity_r)
        out["init_thrust"] = torch.where(hold.unsqueeze(-1), thrust, scenario.init_thrust)
        return Scenario(**out)

    def evaluation_scenarios(
        self, episodes_per_stage: int, seed: int, slots: Slots | tuple[int, int, int]
    ) -> list[dict]:
        """The original's evaluation layout: one generation call over every stage's episodes
        (stage 0's first), float64, from ``seed``."""
        check_slots(self, slots)
        params = evaluation_stage_params(self.schedule, episodes_per_stage, dtype=torch.float64)
        count = params.num_robots.shape[0]
        base = default_scenario(count, *slots, dtype=torch.float64)
        base.seed.fill_(seed)
        base.is_eval_env.fill_(True)
        generator = torch.Generator().manual_seed(seed)
        return scenarios_to_dicts(generate_scenarios(base, *params, generator=generator))
