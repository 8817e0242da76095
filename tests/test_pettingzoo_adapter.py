"""The PettingZoo ``ParallelEnv`` adapter: PettingZoo's API and seeding checks, agents removed
when they finish, the same numbers as the simulator."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from marinenav.envs.pettingzoo_adapter import MarineNavParallelEnv  # noqa: E402


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_parallel_api(kind: str) -> None:
    env = MarineNavParallelEnv(kind, num_robots=3, num_obstacles=2, max_episode_steps=60)
    parallel_api_test(env, num_cycles=100)


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_parallel_seed(kind: str) -> None:
    parallel_seed_test(lambda: MarineNavParallelEnv(kind, num_robots=3, num_cores=2), 50)


def test_reset_seed_gives_the_same_scenario_and_another_seed_another() -> None:
    env = MarineNavParallelEnv(num_robots=2, num_obstacles=3)
    first, _ = env.reset(seed=5)
    other, _ = env.reset(seed=6)
    again, _ = env.reset(seed=5)
    assert list(first) == ["robot_0", "robot_1"]
    for agent in first:
        np.testing.assert_array_equal(first[agent], again[agent])
    assert not all(np.array_equal(first[a], other[a]) for a in first)


def test_agents_are_removed_when_they_finish_and_the_episode_ends() -> None:
    env = MarineNavParallelEnv("continuous", num_robots=3, max_episode_steps=20)
    observations, infos = env.reset(seed=0)
    assert env.agents == env.possible_agents == ["robot_0", "robot_1", "robot_2"]
    assert observations["robot_0"].shape == (37,) and observations["robot_0"].dtype == np.float32
    steps = 0
    while env.agents:
        acting = list(env.agents)
        obs, rewards, terminated, truncated, infos = env.step({a: np.zeros(2) for a in acting})
        steps += 1
        assert set(obs) == set(rewards) == set(terminated) == set(acting)
        finished = {a for a in acting if terminated[a] or truncated[a]}
        assert set(env.agents) == set(acting) - finished
    assert steps <= 21  # the step limit truncates whoever is left
    assert env.state().shape == (3 * 37,)
