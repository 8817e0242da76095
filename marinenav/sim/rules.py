"""The task's rules: reward, outcome codes and termination, apart from physics.

The physics (``dynamics.py``, ``current.py``, ``perception.py``, ``colregs.py``) says where the
robots are and what they perceive; these functions say what the navigation task makes of it,
as VMAS separates ``World.step`` from a scenario's ``reward`` and ``done``. The simulator's step
gathers what happened in a step into :class:`StepEvents` and asks :func:`step_reward`,
:func:`outcome_codes` and :func:`terminate`; the TorchRL environment asks
:func:`reset_codes` and, for the evaluation's rule "the episode ends at the first collision",
:func:`cut_at_first_collision`. The reward's equation is in
docs/simulator.md, "The model in equations", the end of an episode in
docs/simulator.md, "Episode rules", and the function of every reward term, outcome code and
termination flag in docs/extending.md, "Where each reward term lives".

A scenario layout may add reward terms and end conditions of its own (:class:`LayoutRules`,
``ScenarioLayout.rules``; docs/extending.md, "Give a layout rules of its own"): its terms come
after the paper's three, and an end condition ends a robot's episode as a failure, exactly as a
collision does (the collision penalty, the ``COLLISION`` outcome, the evaluation's cut).

Vessels the policy does not steer (traffic, ``Scenario.robot_role``; docs/simulator.md,
"Traffic") move, collide and are seen like any vessel, but earn no reward, never reach a goal,
report ``done`` and the ``TRAFFIC`` outcome at every step, and do not keep an episode running: it
ends when no policy vessel is left active.

Every function is plain tensor code: no Python branching on tensor values, no host read, no
write to its inputs, so the compiled step (``compile=True``) traces them into its one graph.

Shapes: ``E`` environments, ``R`` robot slots. Reward constants are per environment ``[E]``,
taken from the :class:`~marinenav.sim.scenario.Scenario` (a loaded scenario file may carry its
own). Rewards are unitless; distances in metres; turn angles in radians.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from marinenav.sim.approach import ClosestApproach
from marinenav.sim.constants import InfoState, VesselRole
from marinenav.sim.scenario import Scenario


@dataclass
class StepEvents:
    """What happened to every robot slot in one step: the inputs of the rules.

    Flags are the simulator's latched flags after the step's perception: once set in an
    episode, ``collision`` and ``reach_goal`` stay set (the robot is deactivated after the step).
    """

    acted: torch.Tensor  # [E, R] bool: present and not deactivated before the step
    deactivated: torch.Tensor  # [E, R] bool: deactivated before the step
    goal_distance_before: torch.Tensor  # [E, R] m, true positions, before the sub-steps
    goal_distance_after: torch.Tensor  # [E, R] m, true positions, after the sub-steps
    apply_colregs: torch.Tensor  # [E, R] bool: a COLREGs give-way or head-on rule applies
    turn_angle: torch.Tensor  # [E, R] rad: starboard turn still needed, 0 where none
    collision: torch.Tensor  # [E, R] bool: contact with a detected object, latched
    reach_goal: torch.Tensor  # [E, R] bool: within goal_dis of the goal, latched
    timeout: torch.Tensor  # [E] bool: the step limit is hit on this step
    # where every vessel is after the step (true geometry), for a layout's own rules; None
    # where only the paper's rules are asked
    pos: torch.Tensor | None = None  # [E, R, 2] m, world frame
    theta: torch.Tensor | None = None  # [E, R] rad, heading in [0, 2pi)
    # where every vessel was before the step, for rules that read a crossing (an event)
    pos_before: torch.Tensor | None = None  # [E, R, 2] m, world frame
    theta_before: torch.Tensor | None = None  # [E, R] rad, heading in [0, 2pi)
    # velocities over ground after and before the step ([E, R, 2] m/s, world frame; the
    # simulator's, one sub-step lagged), and [E] bool: the step is the episode's first (its
    # "before" is the start); for rules that read when a distance turns from closing to opening
    velocity: torch.Tensor | None = None
    velocity_before: torch.Tensor | None = None
    first_step: torch.Tensor | None = None
    # every pair's closest approach so far in the episode (sim.approach, [E, i, j] each: the
    # COLREGs checks' reading of the tracks), before the step and with the step's positions
    closest_before: ClosestApproach | None = None
    closest: ClosestApproach | None = None


@dataclass
class Termination:
    """Which robots and environments end on a step, all bool."""

    done: torch.Tensor  # [E, R]: inactive slots, robots that ended, every slot at the step limit
    terminated: torch.Tensor  # [E, R]: robots that acted and collided or reached the goal
    truncated: torch.Tensor  # [E, R]: robots that acted and were cut by the step limit
    deactivated: torch.Tensor  # [E, R]: deactivated after the step (the trainer's rule)
    env_done: torch.Tensor  # [E]: no robot left active, or the step limit hit
    env_truncated: torch.Tensor  # [E]: the step limit hit on this step


RewardTerm = Callable[[Scenario, StepEvents], torch.Tensor]
"""A reward term: ``(scenario, events) -> [E, R]`` float, what every robot slot earns."""
EndCondition = Callable[[Scenario, StepEvents], torch.Tensor]
"""An end condition: ``(scenario, events) -> [E, R]`` bool, the robots that fail now."""


@dataclass(frozen=True)
class LayoutRules:
    """What a scenario layout adds to the paper's rules: reward terms (added after the paper's
    three, in order) and end conditions (each ends a robot's episode as a collision does). The
    paper's layouts add nothing."""

    reward_terms: dict[str, RewardTerm] = field(default_factory=dict)
    end_conditions: dict[str, EndCondition] = field(default_factory=dict)
    # whether a rule reads every pair's closest approach so far (StepEvents.closest_before,
    # .closest): the simulator keeps them only then (sim.approach; a cost per step otherwise
    # spent for nothing)
    closest_approach: bool = False

    @property
    def term_names(self) -> tuple[str, ...]:
        """The names of every reward term, the paper's first: ``("agents", "reward_terms")``
        and the logs (``train/reward_<name>``) follow this order."""
        return (*REWARD_TERMS, *self.reward_terms)

    def failures(self, scenario: Scenario, events: StepEvents) -> torch.Tensor:
        """``[E, R, K]`` bool: which of the ``K`` end conditions each robot meets now."""
        if not self.end_conditions:
            return events.collision.new_zeros(*events.collision.shape, 0)
        return torch.stack([end(scenario, events) for end in self.end_conditions.values()], -1)


PAPER_RULES = LayoutRules()
"""The paper's rules alone (the random scenarios, the harbour by default, scenario files)."""


def steered(scenario: Scenario) -> torch.Tensor:
    """``[E, R]`` bool: the robots present that the policy steers (not traffic)."""
    return scenario.robot_present & (scenario.robot_role == int(VesselRole.POLICY))


def goal_distance(scenario: Scenario, pos: torch.Tensor) -> torch.Tensor:
    """Distance to the goal ``[E, R]`` (m) from true positions ``pos [E, R, 2]``."""
    return torch.linalg.vector_norm(scenario.goal - pos, dim=-1)


def step_limit_reached(episode_steps: torch.Tensor, max_episode_steps: int) -> torch.Tensor:
    """``[E]`` bool: this step is the timeout step.

    ``episode_steps [E]`` int64 is the counter *before* its increment, so with the default
    limit of 1000 the 1001st step of an episode is the timeout step.
    """
    return episode_steps >= max_episode_steps


def progress_reward(scenario: Scenario, events: StepEvents) -> torch.Tensor:
    """Time penalty plus progress to the goal ``[E, R]``.

    ``timestep_penalty + (d_before - d_after)``: -0.1 per step with the defaults, plus the
    metres gained towards the goal.
    """
    return scenario.timestep_penalty.unsqueeze(-1) + (
        events.goal_distance_before - events.goal_distance_after
    )


def colregs_penalty(scenario: Scenario, events: StepEvents) -> torch.Tensor:
    """COLREGs penalty ``[E, R]``: ``COLREGs_penalty * phi`` where the rule
    applies (-0.1 per radian of the starboard turn still needed, with the defaults), else 0."""
    turn = events.turn_angle
    return torch.where(
        events.apply_colregs, scenario.colregs_penalty.unsqueeze(-1) * turn, torch.zeros_like(turn)
    )


def terminal_reward(scenario: Scenario, events: StepEvents) -> torch.Tensor:
    """Exactly one terminal term per robot ``[E, R]``, in priority order:

    timeout 0 (a kept quirk: a collision or goal on the timeout step earns nothing); else
    collision ``collision_penalty`` (-5); else goal ``goal_reward`` (+10); else 0. A collision
    wins over a goal reached on the same step (a kept quirk; docs/simulator.md,
"Faithful quirks").
    """
    zero = torch.zeros_like(events.goal_distance_after)
    terminal = torch.where(
        events.collision,
        scenario.collision_penalty.unsqueeze(-1),
        torch.where(events.reach_goal, scenario.goal_reward.unsqueeze(-1), zero),
    )
    return torch.where(events.timeout.unsqueeze(-1), zero, terminal)


# The reward's terms, in the order they are added (the original's: float round-off
# included). To add a term: a function (scenario, events) -> [E, R] here, and an entry below;
# every report of the terms (the step's ("agents", "reward_terms"), the trainer's
# train/reward_<name>) follows this table. docs/extending.md, "Add a reward term".
REWARD_TERMS: dict[str, Callable[[Scenario, StepEvents], torch.Tensor]] = {
    "progress": progress_reward,
    "colregs": colregs_penalty,
    "terminal": terminal_reward,
}


def reward_terms(
    scenario: Scenario, events: StepEvents, rules: LayoutRules = PAPER_RULES
) -> torch.Tensor:
    """Every term of every robot slot's reward ``[E, R, T]`` (``rules.term_names``, in that
    order: the paper's, then the layout's): 0 for slots that did not act (deactivated robots
    and padding) and for traffic."""
    terms = [term(scenario, events) for term in REWARD_TERMS.values()]
    terms += [term(scenario, events) for term in rules.reward_terms.values()]
    stacked = torch.stack(terms, dim=-1)
    earns = (events.acted & steered(scenario)).unsqueeze(-1)
    return torch.where(earns, stacked, torch.zeros_like(stacked))


def total_reward(terms: torch.Tensor) -> torch.Tensor:
    """The reward ``[E, R]`` from its terms ``[E, R, T]``, added left to right."""
    reward = terms[..., 0]
    for k in range(1, terms.shape[-1]):  # a handful of terms, a static count
        reward = reward + terms[..., k]
    return reward


def step_reward(scenario: Scenario, events: StepEvents) -> torch.Tensor:
    """The reward of every robot slot ``[E, R]``: progress, then COLREGs penalty,
    then the terminal term, for robots that acted; 0 for inactive slots (deactivated robots
    and padding). The terms are added in the original's order (float round-off included)."""
    return total_reward(reward_terms(scenario, events))


def outcome_codes(scenario: Scenario, events: StepEvents) -> torch.Tensor:
    """``info`` state of every robot slot ``[E, R]`` int64 :class:`InfoState`.

    A robot that acted: ``TOO_LONG_EPISODE`` at the step limit, else ``COLLISION``, else
    ``REACH_GOAL``, else ``NORMAL``. A slot that did not act: ``EMPTY_SLOT`` for padding, else
    ``DEACTIVATED_AFTER_COLLISION`` or ``DEACTIVATED_AFTER_REACHING_GOAL`` by its latched flag.
    Traffic (a vessel the policy does not steer): ``TRAFFIC`` at every step.
    """
    acting = torch.where(
        events.timeout.unsqueeze(-1),
        int(InfoState.TOO_LONG_EPISODE),
        torch.where(
            events.collision,
            int(InfoState.COLLISION),
            torch.where(events.reach_goal, int(InfoState.REACH_GOAL), int(InfoState.NORMAL)),
        ),
    )
    resting = torch.where(
        ~scenario.robot_present,
        int(InfoState.EMPTY_SLOT),
        torch.where(
            events.collision,
            int(InfoState.DEACTIVATED_AFTER_COLLISION),
            int(InfoState.DEACTIVATED_AFTER_REACHING_GOAL),
        ),
    )
    codes = torch.where(events.acted, acting, resting)
    traffic = scenario.robot_present & ~steered(scenario)
    return torch.where(traffic, int(InfoState.TRAFFIC), codes)


def reset_codes(scenario: Scenario) -> torch.Tensor:
    """``info`` of a freshly reset environment ``[E, R]`` int64: ``NORMAL`` for the robots the
    policy steers, ``TRAFFIC`` for the others, ``EMPTY_SLOT`` for padding."""
    codes = torch.where(
        scenario.robot_present, int(InfoState.TRAFFIC), int(InfoState.EMPTY_SLOT)
    )
    return torch.where(steered(scenario), int(InfoState.NORMAL), codes)


def terminate(scenario: Scenario, events: StepEvents) -> Termination:
    """Done, terminated and truncated flags and the deactivation after a step
(docs/simulator.md, "Episode rules").

    A robot that acted and collided or reached its goal terminates and is deactivated (the
    original's training loop deactivates it after storing its transition). At the step limit
    every robot that acted is truncated (no terminal reward). An environment is done when
    no robot the policy steers is left active or at the step limit. Slots that did not act,
    and traffic, report ``done``; traffic that collides is deactivated too.
    """
    ended = events.collision | events.reach_goal
    timeout = events.timeout.unsqueeze(-1)
    acted = events.acted
    agent = acted & steered(scenario)
    deactivated = events.deactivated | (acted & ended)
    still_active = steered(scenario) & ~deactivated
    return Termination(
        done=~agent | timeout | ended,
        terminated=agent & ended & ~timeout,
        truncated=agent & timeout,
        deactivated=deactivated,
        env_done=events.timeout | ~still_active.any(dim=-1),
        env_truncated=events.timeout,
    )


def cut_at_first_collision(
    info: torch.Tensor,
    still_active: torch.Tensor,
    truncated: torch.Tensor,
    env_done: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Evaluation rule: an environment's episode ends at its first collision.

    Args:
        info: ``[E, R]`` int64 outcome codes of the step.
        still_active: ``[E, R]`` bool, robots active after the step.
        truncated: ``[E, R]`` bool, robots cut by the step limit.
        env_done: ``[E]`` bool, environments whose episode ended by the simulator's rules.

    Returns:
        ``(truncated [E, R], env_done [E])``: robots still active in an environment where a
        robot collided are truncated too, and that environment is done.
    """
    collided = (info == InfoState.COLLISION).any(dim=-1)
    return truncated | (collided.unsqueeze(-1) & still_active), env_done | collided


__all__ = [
    "EndCondition",
    "LayoutRules",
    "PAPER_RULES",
    "RewardTerm",
    "StepEvents",
    "Termination",
    "colregs_penalty",
    "cut_at_first_collision",
    "goal_distance",
    "outcome_codes",
    "progress_reward",
    "REWARD_TERMS",
    "reset_codes",
    "reward_terms",
    "step_limit_reached",
    "step_reward",
    "steered",
    "terminal_reward",
    "total_reward",
    "terminate",
]
