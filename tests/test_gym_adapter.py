"""Gymnasium adapters: the single-robot ``gymnasium.Env`` and the robot-slot ``VectorEnv``."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import marinenav.envs  # noqa: F401  (registers marinenav/MarineNav-v0)
from marinenav.envs import MarineNavVectorEnv
from marinenav.envs.gym_adapter import MarineNavSingleEnv


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_single_robot_env_passes_the_gymnasium_checker(kind: str) -> None:
    env = gym.make("marinenav/MarineNav-v0", action_kind=kind, num_obstacles=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # unbounded Box observations are intended
        check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=3)
    assert obs.shape == (37,) and obs.dtype == np.float32
    mask = obs[-5:].tolist()  # real objects first, at most the two obstacles
    assert set(mask) <= {0.0, 1.0} and mask == sorted(mask, reverse=True) and sum(mask) <= 2
    expected = gym.spaces.Discrete(25) if kind == "discrete" else gym.spaces.Box(-1, 1, (2,))
    assert env.action_space == expected


def test_make_vec_gives_robot_slots_as_sub_environments() -> None:
    venv = gym.make_vec(
        "marinenav/MarineNav-v0", num_envs=3, vectorization_mode="vector_entry_point",
        num_robots=2, action_kind="continuous",
    )  # fmt: skip
    assert isinstance(venv, gym.vector.VectorEnv) and isinstance(venv, MarineNavVectorEnv)
    assert venv.num_envs == 6
    assert venv.single_action_space == gym.spaces.Box(-1, 1, (2,))
    obs, info = venv.reset(seed=0)
    assert obs.shape == (6, 37) and info["active"].all()
    obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())
    assert reward.shape == (6,) and terminated.dtype == bool and truncated.shape == (6,)


def test_vector_env_next_step_autoreset() -> None:
    venv = MarineNavVectorEnv(2, num_robots=2, max_episode_steps=3, seed=1)
    venv.reset(seed=1)
    zeros = np.zeros(4, dtype=np.int64)
    for _ in range(3):
        _, _, _, truncated, info = venv.step(zeros)
        assert not truncated.any()
    terminal, reward, _, truncated, info = venv.step(zeros)
    assert truncated.all() and info["episode_steps"].tolist() == [4, 4, 4, 4]
    restart, reward, terminated, truncated, info = venv.step(zeros)
    assert (reward == 0).all() and not terminated.any() and not truncated.any()
    assert info["episode_steps"].tolist() == [0, 0, 0, 0] and info["active"].all()
    assert not np.array_equal(restart, terminal)


def test_finished_robot_waits_inactive_until_its_environment_restarts() -> None:
    venv = MarineNavVectorEnv(1, num_robots=2, max_episode_steps=50, seed=0)
    venv.reset(seed=0)
    venv.sim.deactivated[0, 1] = True  # robot 1 finished
    venv.sim.reach_goal[0, 1] = True
    obs, reward, terminated, truncated, info = venv.step(np.zeros(2, dtype=np.int64))
    assert info["active"].tolist() == [True, False]
    assert reward[1] == 0.0 and not terminated[1] and not truncated[1]
    assert (obs[1] == 0).all()


@pytest.mark.parametrize("ending", ["truncated", "terminated"])
def test_single_env_refuses_to_step_after_its_episode_until_reset(ending: str) -> None:
    """As Gymnasium's own wrappers do (``ResetNeeded``): no silent zero observations after the
    end, and none before the first reset. (The raw env: ``gym.make`` turns
    ``max_episode_steps`` into its own ``TimeLimit`` wrapper.)"""
    env = MarineNavSingleEnv(max_episode_steps=3)
    with pytest.raises(gym.error.ResetNeeded) as error:
        env.step(0)
    assert str(error.value) == "step() before the first reset(): call reset() first"
    env.reset(seed=0)
    if ending == "terminated":  # the robot at its goal: the next step ends the episode
        env.sim.state.pos[0, 0] = env.sim.scenario.goal[0, 0]
    steps = 0
    while True:
        _, _, terminated, truncated, _ = env.step(0)
        steps += 1
        if terminated or truncated:
            break
    # the step limit truncates the step after max_episode_steps (the original's counter)
    assert (terminated, truncated, steps) == (
        (False, True, 4) if ending == "truncated" else (True, False, 1)
    )
    for _ in range(2):  # and it stays refused
        with pytest.raises(gym.error.ResetNeeded) as error:
            env.step(0)
        assert str(error.value) == (
            "step() after the episode ended (terminated or truncated): call reset() first"
        )
    obs, _ = env.reset(seed=1)
    assert obs[:7].any()  # a fresh episode steps again
    assert env.step(0)[0].shape == (37,)
