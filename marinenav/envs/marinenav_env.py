"""``MarineNavEnv``: the batched simulator as a multi-agent TorchRL environment.

Layout (``E`` environments, ``R`` robot slots), following TorchRL's multi-agent conventions:

=====================================  ============  =======================================
key                                    shape         meaning
=====================================  ============  =======================================
``("agents", "self_state")``           ``[E, R, 7]`` goal, velocity, yaw rate, thrusts; robot frame
``("agents", "objects")``              ``[E, R, 5, 5]`` 5 nearest objects, robot frame
``("agents", "objects_mask")``         ``[E, R, 5]`` bool, real objects
``("agents", "active")``               ``[E, R]``    bool, the robot acts in this state
``("agents", "info")``                 ``[E, R]``    int64 ``InfoState`` of the last step
``("agents", "energy")``               ``[E, R, 1]`` thrust energy of the last step
``("agents", "reward_terms")``         ``[E, R, T]`` the last step's reward by term (``T`` terms
                                                    of ``sim.reward_term_names``, in order)
``("agents", "failures")``             ``[E, R, K]`` bool, the layout's end conditions met on the
                                                    last step (``sim.end_conditions``; only
                                                    for a layout that has some)
``("agents", "action")``               ``[E, R]`` / ``[E, R, 2]`` index 0..24 or values in [-1, 1]
``("agents", "reward")``               ``[E, R, 1]`` 0 for robots inactive before the step
``("agents", "terminated")``           ``[E, R, 1]`` the robot's episode ended (collision, goal, or
                                                    earlier; padding slots are always terminated)
``("agents", "truncated")``            ``[E, R, 1]`` cut by the step limit while active
``("agents", "done")``                 ``[E, R, 1]`` terminated or truncated
``"done"``, ``"terminated"``,          ``[E, 1]``    the environment's episode ended: no robot
``"truncated"``                                     active (terminated) or the step limit
                                                    (truncated)
``"is_init"``                          ``[E, 1]``    bool, the environment's episode starts here
                                                    (what TorchRL's ``InitTracker`` writes, so
                                                    collectors need not add one)
=====================================  ============  =======================================

Learning data: a transition ``(td, td["next"])`` of robot slot ``(e, r)`` is valid iff
``td["agents", "active"][e, r]`` (the robot acted); terminal transitions are kept and carry
their ``next`` observation, which resets never overwrite. Traffic (vessels the policy does
not steer, docs/simulator.md, "Traffic") is never ``active``: its slots read as padding does
(``done``, zero reward, the ``TRAFFIC`` outcome), while the policy's robots perceive it.

Resets are per environment, through the root ``"_reset"`` mask; robots cannot be reset alone.
:meth:`any_done` therefore looks at the root ``done`` only, so ``step_and_maybe_reset`` and
TorchRL collectors restart an environment when its episode ends, not when one robot finishes.
``rollout`` with the default ``break_when_any_done=True`` stops at the first robot that
finishes (every done key counts there); use ``break_when_any_done=False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Binary, Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase, TransformedEnv

from marinenav.envs.trail import TrailRecorder
from marinenav.keys import (
    ACTION,
    ACTION_KEY,
    ACTIVE,
    DONE,
    ENERGY,
    FAILURES,
    GROUP,
    INFO,
    OBJECTS,
    OBJECTS_MASK,
    REWARD,
    REWARD_KEY,
    REWARD_TERMS,
    SELF_STATE,
    TERMINATED,
    TRUNCATED,
)
from marinenav.scenarios import ScenarioLayout
from marinenav.sim import InfoState, MarineNavSimulator
from marinenav.sim.constants import MAX_OBJECTS, NUM_DISCRETE_ACTIONS, OBJECT_DIM, SELF_STATE_DIM
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.sim.rules import cut_at_first_collision, reset_codes
from marinenav.sim.simulator import ActionKind


class MarineNavEnv(EnvBase):
    """Multi-robot marine navigation as a batched TorchRL environment.

    Args:
        num_envs: ``E``, the batch size.
        action_kind: ``"discrete"`` (25 thrust-change pairs) or ``"continuous"`` (2 values).
        num_robots, num_obstacles, num_cores, min_start_goal_dis: a single curriculum stage
            (instead of ``schedule``).
        schedule: curriculum; default the original's 6 stages.
        scenarios: scenario dicts in the original's JSON layout, one environment each, reset
            to the same scenario every episode (a fixed evaluation set); sets ``num_envs``.
        robot_slots, obstacle_slots, core_slots: padding; default to what the stages or
            scenarios need.
        end_on_collision: end an environment's episode at the first collision, as the
            original's evaluation does (docs/training.md, "Evaluation"); training leaves it off.
        device, dtype, seed, max_episode_steps, validate: see :class:`MarineNavSimulator`.
        compile_step: the simulator's ``compile`` (``torch.compile`` of its step, one graph).
            TorchRL's own ``compile=`` keyword of every env is a different thing: it compiles
            the whole ``step_and_maybe_reset`` around the simulator.
        cudagraph_step: the simulator's ``cudagraphs`` (its step replayed as a CUDA graph).
        render_env: the environment whose trajectories :meth:`render` draws.
        layout: a scenario layout (:mod:`marinenav.scenarios`, e.g.
            ``make_layout("harbour")``) instead of the curriculum's random scenarios.
    """

    batch_locked = True

    def __init__(
        self,
        num_envs: int = 1,
        action_kind: ActionKind = "discrete",
        *,
        num_robots: int | None = None,
        num_obstacles: int = 0,
        num_cores: int = 0,
        min_start_goal_dis: float = 30.0,
        schedule: CurriculumSchedule | Mapping[str, Sequence[float]] | None = None,
        scenarios: Sequence[Mapping[str, Any]] | None = None,
        robot_slots: int | None = None,
        obstacle_slots: int | None = None,
        core_slots: int | None = None,
        end_on_collision: bool = False,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        seed: int = 0,
        max_episode_steps: int = 1000,
        validate: bool = True,
        compile_step: bool = False,
        cudagraph_step: bool = False,
        render_env: int = 0,
        layout: ScenarioLayout | None = None,
    ) -> None:
        if num_robots is not None:
            if isinstance(num_robots, bool) or not isinstance(num_robots, int) or num_robots < 1:
                raise ValueError(f"num_robots must be a positive int, got {num_robots!r}")
            if schedule is not None or layout is not None:
                raise ValueError(
                    "give one of num_robots (one stage), schedule or layout, not several"
                )
            schedule = CurriculumSchedule(
                timesteps=[0], num_robots=[num_robots], num_cores=[num_cores],
                num_obstacles=[num_obstacles], min_start_goal_dis=[min_start_goal_dis],
            )  # fmt: skip
        common = dict(
            robot_slots=robot_slots, obstacle_slots=obstacle_slots, core_slots=core_slots,
            schedule=schedule, device=device, dtype=dtype, seed=seed,
            max_episode_steps=max_episode_steps, validate=validate, compile=compile_step,
            cudagraphs=cudagraph_step, layout=layout,
        )  # fmt: skip
        if scenarios is not None:
            sim = MarineNavSimulator.from_scenarios(scenarios, action_kind, **common)
        else:
            sim = MarineNavSimulator(num_envs, action_kind, **common)
        super().__init__(device=sim.device, batch_size=torch.Size([sim.num_envs]))
        self.sim = sim
        self.end_on_collision = end_on_collision
        self._make_specs()
        self.trail = TrailRecorder(sim, render_env)  # positions of one env, for render()
        self.trail.record()

    @classmethod
    def from_scenarios(cls, scenarios: Sequence[Mapping[str, Any]], **kwargs: Any) -> MarineNavEnv:
        """One environment per scenario dict (original JSON layout), a fixed evaluation set."""
        return cls(len(scenarios), scenarios=scenarios, **kwargs)

    # ------------------------------------------------------------------ specs
    @property
    def num_envs(self) -> int:
        return self.sim.num_envs

    @property
    def num_robots(self) -> int:
        """Robot slots ``R``."""
        return self.sim.robot_slots

    @property
    def action_kind(self) -> ActionKind:
        return self.sim.action_kind

    def _make_specs(self) -> None:
        E, R, device, dtype = self.num_envs, self.num_robots, self.device, self.sim.dtype
        agents = (E, R)

        def flag(*shape: int) -> Categorical:
            return Categorical(2, shape=torch.Size(shape), dtype=torch.bool, device=device)

        self.observation_spec = Composite(
            {
                GROUP: Composite(
                    {
                        SELF_STATE: Unbounded((*agents, SELF_STATE_DIM), dtype=dtype,
                                              device=device),
                        OBJECTS: Unbounded((*agents, MAX_OBJECTS, OBJECT_DIM), dtype=dtype,
                                           device=device),
                        OBJECTS_MASK: Binary(n=MAX_OBJECTS, shape=(*agents, MAX_OBJECTS),
                                             dtype=torch.bool, device=device),
                        ACTIVE: flag(*agents),
                        INFO: Categorical(len(InfoState), shape=agents, dtype=torch.int64,
                                          device=device),
                        ENERGY: Unbounded((*agents, 1), dtype=dtype, device=device),
                        REWARD_TERMS: Unbounded((*agents, len(self.sim.reward_term_names)),
                                                dtype=dtype, device=device),
                        **self._failure_spec(agents),
                    },
                    shape=agents,
                ),
                "is_init": flag(E, 1),
            },
            shape=(E,),
        )  # fmt: skip
        if self.action_kind == "discrete":
            action = Categorical(NUM_DISCRETE_ACTIONS, shape=agents, dtype=torch.int64,
                                 device=device)  # fmt: skip
        else:
            action = Bounded(-1.0, 1.0, shape=(*agents, 2), dtype=dtype, device=device)
        self.action_spec = Composite({GROUP: Composite({ACTION: action}, shape=agents)},
                                     shape=(E,))  # fmt: skip
        self.reward_spec = Composite(
            {GROUP: Composite({REWARD: Unbounded((*agents, 1), dtype=dtype, device=device)},
                              shape=agents)},
            shape=(E,),
        )  # fmt: skip
        self.done_spec = Composite(
            {
                DONE: flag(E, 1), TERMINATED: flag(E, 1), TRUNCATED: flag(E, 1),
                GROUP: Composite(
                    {DONE: flag(*agents, 1), TERMINATED: flag(*agents, 1),
                     TRUNCATED: flag(*agents, 1)},
                    shape=agents,
                ),
            },
            shape=(E,),
        )  # fmt: skip

    def _failure_spec(self, agents: tuple[int, int]) -> dict[str, Binary]:
        """``("agents", "failures")``, where the layout has end conditions of its own."""
        count = len(self.sim.end_conditions)
        if not count:
            return {}
        shape = (*agents, count)
        return {FAILURES: Binary(n=count, shape=shape, dtype=torch.bool, device=self.device)}

    # ------------------------------------------------------------------ TorchRL hooks
    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self.sim.generator.manual_seed(seed)

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Whether an environment's episode ended (root ``done`` only; robots finishing early
        do not restart anything). Writes the root ``"_reset"`` mask. A host read, as in
        TorchRL's own implementation."""
        done = tensordict.get(DONE, None)
        if done is None:
            return False
        any_done = bool(done.any())  # host: TorchRL's maybe_reset contract returns a bool
        if any_done:
            tensordict.set("_reset", done.clone())
        return any_done

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        mask = None
        if tensordict is not None:
            root = tensordict.get("_reset", None)
            if root is not None:
                mask = root.reshape(self.num_envs)
            elif tensordict.get((GROUP, "_reset"), None) is not None:
                # robots cannot be reset alone: only a root reset restarts an environment
                mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        self.sim.reset(mask)
        self.trail.record()
        out = self.observe()
        started = torch.ones_like(out.get("is_init")) if mask is None else mask.unsqueeze(-1)
        out.set("is_init", started)
        return out

    def observe(self) -> TensorDict:
        """The current observations as a step input (what ``reset`` returns), without
        restarting anything: e.g. to continue from a restored simulator state."""
        sim = self.sim
        zeros = torch.zeros(self.num_envs, 1, dtype=torch.bool, device=self.device)
        empty = (~sim.steered).unsqueeze(-1)
        theta = sim.state.theta
        return self._output(
            active=sim.acting, info=reset_codes(sim.scenario),
            energy=torch.zeros_like(theta).unsqueeze(-1),
            reward_terms=theta.new_zeros(*theta.shape, len(sim.reward_term_names)),
            failures=torch.zeros(*theta.shape, len(sim.end_conditions), dtype=torch.bool,
                                 device=self.device),
            agent_flags=(empty, empty, torch.zeros_like(empty)), root_flags=(zeros, zeros, zeros),
        )  # fmt: skip

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        result = self.sim.step(tensordict.get(ACTION_KEY))
        self.trail.record()
        active_after = self.sim.acting
        truncated = result.truncated
        env_done, env_truncated = result.env_done, result.env_truncated
        if self.end_on_collision:
            truncated, env_done = cut_at_first_collision(
                result.info, active_after, truncated, env_done
            )
        terminated = ~active_after & ~truncated
        agent_flags = (
            (terminated | truncated).unsqueeze(-1),
            terminated.unsqueeze(-1),
            truncated.unsqueeze(-1),
        )
        root_flags = (
            env_done.unsqueeze(-1),
            (env_done & ~env_truncated).unsqueeze(-1),
            env_truncated.unsqueeze(-1),
        )
        out = self._output(
            active=active_after,
            info=result.info,
            energy=result.energy.unsqueeze(-1),
            reward_terms=result.reward_terms,
            failures=result.failures,
            agent_flags=agent_flags,
            root_flags=root_flags,
        )
        out.set(REWARD_KEY, result.reward.unsqueeze(-1))
        return out

    def _output(
        self,
        *,
        active: torch.Tensor,
        info: torch.Tensor,
        energy: torch.Tensor,
        reward_terms: torch.Tensor,
        failures: torch.Tensor,
        agent_flags: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        root_flags: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    ) -> TensorDict:
        obs = self.sim.observation
        E, R = self.num_envs, self.num_robots
        agents = TensorDict(
            {
                SELF_STATE: obs.self_state, OBJECTS: obs.objects,
                OBJECTS_MASK: obs.objects_mask, ACTIVE: active, INFO: info,
                ENERGY: energy, REWARD_TERMS: reward_terms, DONE: agent_flags[0],
                TERMINATED: agent_flags[1],
                TRUNCATED: agent_flags[2],
            },
            batch_size=(E, R), device=self.device,
        )  # fmt: skip
        if failures.shape[-1]:
            agents.set(FAILURES, failures)
        return TensorDict(
            {GROUP: agents, DONE: root_flags[0], TERMINATED: root_flags[1],
             TRUNCATED: root_flags[2], "is_init": torch.zeros_like(root_flags[0])},
            batch_size=(E,), device=self.device,
        )  # fmt: skip

    # ------------------------------------------------------------------ sync-free loop
    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """Step, then restart the environments whose episode ended, without reading anything
        back to the host (TorchRL's ``step_and_maybe_reset`` asks the host whether any episode
        ended). Returns ``(step_output, next_input)``: the step's output (the ``"next"`` data
        of the transition, terminal observations included) and the input of the next step
        (reset environments start their new episode, the others continue).

        This is the bare environment's loop. Around a ``TransformedEnv`` use the module's
        :func:`step_and_reset` (``step_and_reset(transformed_env, td)``), which runs the
        transforms: ``transformed_env.step_and_reset`` reaches this method through TorchRL's
        attribute forwarding and would skip them.
        """
        return step_and_reset(self, tensordict)

    # ------------------------------------------------------------------ people
    def render(self, path: str | None = None, **kwargs: Any):
        """An RGB image ``[H, W, 3]`` uint8 of environment ``render_env`` with its
        trajectories so far (and a PNG file if ``path``); see :mod:`marinenav.viz`."""
        return self.trail.render(path=path, **kwargs)


