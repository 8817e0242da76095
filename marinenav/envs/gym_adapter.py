"""Gymnasium adapters for tools built on Gymnasium (numpy in, numpy out).

* ``gymnasium.make_vec("marinenav/MarineNav-v0", num_envs=E, ...)`` gives
  :class:`MarineNavVectorEnv`, a ``gymnasium.vector.VectorEnv`` whose sub-environments are the
  robot slots of ``E`` simulated environments (``E * robot_slots`` sub-environments).
* ``gymnasium.make("marinenav/MarineNav-v0", ...)`` gives :class:`MarineNavSingleEnv`, one
  robot alone in one environment. Gymnasium's ``make`` only returns ``gymnasium.Env``
  instances, so the vector form goes through ``make_vec``; the single form passes
  ``gymnasium.utils.env_checker.check_env``. Its ``step`` raises Gymnasium's ``ResetNeeded``
  before the first ``reset`` and after an episode ended (terminated or truncated) until the
  next ``reset``: a finished robot has no observation to give.

Observation of one robot: a flat ``float32`` vector of 37 numbers, ``self_state (7)``, the 5 x 5
``objects`` row by row (25), ``objects_mask (5)`` as 0/1. Actions: ``Discrete(25)`` or
``Box(-1, 1, (2,))``.

Sub-environment semantics (vector form, autoreset ``NEXT_STEP``): a robot's episode ends with
``terminated`` (collision, goal) or ``truncated`` (step limit). Robots are not reset alone: a
robot that finished waits until its environment's episode ends (zero observation, reward 0,
neither terminated nor truncated, ``infos["active"]`` false: drop those transitions). The step
after an environment's episode ended resets it: its robots return their first observation with
reward 0 and their actions are ignored, as Gymnasium's next-step autoreset does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from marinenav.envs.trail import TrailRecorder
from marinenav.sim import MarineNavSimulator
from marinenav.sim.constants import MAX_OBJECTS, NUM_DISCRETE_ACTIONS, OBJECT_DIM, SELF_STATE_DIM
from marinenav.sim.perception import Observation
from marinenav.sim.simulator import ActionKind

FLAT_OBSERVATION_DIM = SELF_STATE_DIM + MAX_OBJECTS * OBJECT_DIM + MAX_OBJECTS  # 37
ENV_ID = "marinenav/MarineNav-v0"


def flatten_observation(obs: Observation) -> torch.Tensor:
    """``[..., 37]`` float32 rows: self state, objects row by row, mask as 0/1."""
    return torch.cat(
        (
            obs.self_state,
            obs.objects.flatten(-2),
            obs.objects_mask.to(obs.self_state.dtype),
        ),
        dim=-1,
    ).float()


def _spaces(action_kind: ActionKind) -> tuple[gym.Space, gym.Space]:
    observation = gym.spaces.Box(-np.inf, np.inf, (FLAT_OBSERVATION_DIM,), np.float32)
    if action_kind == "discrete":
        return observation, gym.spaces.Discrete(NUM_DISCRETE_ACTIONS)
    return observation, gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def _simulator(
    num_envs: int,
    action_kind: ActionKind,
    num_robots: int,
    num_obstacles: int,
    num_cores: int,
    min_start_goal_dis: float,
    schedule: Any,
    seed: int,
    max_episode_steps: int,
) -> MarineNavSimulator:
    if schedule is None:
        schedule = {
            "timesteps": [0], "num_robots": [num_robots], "num_cores": [num_cores],
            "num_obstacles": [num_obstacles], "min_start_goal_dis": [min_start_goal_dis],
        }  # fmt: skip
    return MarineNavSimulator(
        num_envs, action_kind, schedule=schedule, seed=seed, max_episode_steps=max_episode_steps
    )


class MarineNavVectorEnv(VectorEnv):
    """``E`` environments of ``R`` robot slots as ``E * R`` Gymnasium sub-environments.

    Args:
        num_envs: simulated environments ``E``.
        action_kind: ``"discrete"`` or ``"continuous"``.
        num_robots, num_obstacles, num_cores, min_start_goal_dis: one curriculum stage, or
        schedule: a curriculum in the original's dict layout (counted in environment steps).
        seed, max_episode_steps: see :class:`MarineNavSimulator`.
    """

    metadata = {
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": ["rgb_array"],
        "render_fps": 2,
    }

    def __init__(
        self,
        num_envs: int = 1,
        action_kind: ActionKind = "discrete",
        num_robots: int = 3,
        num_obstacles: int = 0,
        num_cores: int = 0,
        min_start_goal_dis: float = 30.0,
        schedule: dict | None = None,
        seed: int = 0,
        max_episode_steps: int = 1000,
        render_mode: str | None = "rgb_array",
    ) -> None:
        self.sim = _simulator(num_envs, action_kind, num_robots, num_obstacles, num_cores,
                              min_start_goal_dis, schedule, seed, max_episode_steps)  # fmt: skip
        self.num_envs = num_envs * self.sim.robot_slots
        self.render_mode = render_mode
        self.single_observation_space, self.single_action_space = _spaces(action_kind)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._pending_reset = np.zeros(num_envs, dtype=bool)
        self._trail = TrailRecorder(self.sim)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every environment (``seed``: an int re-seeds the simulator)."""
        if isinstance(seed, list):
            seed = seed[0]
        if seed is not None:
            self.sim.generator.manual_seed(seed)
            self._np_random_seed = seed
        self.sim.reset()
        self._pending_reset[:] = False
        self._trail.record()
        return self._observation(), self._infos()

    def step(self, actions: np.ndarray):
        E, R = self.sim.num_envs, self.sim.robot_slots
        if self.sim.action_kind == "discrete":
            act = torch.as_tensor(np.asarray(actions, dtype=np.int64).reshape(E, R))
        else:
            act = torch.as_tensor(np.asarray(actions, dtype=np.float32).reshape(E, R, 2))
        act = act.to(device=self.sim.device)
        # Next-step autoreset: every environment steps, then those whose episode ended on the
        # previous call restart, which overwrites what the step did to them.
        restarting = self._pending_reset
        result = self.sim.step(act)
        self.sim.reset(torch.as_tensor(restarting, device=self.sim.device))
        ended = result.env_done.cpu().numpy()  # host: gymnasium returns numpy
        reward = result.reward.flatten().cpu().numpy().astype(np.float32)  # host: gymnasium
        terminated = result.terminated.flatten().cpu().numpy()  # host: gymnasium returns numpy
        truncated = result.truncated.flatten().cpu().numpy()  # host: gymnasium returns numpy
        restarted_robots = np.repeat(restarting, R)
        reward[restarted_robots] = 0.0
        terminated[restarted_robots] = False
        truncated[restarted_robots] = False
        self._pending_reset = ended & ~restarting
        self._trail.record()
        return self._observation(), reward, terminated, truncated, self._infos()

    def _observation(self) -> np.ndarray:
        flat = flatten_observation(self.sim.observation).reshape(self.num_envs, -1)
        return flat.cpu().numpy()  # host: gymnasium returns numpy

    def _infos(self) -> dict[str, Any]:
        active = self.sim.active.flatten().cpu().numpy()  # host: gymnasium returns numpy
        steps = self.sim.episode_steps.repeat_interleave(self.sim.robot_slots)
        return {
            "active": active,
            "_active": np.ones(self.num_envs, dtype=bool),
            "episode_steps": steps.cpu().numpy(),  # host: gymnasium returns numpy
            "_episode_steps": np.ones(self.num_envs, dtype=bool),
        }

    def render(self) -> np.ndarray:
        """RGB image of the first simulated environment with its trajectories so far."""
        return self._trail.render()


