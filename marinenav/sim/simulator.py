"""``MarineNavSimulator``: the original multi-vessel simulator as batched tensor code.

One object simulates ``E`` environments with ``R`` robot slots each (plus ``O`` obstacle and
``C`` vortex-core slots), on one device, in float32 or float64. A step of every environment
is a fixed sequence of tensor operations: no Python loop over environments, robots, objects or
cores, and no host read-back (outside the optional validation of inputs).

A step is physics, then the task's rules, as VMAS splits ``World.step`` from a scenario's
``reward`` and ``done``: thrust change, the dynamics sub-steps (``dynamics.py``, ``current.py``),
perception and COLREGs (``perception.py``, ``colregs.py``), and then reward, outcome codes and
termination (``rules.py``), pure functions of what happened in the step (``StepEvents``).

Episode bookkeeping follows the original *training loop* (docs/simulator.md, "Episode rules"):
after a step every robot whose collision or goal flag is set is deactivated; a deactivated robot
gets no action, does not move, is invisible to the others and reports ``done`` with zero reward.
An environment's episode is over when none of its robots is active or when the step limit is
hit (the step on which the pre-increment step counter equals ``max_episode_steps``, i.e. the
1001st step). The simulator does not reset by itself: call :meth:`reset` with a mask.

Validation mode (``validate=True``, the default for direct users) checks action values
(``NaN`` / infinite, discrete index range, continuous actions inside the spec's ``[-1, 1]``): a
host synchronisation per step. The trainer switches it off; then a continuous action outside
``[-1, 1]`` is clamped to it (the thrust rate limit). Shape and dtype checks are free and always
on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch

from marinenav.keys import check_seed, device_named
from marinenav.sim.approach import ClosestApproach, approach_now, closer
from marinenav.sim.colregs import colregs_turn
from marinenav.sim.constants import (
    CONTINUOUS_THRUST_RATE,
    MAX_EPISODE_STEPS,
    MAX_OBJECTS,
    NUM_DISCRETE_ACTIONS,
    ROBOT_DEFAULTS,
)
from marinenav.sim.current import current_velocity
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule
from marinenav.sim.dynamics import VesselState, integrate_step, step_energy
from marinenav.sim.noise import VonMisesTable
from marinenav.sim.perception import Observation, PerceptionNoise, PerceptionResult, perceive
from marinenav.sim.rules import (
    StepEvents,
    goal_distance,
    outcome_codes,
    reward_terms,
    steered,
    step_limit_reached,
    terminate,
    total_reward,
)
from marinenav.sim.scenario import Scenario, Slots, default_scenario
from marinenav.sim.scenario_json import scenarios_from_dicts, scenarios_to_dicts, slots_needed
from marinenav.sim.traffic import advance_waypoints, traffic_thrust_rate

if TYPE_CHECKING:
    from marinenav.scenarios.base import ScenarioLayout

ActionKind = Literal["discrete", "continuous"]


@dataclass
class StepResult:
    """Per-step outputs. ``E`` environments, ``R`` robot slots."""

    reward: torch.Tensor  # [E, R] float; 0 for robots inactive before the step
    reward_terms: torch.Tensor  # [E, R, T] float; the reward's terms (``reward_term_names``)
    failures: torch.Tensor  # [E, R, K] bool; the layout's end conditions met (``end_conditions``)
    done: torch.Tensor  # [E, R] bool; true for inactive slots, terminal robots and at timeout
    info: torch.Tensor  # [E, R] int64 InfoState codes
    was_active: torch.Tensor  # [E, R] bool; robots that acted in this step (learning data)
    terminated: torch.Tensor  # [E, R] bool; acting robots that collided or reached the goal
    truncated: torch.Tensor  # [E, R] bool; acting robots cut by the step limit
    energy: torch.Tensor  # [E, R] float; (|T_L| + |T_R|) * dt * N * power coefficient
    env_done: torch.Tensor  # [E] bool; no active robot left, or the step limit hit
    env_truncated: torch.Tensor  # [E] bool; the step limit hit on this step


class MarineNavSimulator:
    """Batched multi-robot marine navigation (docs/simulator.md).

    Args:
        num_envs: ``E``.
        action_kind: ``"discrete"`` (int64 index 0..24 per robot, ``[E, R]``) or
            ``"continuous"`` (two values in ``[-1, 1]`` per robot, ``[E, R, 2]``).
        robot_slots, obstacle_slots, core_slots: ``R, O, C``; default to what the layout
            places at most. A layout needing more raises ``ValueError``.
        schedule: curriculum of the random scenarios; default the original's
            6-stage training schedule. Shorthand for ``layout=RandomLayout(schedule=...)``.
        device, dtype: where and in what float precision to simulate.
        seed: seed of the simulator's ``torch.Generator`` (scenarios and perception noise).
        max_episode_steps: the original's 1000-step limit.
        validate: check action values (a host sync per step); see the module docstring.
        compile: run the arithmetic of :meth:`step` through ``torch.compile`` (one graph,
            static shapes; the first step compiles). Eager, the default, is the reference;
            both give the same results to float round-off and draw the same random numbers.
        cudagraphs: replay that arithmetic (eager or compiled) as one CUDA graph through
            ``tensordict.nn.CudaGraphModule`` (CUDA only; captured at the second step). The
            noise is drawn outside the graph from the simulator's generator, which a capture
            could not register, and the graph reads the simulator's buffers, which every
            reset and load writes in place.
        layout: where restarting environments' vessels, obstacles and cores are placed (a
            :class:`marinenav.scenarios.ScenarioLayout`; give it or ``schedule``, not both).
    """

    def __init__(
        self,
        num_envs: int,
        action_kind: ActionKind = "discrete",
        robot_slots: int | None = None,
        obstacle_slots: int | None = None,
        core_slots: int | None = None,
        schedule: CurriculumSchedule | Mapping[str, Sequence[float]] | None = None,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        seed: int = 0,
        max_episode_steps: int = MAX_EPISODE_STEPS,
        validate: bool = True,
        compile: bool = False,
        cudagraphs: bool = False,
        layout: ScenarioLayout | None = None,
    ) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if action_kind not in ("discrete", "continuous"):
            raise ValueError(f"action_kind must be 'discrete' or 'continuous', got {action_kind!r}")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        if max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be positive, got {max_episode_steps}")
        device = device_named(device)  # a missing CUDA is one line here, not a torch internal
        check_seed(seed)
        # Layouts (marinenav.scenarios) build on this package's placement modules; the
        # simulator holds one (VMAS's Environment -> Scenario -> core), imported at use.
        from marinenav.scenarios import RandomLayout, check_slots

        if layout is not None:
            if schedule is not None:
                raise ValueError("give a schedule (random scenarios) or a layout, not both")
        else:
            if schedule is None:
                schedule = DEFAULT_TRAINING_SCHEDULE
            elif not isinstance(schedule, CurriculumSchedule):
                schedule = CurriculumSchedule.from_dict(schedule)
            layout = RandomLayout(schedule=schedule)
        max_robots, max_obstacles, max_cores = layout.slots
        slots = (
            max_robots if robot_slots is None else robot_slots,
            max_obstacles if obstacle_slots is None else obstacle_slots,
            max_cores if core_slots is None else core_slots,
        )
        for name, count in zip(("robot_slots", "obstacle_slots", "core_slots"), slots, strict=True):
            if not isinstance(count, int) or count < 0:
                raise ValueError(f"{name} must be a non-negative int, got {count!r}")
        if slots[0] < 1:
            raise ValueError("robot_slots must be at least 1")
        if isinstance(layout, RandomLayout):
            layout.schedule.check_slots(slots)  # names the curriculum stage at fault
        check_slots(layout, slots)

        self.num_envs = num_envs
        self.action_kind: ActionKind = action_kind
        self.robot_slots, self.obstacle_slots, self.core_slots = slots
        self.device = torch.device(device)
        self.dtype = dtype
        self.max_episode_steps = max_episode_steps
        self.num_substeps = int(ROBOT_DEFAULTS["N"])
        self.validate = validate
        if cudagraphs and self.device.type != "cuda":
            raise ValueError(f"cudagraphs=True needs a CUDA device, the simulator is on {device}")
        self.compiled = compile
        self.cudagraphs = cudagraphs
        self._advance = self._make_advance()
        # Generate only the resetting environments (needs a nonzero(): free on CPU, a sync on
        # CUDA), or generate all and merge by mask (sync-free anywhere). Both are tested.
        self.compact_resets = self.device.type == "cpu"
        # Perceive only the robots that perceive (and the candidate slots they may see) when
        # that skips enough work; eager CPU only (picking them is free there, a sync on CUDA;
        # a compiled step keeps fixed shapes). Same numbers either way.
        self.compact_perception = self.device.type == "cpu"
        self.layout = layout  # what a restarting environment gets (marinenav.scenarios)
        self.rules = layout.rules  # the paper's rules and the layout's own (sim.rules)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)

        E, R = num_envs, self.robot_slots
        # Constants made once (rule 3 of
        # docs/architecture.md, "Performance rules and where they are kept").
        self._base = default_scenario(E, *slots, dtype=dtype, device=self.device)
        self._robot_index = torch.arange(R, device=self.device)
        self._slot_index = torch.arange(MAX_OBJECTS, device=self.device)
        self._all_envs = torch.ones(E, dtype=torch.bool, device=self.device)
        self._action_pairs = (
            torch.stack(torch.meshgrid(torch.arange(5), torch.arange(5), indexing="ij"), dim=-1)
            .view(NUM_DISCRETE_ACTIONS, 2)
            .to(self.device)
        )  # a = 5 i + j -> (i, j)

        # State buffers, overwritten in place by reset / load.
        self.scenario = default_scenario(E, *slots, dtype=dtype, device=self.device)
        self._templates = default_scenario(E, *slots, dtype=dtype, device=self.device)
        self._fixed = torch.zeros(E, dtype=torch.bool, device=self.device)
        self._any_fixed = False  # host-side: set by load_scenarios, never read from a tensor
        self._all_fixed = False
        zeros = lambda *shape, kind=dtype: torch.zeros(  # noqa: E731
            (E, *shape), dtype=kind, device=self.device
        )
        self.state = VesselState(
            pos=zeros(R, 2),
            theta=zeros(R),
            velocity_r=zeros(R, 3),
            velocity=zeros(R, 3),
            thrust=zeros(R, 2),
        )
        # Radius-noise quantile tables, one per distinct r_kappa; rebuilt only where scenarios
        # with new values are loaded (generated scenarios take the base's values).
        self._radius_noise = VonMisesTable.for_values(layout.radius_noise_kappas(self._base))
        self.collision = zeros(R, kind=torch.bool)
        self.reach_goal = zeros(R, kind=torch.bool)
        self.deactivated = zeros(R, kind=torch.bool)
        self.apply_colregs = zeros(R, kind=torch.bool)
        self.waypoint = zeros(R, kind=torch.int64)  # the waypoint each route vessel steers for
        # every pair's closest approach so far in the episode (sim.approach; the checks' own),
        # kept where a rule reads it (LayoutRules.closest_approach)
        self.closest = ClosestApproach(
            distance=zeros(R, R), bearing=zeros(R, R), encounter=zeros(R, R, kind=torch.int64)
        )
        self.episode_steps = zeros(kind=torch.int64)
        # Curriculum clock: environment steps summed over the batch (E per batched step).
        self.curriculum_step = torch.zeros((), dtype=torch.int64, device=self.device)
        self.observation = Observation(
            self_state=zeros(R, 7),
            objects=zeros(R, MAX_OBJECTS, 5),
            objects_mask=zeros(R, MAX_OBJECTS, kind=torch.bool),
        )
        self.reset()

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def from_scenarios(
        cls,
        scenarios: Sequence[Mapping[str, Any]],
        action_kind: ActionKind = "discrete",
        robot_slots: int | None = None,
        obstacle_slots: int | None = None,
        core_slots: int | None = None,
        **kwargs: Any,
    ) -> MarineNavSimulator:
        """One environment per scenario dict (the original's JSON layout), reset to exactly
        that scenario every time. Slots default to the largest counts in ``scenarios``.
        """
        if isinstance(scenarios, Mapping):
            raise ValueError(
                "scenarios must be a list of episode dicts, got one dict (wrap it in a list)"
            )
        needed = slots_needed(scenarios)  # checked: names the first dict without its counts
        slots = (
            robot_slots or needed.robots,
            needed.obstacles if obstacle_slots is None else obstacle_slots,
            needed.cores if core_slots is None else core_slots,
        )
        sim = cls(
            len(scenarios),
            action_kind,
            *slots,
            **(
                {}
                if kwargs.get("layout") is not None
                else {"schedule": kwargs.pop("schedule", None) or _schedule_for_slots(*slots)}
            ),
            **kwargs,
        )
        sim.load_scenarios(scenarios)
        return sim

    # ------------------------------------------------------------------ properties
    @property
    def active(self) -> torch.Tensor:
        """``[E, R]`` bool: robot present and not deactivated."""
        return self.scenario.robot_present & ~self.deactivated

    @property
    def steered(self) -> torch.Tensor:
        """``[E, R]`` bool: robots present that the policy steers (not traffic)."""
        return steered(self.scenario)

    @property
    def acting(self) -> torch.Tensor:
        """``[E, R]`` bool: robots the policy steers that are still active (its agents)."""
        return self.active & self.steered

    @property
    def reward_term_names(self) -> tuple[str, ...]:
        """The reward's terms, in the order of ``StepResult.reward_terms``' last axis."""
        return self.rules.term_names

    @property
    def end_conditions(self) -> tuple[str, ...]:
        """The layout's end conditions, in the order of ``StepResult.failures``' last axis."""
        return tuple(self.rules.end_conditions)

    @property
    def env_done(self) -> torch.Tensor:
        """``[E]`` bool: no active robot of the policy left (the step limit is reported by
        :meth:`step`)."""
        return ~self.acting.any(dim=-1)

    # ------------------------------------------------------------------ reset and loading
    def reset(self, mask: torch.Tensor | None = None) -> Observation:
        """Start new episodes in the environments selected by ``mask`` ``[E]`` (all if None).

        Generated environments get a new scenario for the curriculum stage of
        ``curriculum_step``; environments loaded as fixed scenarios restart that scenario.
        Other environments are left untouched. No host sync: on CUDA, scenarios are generated
        for every environment and merged by the mask; on CPU (where indexing reads nothing back
        from a device) only the masked environments are generated.
        """
        mask = self._all_envs if mask is None else self._check_mask(mask)
        # CPU: picking out the resetting environments reads nothing back from a device, and
        # the work then scales with them instead of with E (most steps reset only a few).
        ids = mask.nonzero().squeeze(-1) if self.compact_resets else None
        if ids is not None and ids.numel() == 0:
            return self.observation  # nothing to restart (a shape, not a value, is read)
        restarted = None  # the scenarios of ``ids``, where at hand
        if self._all_fixed:
            self.scenario.assign_(mask, self._templates)
        elif ids is not None:
            restarted = self._generate(self._base.index(ids))
            if self._any_fixed:
                restarted = self._templates.index(ids).select(self._fixed[ids], restarted)
            self.scenario.put_(ids, restarted)
        else:
            new = self._generate(self._base)
            if self._any_fixed:
                new = self._templates.select(self._fixed, new)
            self.scenario.assign_(mask, new)
        self._restart(mask, ids, restarted)
        return self.observation

    def _generate(self, base: Scenario) -> Scenario:
        """``n`` new scenarios from the layout, at the clock ``curriculum_step``."""
        return self.layout.generate(base, self.curriculum_step, self.generator)

    def load_scenarios(
        self,
        scenarios: Sequence[Mapping[str, Any]] | Scenario,
        env_ids: Sequence[int] | None = None,
        fixed: bool = True,
    ) -> Observation:
        """Put environments into exactly the given scenarios (the original's JSON layout).

        Args:
            scenarios: episode dicts, or a :class:`Scenario` with matching slots.
            env_ids: the environments to load into (default ``0 .. len(scenarios) - 1``).
            fixed: if true, :meth:`reset` restarts these environments with the same scenario
                (fixed evaluation sets); otherwise they return to generated scenarios.
        """
        if isinstance(scenarios, Scenario):
            loaded = scenarios.to(device=self.device, dtype=self.dtype)
            if loaded.slots != (self.robot_slots, self.obstacle_slots, self.core_slots):
                raise ValueError(f"scenario slots {loaded.slots} differ from the simulator's")
        else:
            loaded = scenarios_from_dicts(
                scenarios,
                Slots(self.robot_slots, self.obstacle_slots, self.core_slots),
                self.num_substeps,
                dtype=self.dtype,
                device=self.device,
            )
        count = loaded.num_envs
        ids = list(range(count)) if env_ids is None else [int(i) for i in env_ids]
        if len(ids) != count:
            raise ValueError(f"{count} scenarios but {len(ids)} env_ids")
        if len(set(ids)) != len(ids) or any(not 0 <= i < self.num_envs for i in ids):
            raise ValueError(f"env_ids must be distinct and in [0, {self.num_envs}), got {ids}")
        index = torch.tensor(ids, device=self.device)
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[index] = True
        for name, value in loaded.tensors().items():
            getattr(self.scenario, name)[index] = value
            if fixed:
                getattr(self._templates, name)[index] = value
        self._fixed[index] = fixed
        fixed_host = self._fixed.cpu()  # host: load time, not a hot path
        self._any_fixed = bool(fixed_host.any())
        self._all_fixed = bool(fixed_host.all())
        self._cover_kappas()
        self._restart(mask)
        return self.observation

    def export_scenarios(self, env_ids: Sequence[int] | None = None) -> list[dict]:
        """The scenarios (initial conditions) of environments as original-layout dicts."""
        scenario = (
            self.scenario
            if env_ids is None
            else self.scenario.index(torch.as_tensor(list(env_ids), device=self.device))
        )
        return scenarios_to_dicts(scenario, self.num_substeps)

    def _restart(
        self,
        mask: torch.Tensor,
        ids: torch.Tensor | None = None,
        restarted: Scenario | None = None,
    ) -> None:
        """Initial state from ``self.scenario`` for envs in ``mask`` (whose indices are
        ``ids``, and scenarios ``restarted``, when the caller has them); other environments
        untouched."""
        s = self.scenario
        env2 = mask.view(-1, 1)
        env3 = mask.view(-1, 1, 1)
        current = self._current(s.start)
        velocity = s.init_velocity_r.clone()
        velocity[..., :2] += current
        st = self.state
        torch.where(env3, s.start, st.pos, out=st.pos)
        torch.where(env2, s.init_theta, st.theta, out=st.theta)
        torch.where(env3, s.init_velocity_r, st.velocity_r, out=st.velocity_r)
        torch.where(env3, velocity, st.velocity, out=st.velocity)
        torch.where(env3, s.init_thrust, st.thrust, out=st.thrust)
        for flag in (self.collision, self.reach_goal, self.deactivated, self.apply_colregs):
            flag.masked_fill_(env2, False)
        self.waypoint.masked_fill_(env2, 0)
        if self.rules.closest_approach:
            start = approach_now(s.start, s.init_theta, s.init_speed)
            for kept, now in zip(self.closest, start, strict=True):
                torch.where(env3, now, kept, out=kept)
        self.episode_steps.masked_fill_(mask, 0)
        if ids is None:
            self._observe(mask=mask)
        else:
            self._observe(ids=ids, restarted=restarted)

    # ------------------------------------------------------------------ stepping
    def step(self, actions: torch.Tensor) -> StepResult:
        """Advance every environment by one step (0.5 s with the defaults).

        Args:
            actions: discrete ``[E, R]`` int64 indices in ``0..24`` (``a = 5 i + j`` means
                left change ``table[i]``, right change ``table[j]``), or continuous
                ``[E, R, 2]`` floats in ``[-1, 1]`` (change rates ``1000 a`` N/s). Actions of
                inactive robots are ignored.
        """
        self._check_actions(actions)
        noise = self._draw_noise(self.num_envs)
        new = self._advance(actions, noise.gauss, noise.radius_uniform)
        st = self.state
        for name in VesselState.__dataclass_fields__:
            getattr(st, name).copy_(new[name])
        for name in ("collision", "reach_goal", "deactivated", "apply_colregs", "waypoint"):
            getattr(self, name).copy_(new[name])
        if self.rules.closest_approach:
            for kept, now in zip(self.closest, new["closest"], strict=True):
                kept.copy_(now)
        self.observation = Observation(
            self_state=new["self_state"], objects=new["objects"], objects_mask=new["objects_mask"]
        )
        self.episode_steps += 1
        self.curriculum_step += self.num_envs
        return StepResult(**{name: new[name] for name in StepResult.__dataclass_fields__})

    def _make_advance(self):
        """:meth:`_step_core` as :meth:`step` runs it: eager, compiled and / or a CUDA graph."""
        advance = (
            torch.compile(self._step_core, fullgraph=True, dynamic=False)
            if self.compiled
            else self._step_core
        )
        if self.cudagraphs:
            from tensordict.nn import CudaGraphModule  # tensors only: no TorchRL in sim/

            advance = CudaGraphModule(advance, warmup=2)
        return advance

    def _step_core(
        self, actions: torch.Tensor, gauss: torch.Tensor, radius_uniform: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The arithmetic of :meth:`step` as a pure function (what ``compile=True`` compiles):
        physics and perception, then the rules of ``rules.py`` on the step's events.

        Reads the simulator's buffers, writes nothing; the random numbers come in as tensors
        so that eager and compiled steps consume the same stream. Returns the new state,
        flags and observation, and the :class:`StepResult` fields, by name.
        """
        s, st = self.scenario, self.state
        active = self.active
        policy = steered(s)
        waypoint = advance_waypoints(s, st.pos, self.waypoint)
        thrust_rate = torch.where(
            policy.unsqueeze(-1),
            self._thrust_rate(actions, active),
            traffic_thrust_rate(s, st, waypoint, s.dt * self.num_substeps),
        )
        moved = integrate_step(st, thrust_rate, self.num_substeps, s, self._current)
        a2, a3 = active, active.unsqueeze(-1)
        state = VesselState(
            pos=torch.where(a3, moved.pos, st.pos),
            theta=torch.where(a2, moved.theta, st.theta),
            velocity_r=torch.where(a3, moved.velocity_r, st.velocity_r),
            velocity=torch.where(a3, moved.velocity, st.velocity),
            thrust=torch.where(a3, moved.thrust, st.thrust),
        )
        seen, apply, phi = self._perceive(
            state, active, PerceptionNoise(gauss=gauss, radius_uniform=radius_uniform)
        )
        # The task's rules (reward, outcome codes, termination) on what the physics and
        # perception produced.
        events = StepEvents(
            acted=active,
            deactivated=self.deactivated,
            goal_distance_before=goal_distance(s, st.pos),
            goal_distance_after=goal_distance(s, state.pos),
            apply_colregs=torch.where(active, apply, self.apply_colregs),
            turn_angle=phi,
            collision=self.collision | (active & seen.collision),
            reach_goal=self.reach_goal | (active & seen.reach_goal),
            timeout=step_limit_reached(self.episode_steps, self.max_episode_steps),
            pos=state.pos,
            theta=state.theta,
            pos_before=st.pos,
            theta_before=st.theta,
            velocity=state.velocity[..., :2],
            velocity_before=st.velocity[..., :2],
            first_step=self.episode_steps == 0,
        )
        if self.rules.closest_approach:  # a host flag of the layout: fixed for the graph
            events.closest_before = self.closest
            speed = torch.linalg.vector_norm(state.velocity_r[..., :2], dim=-1)
            events.closest = closer(self.closest, approach_now(state.pos, state.theta, speed))
        # a layout's end condition ends a robot's episode as a collision does (sim.rules)
        failures = self.rules.failures(s, events) & active.unsqueeze(-1)
        if failures.shape[-1]:
            events.collision = events.collision | failures.any(dim=-1)
        terms = reward_terms(s, events, self.rules)
        reward = total_reward(terms)
        end = terminate(s, events)
        energy = step_energy(state.thrust, s, self.num_substeps)
        obs = seen.observation
        return {
            "pos": state.pos, "theta": state.theta, "velocity_r": state.velocity_r,
            "velocity": state.velocity, "thrust": state.thrust,
            "collision": events.collision, "reach_goal": events.reach_goal,
            "deactivated": end.deactivated, "apply_colregs": events.apply_colregs,
            "waypoint": waypoint, "failures": failures,
            "closest": events.closest,
            "self_state": obs.self_state, "objects": obs.objects,
            "objects_mask": obs.objects_mask,
            "reward": reward, "reward_terms": terms, "done": end.done,
            "info": outcome_codes(s, events),
            "was_active": active, "terminated": end.terminated, "truncated": end.truncated,
            "energy": torch.where(active, energy, torch.zeros_like(energy)),
            "env_done": end.env_done, "env_truncated": end.env_truncated,
        }  # fmt: skip

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where the simulator is (checkpoints)."""
        st = self.state
        return {
            "scenario": {k: v.clone() for k, v in self.scenario.tensors().items()},
            "templates": {k: v.clone() for k, v in self._templates.tensors().items()},
            "fixed": self._fixed.clone(),
            "state": {name: getattr(st, name).clone() for name in VesselState.__dataclass_fields__},
            "flags": {
                name: getattr(self, name).clone()
                for name in ("collision", "reach_goal", "deactivated", "apply_colregs", "waypoint")
            },
            "closest": {name: kept.clone() for name, kept in self.closest._asdict().items()},
            "episode_steps": self.episode_steps.clone(),
            "curriculum_step": self.curriculum_step.clone(),
            "observation": {
                "self_state": self.observation.self_state, "objects": self.observation.objects,
                "objects_mask": self.observation.objects_mask,
            },
            "generator": self.generator.get_state(),
        }  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` taken from a simulator of the same shape."""
        # a checkpoint written before traffic existed lacks its fields: they keep their
        # defaults (every vessel steered by the policy, no route, the layout's part 0)
        for name, value in state["scenario"].items():
            getattr(self.scenario, name).copy_(value)
        for name, value in state["templates"].items():
            getattr(self._templates, name).copy_(value)
        self._fixed.copy_(state["fixed"])
        fixed_host = self._fixed.cpu()  # host: checkpoint loading, not a hot path
        self._any_fixed, self._all_fixed = bool(fixed_host.any()), bool(fixed_host.all())
        for name, value in state["state"].items():
            getattr(self.state, name).copy_(value)
        for name, value in state["flags"].items():
            getattr(self, name).copy_(value)
        # a checkpoint written before the closest approaches were kept lacks them: they start
        # where the vessels are (the rest of those episodes reads no earlier approach)
        speed = torch.linalg.vector_norm(self.state.velocity_r[..., :2], dim=-1)
        now = approach_now(self.state.pos, self.state.theta, speed)._asdict()
        for name, value in {**now, **state.get("closest", {})}.items():
            getattr(self.closest, name).copy_(value)
        self._cover_kappas()
        self.episode_steps.copy_(state["episode_steps"])
        self.curriculum_step.copy_(state["curriculum_step"])
        self.observation = Observation(
            **{k: v.to(self.device).clone() for k, v in state["observation"].items()}
        )
        self.generator.set_state(state["generator"])

    # ------------------------------------------------------------------ internals
    def _cover_kappas(self) -> None:
        """Radius-noise tables for every ``r_kappa`` a reset can bring (host read, load time)."""
        kappas = torch.cat(
            [t.r_kappa.reshape(-1) for t in (self._base, self.scenario, self._templates)]
            + [self.layout.radius_noise_kappas(self._base).reshape(-1)]
        )
        if not self._radius_noise.covers(kappas):
            self._radius_noise = VonMisesTable.for_values(kappas)
            if self.cudagraphs:  # a captured graph reads the old tables: capture anew
                self._advance = self._make_advance()

    def _current(self, points: torch.Tensor) -> torch.Tensor:
        s = self.scenario
        return current_velocity(
            points, s.core_pos, s.core_clockwise, s.core_gamma, s.core_present, s.core_radius
        )

    def _draw_noise(self, num_envs: int) -> PerceptionNoise:
        """Perception noise for ``num_envs`` environments from the simulator's stream."""
        shape = (num_envs, self.robot_slots, self.obstacle_slots + self.robot_slots)
        return PerceptionNoise.draw(shape, self.dtype, self.device, self.generator)

    def _perceive(
        self,
        state: VesselState,
        active: torch.Tensor,
        noise: PerceptionNoise,
        scenario: Scenario | None = None,
    ) -> tuple[PerceptionResult, torch.Tensor, torch.Tensor]:
        """Perceive and evaluate COLREGs from ``state``; pure (writes nothing).

        Every environment, or with ``scenario`` (``k`` environments) only those (``state`` and
        ``active`` then hold just them too). Returns the perception, the COLREGs flag (active
        robots only) and the turn angle ``phi``.
        """
        s = self.scenario if scenario is None else scenario
        compact = self.compact_perception and not torch.compiler.is_compiling()
        seen = perceive(
            state, s, active, noise, self._radius_noise, self._robot_index, self._slot_index,
            compact=compact,
        )  # fmt: skip
        # traffic has no goal to reach and sails through contact: the policy's vessel in
        # contact with it is the one that fails (docs/simulator.md, "Traffic")
        policy = steered(s)
        seen.reach_goal = seen.reach_goal & policy
        seen.collision = seen.collision & policy
        obs = seen.observation
        apply, phi = colregs_turn(obs.objects, obs.objects_mask, obs.self_state[..., 2:4], s.radius)
        return seen, apply & active, phi

    def _observe(
        self,
        mask: torch.Tensor | None = None,
        ids: torch.Tensor | None = None,
        restarted: Scenario | None = None,
    ) -> None:
        """Perceive the restarted environments and update observation and flags.

        With ``ids`` (int64 ``[k]``) only those environments are perceived, with
        ``restarted`` their scenarios (``self.scenario`` at ``ids``); with ``mask`` (bool
        ``[E]``) all are perceived and the masked ones kept. Observation tensors are replaced,
        never written in place, so tensors handed out earlier (e.g. a terminal observation in
        a replay buffer) keep their values.
        """
        st = self.state
        if ids is not None:
            if restarted is None:
                restarted = self.scenario.index(ids)
            state = VesselState(
                **{n: getattr(st, n).index_select(0, ids) for n in VesselState.__dataclass_fields__}
            )
            active = restarted.robot_present & ~self.deactivated.index_select(0, ids)
            noise = self._draw_noise(ids.numel())
            seen, apply, _ = self._perceive(state, active, noise, restarted)
            obs, old = seen.observation, self.observation
            self.observation = Observation(
                self_state=old.self_state.index_copy(0, ids, obs.self_state),
                objects=old.objects.index_copy(0, ids, obs.objects),
                objects_mask=old.objects_mask.index_copy(0, ids, obs.objects_mask),
            )
            for flag, hit in ((self.collision, seen.collision), (self.reach_goal, seen.reach_goal)):
                flag.index_copy_(0, ids, flag.index_select(0, ids) | hit)
            old_apply = self.apply_colregs.index_select(0, ids)
            self.apply_colregs.index_copy_(0, ids, torch.where(active, apply, old_apply))
            return
        active = self.active
        seen, apply, _ = self._perceive(st, active, self._draw_noise(self.num_envs))
        obs, old = seen.observation, self.observation
        if mask is not None:
            env2, env3 = mask.view(-1, 1), mask.view(-1, 1, 1)
            obs = Observation(
                self_state=torch.where(env3, obs.self_state, old.self_state),
                objects=torch.where(env3.unsqueeze(-1), obs.objects, old.objects),
                objects_mask=torch.where(env3, obs.objects_mask, old.objects_mask),
            )
            active = active & env2
        self.observation = obs
        self.collision |= active & seen.collision
        self.reach_goal |= active & seen.reach_goal
        torch.where(active, apply, self.apply_colregs, out=self.apply_colregs)

    def _check_mask(self, mask: torch.Tensor) -> torch.Tensor:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise ValueError("reset mask must be a bool tensor")
        if mask.shape != (self.num_envs,):
            raise ValueError(
                f"reset mask must have shape ({self.num_envs},), got {tuple(mask.shape)}"
            )
        return mask.to(self.device)

    def _check_actions(self, actions: torch.Tensor) -> None:
        """Type, device and shape checks (free); value checks in validation mode (a sync)."""
        E, R = self.num_envs, self.robot_slots
        if not isinstance(actions, torch.Tensor):
            raise ValueError(f"actions must be a torch.Tensor, got {type(actions).__name__}")
        if actions.device != self.device:
            raise ValueError(f"actions are on {actions.device}, the simulator on {self.device}")
        if self.action_kind == "discrete":
            if actions.shape != (E, R):
                raise ValueError(
                    f"discrete actions must have shape ({E}, {R}), got {tuple(actions.shape)}"
                )
            if actions.dtype not in (
                torch.int64,
                torch.int32,
                torch.int16,
                torch.int8,
                torch.uint8,
            ):
                raise ValueError(f"discrete actions must be integer indices, got {actions.dtype}")
            if self.validate:
                bad = self.active & ((actions < 0) | (actions >= NUM_DISCRETE_ACTIONS))
                if bad.any():  # validation mode only: a host sync
                    raise ValueError("discrete action index outside 0..24 for an active robot")
            return
        if actions.shape != (E, R, 2):
            raise ValueError(
                f"continuous actions must have shape ({E}, {R}, 2), got {tuple(actions.shape)}"
            )
        if not actions.is_floating_point():
            raise ValueError(f"continuous actions must be floating point, got {actions.dtype}")
        if self.validate:
            acting = self.active.unsqueeze(-1)
            if (acting & ~torch.isfinite(actions)).any():  # validation mode only: a host sync
                raise ValueError("continuous action is NaN or infinite for an active robot")
            outside = acting & (actions.abs() > 1.0)
            if outside.any():  # validation mode only: a host sync
                worst = actions[outside].abs().max().item()  # host: validation mode only
                raise ValueError(
                    f"continuous action outside [-1, 1] for an active robot (|a| = {worst:g}); "
                    "the action is a fraction of the thrust rate limit (docs/environment.md)"
                )

    def _thrust_rate(self, actions: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """Map checked actions to thrust change rates ``[E, R, 2]`` (N/s)."""
        if self.action_kind == "discrete":
            index = actions.long().clamp(0, NUM_DISCRETE_ACTIONS - 1)
            pairs = self._action_pairs[index]  # [E, R, 2] table indices (left, right)
            return torch.gather(self.scenario.thrust_change, -1, pairs.unsqueeze(-1)).squeeze(-1)
        # outside validation mode, actions beyond the spec's [-1, 1] are clamped to it
        actions = torch.where(active.unsqueeze(-1), actions.to(self.dtype).clamp(-1.0, 1.0), 0.0)
        return CONTINUOUS_THRUST_RATE * actions


def _schedule_for_slots(robots: int, obstacles: int, cores: int) -> CurriculumSchedule:
    """A one-stage schedule filling the given slots (used for fixed scenario sets)."""
    return CurriculumSchedule(
        timesteps=[0],
        num_robots=[robots],
        num_cores=[cores],
        num_obstacles=[obstacles],
        min_start_goal_dis=[30.0],
    )


__all__ = ["ActionKind", "MarineNavSimulator", "StepResult"]