def step_and_reset(
    env: EnvBase, tensordict: TensorDictBase
) -> tuple[TensorDictBase, TensorDictBase]:
    """:meth:`MarineNavEnv.step_and_reset` for a ``MarineNavEnv`` or a ``TransformedEnv`` (any
    depth) around one, with the transforms honoured: their ``_step`` sees every step and their
    ``_reset`` every restart, as in ``rollout``.

    Args:
        env: a ``MarineNavEnv`` (``E`` environments, ``R`` robot slots), or transforms around one.
        tensordict: the step input ``[E]`` (observations and ``("agents", "action")``).

    Returns:
        ``(step_output, next_input)``, both ``[E]``: the transformed step output, and the input
        of the next step, where the environments whose (transformed) root ``done`` is set
        restart (root ``"_reset"`` ``[E, 1]``, and ``("agents", "_reset")`` ``[E, R, 1]`` for
        transforms that keep per-robot entries). Nothing is read back to the host by this
        function; the transforms' own code decides whether they do (``StepCounter``,
        ``RewardSum`` and ``InitTracker`` do not; TorchRL's ``ObservationNorm`` reads its
        ``standard_normal`` flag, a tensor, at every call: ``tests/test_env_transforms.py``).
    """
    base = env
    while isinstance(base, TransformedEnv):
        base = base.base_env
    if not isinstance(base, MarineNavEnv):
        raise TypeError(f"step_and_reset runs a MarineNavEnv (or transforms around one), not "
                        f"{type(base).__name__}")  # fmt: skip
    out = env._step(tensordict)
    done = out.get(DONE)
    if env is base:
        restart = TensorDict({"_reset": done}, batch_size=env.batch_size)
    else:
        restart = out.clone(recurse=False)
        restart.set("_reset", done)
        restart.set((GROUP, "_reset"), done.unsqueeze(-1).expand(*base.sim.active.shape, 1))
    return out, env._reset(restart)


def transition(step_input: TensorDictBase, step_output: TensorDictBase) -> TensorDictBase:
    """One batched step as a transition ``[E]`` in TorchRL's layout (what ``EnvBase.step``
    returns): ``step_input`` (the observations the policy acted on and what it wrote,
    ``("agents", "action")`` among them) with ``step_output`` (the step's result before any
    restart, from :func:`step_and_reset`) under ``"next"``. ``step_input`` is extended in place
    and returned; nothing is copied. The trainer hands this to its learners."""
    return step_input.set("next", step_output)

