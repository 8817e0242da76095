"""A tiny learning problem and a minimal off-policy loop, shared by the agents' learning tests.

The problem: one robot, no obstacles, the goal 10 m straight ahead of a robot at rest, 40-step
episodes. A robot that learns to push both thrusters forward reaches the goal in about 8 steps
(+10 goal reward plus about 8 m of progress); a random policy wanders (its return is about the
progress it makes by chance, near zero). The loop here is deliberately plain (CPU, boolean
indexing, uniform replay); the real trainer lives in ``marinenav.training``.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents.base import OBSERVATION_KEYS, Agent
from marinenav.envs import MarineNavEnv
from marinenav.training.updater import Updater

_BASE = json.loads((Path(__file__).parent / "data" / "one_robot_one_obstacle.json").read_text())


def goal_ahead_scenarios(count: int = 8, distance: float = 10.0) -> list[dict]:
    """``count`` one-robot scenarios, headings spread over the circle, goal ``distance`` ahead."""
    scenarios = []
    for k in range(count):
        s = copy.deepcopy(_BASE)
        theta = 2 * math.pi * k / count
        start = [27.5, 27.5]
        s["env"]["obstacles"] = {"positions": [], "r": []}
        s["robots"]["start"] = [start]
        s["robots"]["init_theta"] = [theta]
        s["robots"]["goal"] = [[start[0] + distance * math.cos(theta),
                                start[1] + distance * math.sin(theta)]]  # fmt: skip
        s["robots"]["perception"]["pos_std"] = [0.0]
        s["robots"]["perception"]["vel_std"] = [0.0]
        s["robots"]["perception"]["r_mean_ratio"] = [1.0]
        scenarios.append(s)
    return scenarios


def make_env(action_kind: str, seed: int = 0, max_episode_steps: int = 40) -> MarineNavEnv:
    return MarineNavEnv.from_scenarios(
        goal_ahead_scenarios(), action_kind=action_kind, max_episode_steps=max_episode_steps,
        seed=seed, validate=False,
    )  # fmt: skip


def robot_transitions(data: TensorDict) -> TensorDict:
    """Flat ``[N]`` transitions of the robots that acted, from a rollout ``[E, T]``."""
    agents, nxt = data["agents"], data["next", "agents"]
    valid = agents["active"]
    flat = {key: agents[key][valid] for key in (*OBSERVATION_KEYS, "action")}
    for key in (*OBSERVATION_KEYS, "reward", "terminated", "done"):
        flat[("next", key)] = nxt[key][valid]
    return TensorDict(flat, batch_size=[int(valid.sum())])


def evaluate(agent: Agent, env: MarineNavEnv, episodes_steps: int = 41) -> float:
    """Mean undiscounted return per robot of deterministic acting over one episode of every
    environment."""
    agent.policy.eval()
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        env.reset()
        data = env.rollout(episodes_steps, agent.policy, break_when_any_done=False,
                           auto_reset=True)  # fmt: skip
    agent.policy.train()
    first_episode = data["next", "done"].squeeze(-1).int().cumsum(-1) <= 1
    rewards = data["next", "agents", "reward"].squeeze(-1).sum(-1)  # [E, T]
    ends = data["next", "done"].squeeze(-1) & first_episode
    rewards = rewards * (first_episode & ~(ends.int().cumsum(-1) > ends.int())).float()
    return float(rewards.sum(-1).mean())


def random_return(action_kind: str, seed: int = 0) -> float:
    """Mean return of uniformly random actions on the same problem."""
    env = make_env(action_kind, seed=seed)
    torch.manual_seed(seed)
    data = env.rollout(41, break_when_any_done=False)
    first = data["next", "done"].squeeze(-1).int().cumsum(-1) <= 1
    ends = data["next", "done"].squeeze(-1) & first
    keep = first & ~(ends.int().cumsum(-1) > ends.int())
    rewards = data["next", "agents", "reward"].squeeze(-1).sum(-1) * keep.float()
    return float(rewards.sum(-1).mean())


def train_briefly(
    agent: Agent,
    iterations: int = 40,
    steps_per_iteration: int = 8,
    updates_per_iteration: int = 16,
    batch_size: int = 64,
    epsilon: float = 0.3,
    target_every: int = 4,
    seed: int = 0,
) -> float:
    """Collect with epsilon-exploration, learn from a uniform replay, return the evaluation
    return (see :func:`evaluate`). Agents learn this in seconds with
    ``normalize_observations=True`` and a learning rate of about 1e-3."""
    torch.manual_seed(seed)
    env = make_env(agent.action_kind, seed=seed)
    updater = Updater(agent)
    agent.policy.set_epsilon(epsilon)
    agent.policy.train()
    replay: list[TensorDict] = []
    td = env.reset()
    for iteration in range(iterations):
        with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
            data = env.rollout(steps_per_iteration, agent.policy, break_when_any_done=False,
                               auto_reset=False, tensordict=td)  # fmt: skip
        td = env.reset(data[..., -1]["next"].clone().set("_reset", data[..., -1]["next", "done"]))
        replay.append(robot_transitions(data))
        memory = torch.cat(replay)
        for _ in range(updates_per_iteration):
            index = torch.randint(0, memory.shape[0], (batch_size,))
            updater.update(memory[index])
        if iteration % target_every == 0:
            updater.update_targets()
    return evaluate(agent, env)
