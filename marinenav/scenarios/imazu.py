"""``scenario=imazu``: the 22 encounter situations of Imazu (1987), the standard test set of
ship collision avoidance (docs/scenarios.md, "The Imazu problem").

One own ship, steered by the policy, heads North (+x) for a goal beyond the map's centre; one to
three target ships that do not give way (``VesselRole.HOLD``: they keep their course and speed)
are placed so that, holding course and speed, every ship would reach the map's centre at the
same moment: each case is a collision course with every target at once. The cases differ only
in how many targets there are and in their courses relative to the own ship's
(:data:`IMAZU_CASES`); an overtaken target (course 0) is slower.

Scaled to our 5 m vessel (docs/scenarios.md gives the reasons): every ship starts
``distance`` metres of its own track before the meeting point, the centre of a square map of
side ``2 * distance + 2 * MAP_MARGIN``; the own ship's goal lies ``goal_beyond`` metres past it
(within the start-to-goal distances of the paper's scenarios); the own ship
and every target but an overtaken one start at ``speed`` (thrusts set to hold that speed
through still water), an overtaken target at ``overtaken_speed_ratio`` of it (so it starts
``(1 - ratio) * distance`` ahead of the own ship).

:meth:`ImazuLayout.evaluation_scenarios` is the 22 cases in order, exactly; :meth:`generate`
(training) draws a case per episode uniformly from ``cases``, turns each target's course by
up to ``course_jitter`` degrees either way and scales each target's speed by a factor drawn from
``[1 - speed_jitter, 1 + speed_jitter]`` (both 0 by default: the table's courses and speeds; a
faster target starts farther out, so that every ship still reaches the centre at the same
moment, and the map grows to hold it). ``timestep_penalty``, when set, replaces the paper's
reward per step (-0.1) in the layout's episodes, in training and evaluation alike (a
mixture's Imazu part can make waiting cheaper there than in its other waters).
``perception_range`` is the own ship's sensor range in the layout's episodes, in training and
evaluation alike (default the paper's 20 m: the benchmark every count in docs/results.md reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import torch
from torch import Tensor

from marinenav.scenarios.base import (
    DeviceConstant,
    ScenarioLayout,
    check_slots,
    register_layout,
)
from marinenav.scenarios.give_way import cross_ahead_penalty
from marinenav.sim.constants import PERCEPTION_DEFAULTS, VesselRole
from marinenav.sim.rules import LayoutRules, StepEvents
from marinenav.sim.scenario import Scenario, Slots, default_scenario
from marinenav.sim.scenario_json import scenarios_to_dicts
from marinenav.sim.traffic import under_way

# Case -> the targets' courses in degrees, clockwise (to starboard) from the own ship's course;
# "slow" marks the overtaken target. Imazu (1987) as tabulated by Sawada et al. (2021) and in
# the public TUD-RL implementation of the problem (docs/scenarios.md, "The Imazu problem").
SLOW = "slow"
IMAZU_CASES: dict[int, tuple[tuple[float, ...] | tuple[float, str], ...]] = {
    1: ((180.0,),),
    2: ((-90.0,),),
    3: ((0.0, SLOW),),
    4: ((45.0,),),
    5: ((180.0,), (-90.0,)),
    6: ((-10.0,), (-45.0,)),
    7: ((0.0, SLOW), (-45.0,)),
    8: ((180.0,), (-90.0,)),
    9: ((-30.0,), (-90.0,)),
    10: ((-90.0,), (15.0,)),
    11: ((90.0,), (-30.0,)),
    12: ((-45.0,), (-10.0,)),
    13: ((180.0,), (10.0,), (45.0,)),
    14: ((-10.0,), (-45.0,), (-90.0,)),
    15: ((0.0, SLOW), (-45.0,), (-90.0,)),
    16: ((45.0,), (90.0,), (-90.0,)),
    17: ((0.0, SLOW), (10.0,), (-45.0,)),
    18: ((-135.0,), (-15.0,), (-30.0,)),
    19: ((15.0,), (-15.0,), (-135.0,)),
    20: ((0.0, SLOW), (-15.0,), (-90.0,)),
    21: ((-15.0,), (15.0,), (-90.0,)),
    22: ((0.0, SLOW), (-45.0,), (-90.0,)),
}
MAX_TARGETS = 3
MAP_MARGIN = 2.5  # m between the farthest start or goal and the map's edge


def case_courses(case: int) -> list[tuple[float, bool]]:
    """``(course in degrees relative to the own ship's, overtaken)`` of each target of
    ``case`` (1..22)."""
    if case not in IMAZU_CASES:
        raise ValueError(f"Imazu case must be in 1..22, got {case!r}")
    return [(float(t[0]), len(t) > 1) for t in IMAZU_CASES[case]]


@dataclass
class ImazuConfig:
    speed: float = 1.5  # m/s, the own ship's and the targets' speed at the start
    distance: float = 45.0  # m from every ship's start to the meeting point (the map's centre)
    goal_beyond: float = 20.0  # m from the meeting point on to the own ship's goal
    overtaken_speed_ratio: float = 0.7  # an overtaken target's speed over the own ship's
    cases: list[int] = field(default_factory=lambda: list(IMAZU_CASES))  # drawn in training
    course_jitter: float = 0.0  # deg, training only: each target's course turned up to this
    speed_jitter: float = 0.0  # training only: each target's speed times U(1 - this, 1 + this)
    # reward per step of the layout's episodes (None: the paper's -0.1); a mixture's Imazu
    # part may make waiting cheaper there than in its other waters
    timestep_penalty: float | None = None
    colregs_penalty: float = 0.0  # the layout's own term: per rad of starboard turn still needed
    # the layout's own term: per step crossing ahead of a target to starboard (rule 15: pass
    # astern of it), within ENCOUNTER_RANGE
    cross_ahead_penalty: float = 0.0
    # m, the own ship's perception range in the layout's episodes (the targets' does not
    # matter: they hold on). The paper's 20 m sees a target 4-5 s before the meeting of a
    # racing own ship; 90 m has every target in sight from the start, as radar and AIS give
    # a ship at Imazu's distances. The COLREGs checks read ENCOUNTER_RANGE (20 m) whatever it is.
    perception_range: float = PERCEPTION_DEFAULTS["range"]


@register_layout
class ImazuLayout(ScenarioLayout):
    """The Imazu encounter situations (module docstring). Options are checked in one line."""

    name = "imazu"
    Config = ImazuConfig

    def __init__(self, config: ImazuConfig | None = None) -> None:
        c = config or ImazuConfig()
        if not 0.5 <= c.speed <= 3.0:
            raise ValueError(f"scenario.speed must be in [0.5, 3] m/s, got {c.speed}")
        if not 33.0 <= c.distance <= 60.0:
            # below 33 m the 10-degree targets of cases 6, 12 and 14 start within 5.6 m of the
            # own ship: their hulls would touch at the start (2 * distance * sin(5 deg))
            raise ValueError(f"scenario.distance must be in [33, 60] m, got {c.distance}")
        if not 10.0 <= c.goal_beyond <= c.distance:
            raise ValueError(
                f"scenario.goal_beyond must be in [10, distance] m, got {c.goal_beyond}"
            )
        if not 0.2 <= c.overtaken_speed_ratio <= 0.8:
            raise ValueError(
                f"scenario.overtaken_speed_ratio must be in [0.2, 0.8], got "
                f"{c.overtaken_speed_ratio}"
            )
        if not c.cases:
            raise ValueError("scenario.cases is empty: give Imazu cases from 1..22")
        for case in c.cases:
            case_courses(case)
        if not 0.0 <= c.course_jitter <= 30.0:
            raise ValueError(
                f"scenario.course_jitter must be in [0, 30] deg, got {c.course_jitter}"
            )
        if not 0.0 <= c.speed_jitter <= 0.5:
            raise ValueError(f"scenario.speed_jitter must be in [0, 0.5], got {c.speed_jitter}")
        if c.speed * (1 + c.speed_jitter) > 3.0:
            # a holding target's thrusts would pass their limit near 3.3 m/s
            raise ValueError(
                f"scenario.speed * (1 + scenario.speed_jitter) must be <= 3 m/s, got "
                f"{c.speed * (1 + c.speed_jitter)}"
            )
        if c.timestep_penalty is not None and not -1.0 <= c.timestep_penalty <= 0.0:
            raise ValueError(
                f"scenario.timestep_penalty must be in [-1, 0] or null, got {c.timestep_penalty}"
            )
        if not PERCEPTION_DEFAULTS["range"] <= c.perception_range <= 100.0:
            raise ValueError(
                f"scenario.perception_range must be in [{PERCEPTION_DEFAULTS['range']:g}, 100] m, "
                f"got {c.perception_range}"
            )
        for key in ("colregs_penalty", "cross_ahead_penalty"):
            if not getattr(c, key) >= 0:
                raise ValueError(f"scenario.{key} must be >= 0, got {getattr(c, key)}")
        self.config = c
        # [22, 3] per case: target course (rad), speed factor, present; made once, kept per device
        courses = torch.zeros(len(IMAZU_CASES), MAX_TARGETS, dtype=torch.float64)
        factor = torch.zeros_like(courses)
        present = torch.zeros_like(courses, dtype=torch.bool)
        for row, case in enumerate(IMAZU_CASES):
            for k, (course, slow) in enumerate(case_courses(case)):
                courses[row, k] = math.radians(course)
                factor[row, k] = c.overtaken_speed_ratio if slow else 1.0
                present[row, k] = True
        self._table = tuple(DeviceConstant(t) for t in (courses, factor, present))
        self._cases = DeviceConstant(torch.tensor([case - 1 for case in c.cases]))  # 0-based

    @property
    def slots(self) -> Slots:
        return Slots(1 + MAX_TARGETS, 0, 0)

    @property
    def rules(self) -> LayoutRules:
        """The paper's rules, plus two terms of the layout's own, each off at weight 0:
        ``colregs_imazu``, ``colregs_penalty`` per radian of the starboard turn the paper's
        COLREGs penalty asks for (the same zones and angle, weighed more: a stand-on target
        that does not give way leaves the own ship to turn), and ``cross_ahead``,
        ``cross_ahead_penalty`` per step that the own ship spends ahead of the beam of a target
        on its starboard side (:func:`~marinenav.scenarios.give_way.cross_ahead_penalty`
        against traffic: what rule 15 forbids and the paper's zones, which end 17 m from the
        target, do not see)."""
        c = self.config
        terms = {}
        if c.colregs_penalty > 0:
            terms["colregs_imazu"] = partial(starboard_turn_penalty, weight=c.colregs_penalty)
        if c.cross_ahead_penalty > 0:
            terms["cross_ahead"] = partial(cross_ahead_penalty, weight=c.cross_ahead_penalty)
        return LayoutRules(reward_terms=terms)

    def generate(self, base: Scenario, step: Tensor, generator: torch.Generator) -> Scenario:
        n, device, dtype = base.num_envs, base.start.device, base.start.dtype
        pick = torch.randint(len(self._cases.host), (n,), generator=generator, device=device)
        jitter = torch.rand((n, MAX_TARGETS), generator=generator, dtype=dtype, device=device)
        turn = math.radians(self.config.course_jitter) * (2 * jitter - 1)
        scale = None  # at 0 no draw: the generator's stream is what it was before the option
        if self.config.speed_jitter > 0:
            draw = torch.rand((n, MAX_TARGETS), generator=generator, dtype=dtype, device=device)
            scale = 1 + self.config.speed_jitter * (2 * draw - 1)
        return self._place(base, self._cases.on(device)[pick], turn, scale)

    def evaluation_scenarios(
        self, episodes_per_stage: int, seed: int, slots: Slots | tuple[int, int, int]
    ) -> list[dict]:
        """The 22 cases in order (case ``k`` is episode ``k - 1``), exactly as tabulated,
        whatever ``episodes_per_stage`` and ``seed`` (the geometry is fixed; the evaluation's
        noise seed still sets the perception noise)."""
        check_slots(self, slots)
        base = default_scenario(len(IMAZU_CASES), *slots, dtype=torch.float64)
        base.seed.fill_(seed)
        base.is_eval_env.fill_(True)
        cases = torch.arange(len(IMAZU_CASES))
        return scenarios_to_dicts(self._place(base, cases, torch.zeros(len(IMAZU_CASES), 3)))

    def episode_labels(self, scenarios: list[dict]) -> list[str]:
        """``case k`` for the evaluation set's episodes (cases 1..22 in order)."""
        return [f"case {k % len(IMAZU_CASES) + 1}" for k in range(len(scenarios))]

    def _place(
        self, base: Scenario, case_index: Tensor, turn: Tensor, scale: Tensor | None = None
    ) -> Scenario:
        """Scenarios of the cases ``case_index [n]`` (0-based) with each target's course turned
        by ``turn [n, 3]`` rad and its speed times ``scale [n, 3]`` (None: the table's)."""
        c, n = self.config, base.num_envs
        device, dtype = base.start.device, base.start.dtype
        courses, factor, present = (t.on(device)[case_index] for t in self._table)  # [n, 3]
        courses = courses.to(dtype) + turn.to(device=device, dtype=dtype)
        factor = factor.to(dtype)
        reach = c.distance  # m, the farthest start from the centre
        if scale is not None:
            factor = factor * scale.to(device=device, dtype=dtype)
            reach = c.distance * (1 + c.speed_jitter)
        side = 2 * (reach + MAP_MARGIN)  # m, the square map's side
        centre = torch.full((n, 2), side / 2, dtype=dtype, device=device)  # [n, 2] m
        meeting_time = c.distance / c.speed  # s: every ship reaches the centre then
        own_heading = torch.zeros(n, 1, dtype=dtype, device=device)
        heading = torch.cat((own_heading, courses), dim=1)  # [n, 4] rad, own ship first
        speed = c.speed * torch.cat((torch.ones_like(own_heading), factor), dim=1)  # [n, 4]
        direction = torch.stack((heading.cos(), heading.sin()), dim=-1)  # [n, 4, 2]
        start = centre.unsqueeze(1) - (speed * meeting_time).unsqueeze(-1) * direction
        # past the centre along each ship's course (the own ship's goal; traffic has none to
        # reach, its goal is informational)
        goal = centre.unsqueeze(1) + c.goal_beyond * direction

        R = base.slots.robots
        out = {name: value.clone() for name, value in base.tensors().items()}
        out["width"].fill_(side)
        out["height"].fill_(side)
        if c.timestep_penalty is not None:
            out["timestep_penalty"].fill_(c.timestep_penalty)
        vessels = torch.cat((torch.ones_like(present[:, :1]), present), dim=1)  # [n, 4]
        pad = R - vessels.shape[1]
        out["robot_present"] = torch.nn.functional.pad(vessels, (0, pad))
        role = torch.full_like(vessels, int(VesselRole.HOLD), dtype=torch.int64)
        role[:, 0] = int(VesselRole.POLICY)
        out["robot_role"] = torch.nn.functional.pad(torch.where(vessels, role, 0), (0, pad))
        keep = vessels.unsqueeze(-1)
        out["start"] = torch.nn.functional.pad(torch.where(keep, start, 0.0), (0, 0, 0, pad))
        out["goal"] = torch.nn.functional.pad(torch.where(keep, goal, 0.0), (0, 0, 0, pad))
        theta, velocity, thrust = under_way(heading, speed)  # [n, 4], [n, 4, 3], [n, 4, 2]
        out["init_theta"] = torch.nn.functional.pad(torch.where(vessels, theta, 0.0), (0, pad))
        out["init_velocity_r"] = torch.nn.functional.pad(
            torch.where(keep, velocity, 0.0), (0, 0, 0, pad)
        )
        out["init_thrust"] = torch.nn.functional.pad(
            torch.where(keep, thrust, 0.0), (0, 0, 0, pad)
        )
        out["init_thruster_angle"].zero_()
        out["perception_range"][:, 0] = c.perception_range  # the own ship's sensor
        out["obstacle_present"].zero_()
        out["core_present"].zero_()
        return Scenario(**out)


def starboard_turn_penalty(scenario: Scenario, events: StepEvents, weight: float) -> Tensor:
    """``[E, R]``: ``-weight`` per radian of the starboard turn still needed where a COLREGs
    head-on or give-way zone applies (``events.apply_colregs``, ``events.turn_angle``: the
    paper's COLREGs term, sim/colregs.py), 0 elsewhere."""
    turn = events.turn_angle
    return torch.where(events.apply_colregs, -weight * turn, torch.zeros_like(turn))


__all__ = ["IMAZU_CASES", "ImazuConfig", "ImazuLayout", "case_courses", "cross_ahead_penalty"]