class MarineNavSingleEnv(gym.Env):
    """One robot in one environment (obstacles and cores optional) as a ``gymnasium.Env``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}  # one step is 0.5 s

    def __init__(
        self,
        action_kind: ActionKind = "discrete",
        num_obstacles: int = 0,
        num_cores: int = 0,
        min_start_goal_dis: float = 30.0,
        max_episode_steps: int = 1000,
        render_mode: str | None = None,
    ) -> None:
        self.sim = _simulator(1, action_kind, 1, num_obstacles, num_cores, min_start_goal_dis,
                              None, 0, max_episode_steps)  # fmt: skip
        self.observation_space, self.action_space = _spaces(action_kind)
        self.render_mode = render_mode
        self._trail = TrailRecorder(self.sim)
        # why step() must wait for reset(), or None while an episode runs (host flag)
        self._reset_needed: str | None = "before the first reset()"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.sim.generator.manual_seed(seed)
        self.sim.reset()
        self._reset_needed = None
        self._trail.record()
        return self._obs(), {}

    def step(self, action):
        """One step of the robot; raises ``ResetNeeded`` before the first ``reset`` and once
        the episode has ended, until ``reset``."""
        if self._reset_needed is not None:
            raise ResetNeeded(f"step() {self._reset_needed}: call reset() first")
        if self.sim.action_kind == "discrete":
            act = torch.tensor([[int(action)]], dtype=torch.int64)
        else:
            act = torch.as_tensor(np.asarray(action, dtype=np.float32).reshape(1, 1, 2))
        result = self.sim.step(act.to(self.sim.device))
        self._trail.record()
        info = {"info_state": int(result.info[0, 0])}  # host: gymnasium returns numbers
        terms = result.reward_terms[0, 0].tolist()  # host: gymnasium returns numbers
        info["reward_terms"] = dict(zip(self.sim.reward_term_names, terms, strict=True))
        reward = float(result.reward[0, 0])  # host: gymnasium returns numbers
        terminated = bool(result.terminated[0, 0])  # host: gymnasium returns numbers
        truncated = bool(result.truncated[0, 0])  # host: gymnasium returns numbers
        if terminated or truncated:
            self._reset_needed = "after the episode ended (terminated or truncated)"
        return self._obs(), reward, terminated, truncated, info

    def _obs(self) -> np.ndarray:
        return flatten_observation(self.sim.observation)[0, 0].cpu().numpy()  # host: gymnasium

    def render(self) -> np.ndarray:
        return self._trail.render()


def register() -> None:
    """Register ``marinenav/MarineNav-v0`` with Gymnasium (done on import of the package)."""
    if ENV_ID in gym.registry:
        return
    gym.register(
        id=ENV_ID,
        entry_point="marinenav.envs.gym_adapter:MarineNavSingleEnv",
        vector_entry_point="marinenav.envs.gym_adapter:MarineNavVectorEnv",
        disable_env_checker=True,
    )
