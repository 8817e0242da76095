"""PettingZoo adapter (optional extra: ``pip install -e ".[pettingzoo]"``).

:class:`MarineNavParallelEnv` is one simulated environment as a ``pettingzoo.ParallelEnv``:
agents ``robot_0 .. robot_{R-1}`` (the robots of the scenario), each with the Gymnasium
adapter's spaces (a flat ``float32`` observation of 37 numbers, ``Discrete(25)`` or
``Box(-1, 1, (2,))``). An agent is removed from ``env.agents`` after the step in which it
finished (``terminated``: collision-free goal or collision; ``truncated``: the step limit);
the episode is over when ``env.agents`` is empty. Robots are not reset alone: ``reset`` starts
a new episode for all of them.

The simulator runs batched (one ``[1, R]`` step for all robots); the per-agent dictionaries
that PettingZoo's API asks for are built on the host from one read-back per step.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from pettingzoo import ParallelEnv

from marinenav.envs.gym_adapter import _simulator, _spaces, flatten_observation
from marinenav.envs.trail import TrailRecorder
from marinenav.sim.simulator import ActionKind


class MarineNavParallelEnv(ParallelEnv):
    """``R`` robots of one environment as PettingZoo agents ``robot_0 .. robot_{R-1}``.

    Args:
        action_kind: ``"discrete"`` or ``"continuous"``.
        num_robots, num_obstacles, num_cores, min_start_goal_dis: the scenario's sizes (one
            curriculum stage).
        seed: seed of the simulator's scenario and noise stream (``reset(seed=...)`` re-seeds).
        max_episode_steps: step limit of an episode (agents left then are truncated).
        render_mode: ``"rgb_array"`` or ``None``.
    """

    metadata = {
        "name": "marinenav_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 2,  # one step is 0.5 s
        "is_parallelizable": True,
    }

    def __init__(
        self,
        action_kind: ActionKind = "discrete",
        num_robots: int = 3,
        num_obstacles: int = 0,
        num_cores: int = 0,
        min_start_goal_dis: float = 30.0,
        seed: int = 0,
        max_episode_steps: int = 1000,
        render_mode: str | None = None,
    ) -> None:
        self.sim = _simulator(1, action_kind, num_robots, num_obstacles, num_cores,
                              min_start_goal_dis, None, seed, max_episode_steps)  # fmt: skip
        self.render_mode = render_mode
        self.possible_agents = [f"robot_{i}" for i in range(self.sim.robot_slots)]
        self.agent_index = {agent: i for i, agent in enumerate(self.possible_agents)}
        observation_space, action_space = _spaces(action_kind)
        # one space object per agent, so each can be seeded on its own
        agents = self.possible_agents
        self.observation_spaces = {a: copy.deepcopy(observation_space) for a in agents}
        self.action_spaces = {a: copy.deepcopy(action_space) for a in agents}
        self.agents: list[str] = []
        self._trail = TrailRecorder(self.sim)

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """Start a new episode for every robot; ``seed`` re-seeds the simulator."""
        if seed is not None:
            self.sim.generator.manual_seed(seed)
        self.sim.reset()
        self._trail.record()
        active = self.sim.active[0].cpu().numpy()  # host: PettingZoo returns numpy
        self.agents = [a for a in self.possible_agents if active[self.agent_index[a]]]
        observations = self._observations()
        return {a: observations[self.agent_index[a]] for a in self.agents}, {
            a: {} for a in self.agents
        }

    def step(self, actions: dict[str, Any]):
        """Step every robot at once; agents without an action keep their thrusts (action 0,
        no change, or ``[0, 0]``). Returns the five PettingZoo dictionaries over the agents
        that acted; those that finished are then removed from ``self.agents``."""
        R = self.sim.robot_slots
        index = np.fromiter((self.agent_index[a] for a in actions), dtype=np.int64)
        values = np.asarray(list(actions.values()))
        if self.sim.action_kind == "discrete":
            act = np.zeros(R, dtype=np.int64)  # index 0: no thrust change on either side
            act[index] = values.reshape(-1)
        else:
            act = np.zeros((R, 2), dtype=np.float32)
            act[index] = values.reshape(-1, 2)
        result = self.sim.step(torch.as_tensor(act, device=self.sim.device).unsqueeze(0))
        self._trail.record()
        host = torch.stack(  # one read-back for the step: reward, flags, info of each robot
            (result.reward[0].double(), result.terminated[0].double(),
             result.truncated[0].double(), result.info[0].double()),
        ).cpu().numpy()  # fmt: skip  # host: PettingZoo returns numpy, once per step
        reward, terminated, truncated, info = host[0], host[1] > 0, host[2] > 0, host[3]
        observations = self._observations()
        acting = self.agents
        i = [self.agent_index[a] for a in acting]
        out = (
            {a: observations[k] for a, k in zip(acting, i, strict=True)},
            {a: float(reward[k]) for a, k in zip(acting, i, strict=True)},
            {a: bool(terminated[k]) for a, k in zip(acting, i, strict=True)},
            {a: bool(truncated[k]) for a, k in zip(acting, i, strict=True)},
            {a: {"info_state": int(info[k])} for a, k in zip(acting, i, strict=True)},
        )
        self.agents = [a for a, k in zip(acting, i, strict=True)
                       if not (terminated[k] or truncated[k])]  # fmt: skip
        return out

    def _observations(self) -> np.ndarray:
        """``[R, 37]`` float32 observations of every robot slot."""
        return flatten_observation(self.sim.observation)[0].cpu().numpy()  # host: PettingZoo

    def render(self) -> np.ndarray:
        """RGB image ``[H, W, 3]`` of the environment with its trajectories so far."""
        return self._trail.render()

    def close(self) -> None:
        pass

    def state(self) -> np.ndarray:
        """Every robot slot's observation, ``[R * 37]`` float32 (zeros for finished robots)."""
        return self._observations().reshape(-1)
