"""Transforms around ``MarineNavEnv``: honoured in ``rollout`` and on the training path
(``marinenav.envs.step_and_reset``), with no host read-back from the loop itself."""

from __future__ import annotations

import pytest
import torch
from torchrl.envs import (
    Compose,
    GymEnv,
    InitTracker,
    ObservationNorm,
    RewardSum,
    StepCounter,
    TransformedEnv,
)

from marinenav.envs import MarineNavEnv, step_and_reset
from tests.sync_utils import count_read_backs, take_the_cuda_code_path

LOC, SCALE = 1.0, 2.0
SELF_STATE = ("agents", "self_state")


def transformed(env: MarineNavEnv, norm: bool = True) -> TransformedEnv:
    """``env`` with a step counter, per-robot return, init flag and (optionally) an affine
    observation transform ``self_state * 2 + 1``."""
    transforms = [
        StepCounter(),
        RewardSum(in_keys=[("agents", "reward")], out_keys=[("agents", "episode_reward")]),
        InitTracker(),
    ]
    if norm:
        transforms.append(ObservationNorm(loc=LOC, scale=SCALE, in_keys=[SELF_STATE]))
    return TransformedEnv(env, Compose(*transforms))


def actions(steps: int, E: int, R: int) -> torch.Tensor:
    return torch.randint(0, 25, (steps, E, R), generator=torch.Generator().manual_seed(0))


def test_rollout_runs_the_transforms() -> None:
    def steer(td):  # the same thrust change for every robot at every step
        return td.set(("agents", "action"), torch.full((2, 2), 7))

    plain = MarineNavEnv(2, "discrete", num_robots=2, seed=3, validate=False)
    env = transformed(MarineNavEnv(2, "discrete", num_robots=2, seed=3, validate=False))
    raw = plain.rollout(6, steer, break_when_any_done=False)
    data = env.rollout(6, steer, break_when_any_done=False)
    torch.testing.assert_close(data[SELF_STATE], raw[SELF_STATE] * SCALE + LOC)
    torch.testing.assert_close(data["next", SELF_STATE], raw["next", SELF_STATE] * SCALE + LOC)
    returns = raw["next", "agents", "reward"].cumsum(dim=1)
    torch.testing.assert_close(data["next", "agents", "episode_reward"], returns)
    assert torch.equal(data["next", "step_count"].squeeze(-1), torch.arange(1, 7).expand(2, 6))
    assert data["is_init"][:, 0].all() and not data["is_init"][:, 1:].any()


def test_step_and_reset_honours_transforms_at_restarts() -> None:
    E, R, limit = 3, 2, 4
    plain = MarineNavEnv(E, "discrete", num_robots=R, seed=1, max_episode_steps=limit,
                         validate=False)  # fmt: skip
    env = transformed(MarineNavEnv(E, "discrete", num_robots=R, seed=1,
                                   max_episode_steps=limit, validate=False))  # fmt: skip
    plain_td, td = plain.reset(), env.reset()
    steps, restarts = actions(12, E, R), 0
    count = torch.zeros(E, 1, dtype=torch.int64)
    returns = torch.zeros(E, R, 1)
    for t in range(12):
        plain_out, plain_td = plain.step_and_reset(plain_td.set(("agents", "action"), steps[t]))
        out, td = step_and_reset(env, td.set(("agents", "action"), steps[t]))
        count, returns = count + 1, returns + plain_out["agents", "reward"]
        done = plain_out["done"]
        torch.testing.assert_close(out[SELF_STATE], plain_out[SELF_STATE] * SCALE + LOC)
        torch.testing.assert_close(td[SELF_STATE], plain_td[SELF_STATE] * SCALE + LOC)
        assert torch.equal(out["step_count"], count)
        torch.testing.assert_close(out["agents", "episode_reward"], returns)
        count = torch.where(done, 0, count)
        returns = torch.where(done.unsqueeze(-1), 0.0, returns)
        assert torch.equal(td["step_count"], count) and torch.equal(td["is_init"], done)
        torch.testing.assert_close(td["agents", "episode_reward"], returns)
        restarts += int(done.sum())
    assert restarts >= E  # every environment hit the step limit at least once


@pytest.mark.parametrize("norm", [False, True], ids=["counters", "with_observation_norm"])
def test_step_and_reset_reads_nothing_back(norm: bool) -> None:
    env = transformed(MarineNavEnv(4, "discrete", num_robots=2, seed=0, validate=False), norm)
    take_the_cuda_code_path(env.base_env.sim)
    td = env.reset()
    steps = actions(5, 4, 2)
    with count_read_backs() as counts:
        for t in range(5):
            _, td = step_and_reset(env, td.set(("agents", "action"), steps[t]))
    # TorchRL's ObservationNorm branches on its ``standard_normal`` tensor (step and reset)
    assert sum(counts.values()) == (10 if norm else 0), dict(counts)


def test_step_and_reset_refuses_other_environments() -> None:
    with pytest.raises(TypeError, match="MarineNavEnv"):
        step_and_reset(GymEnv("CartPole-v1"), None)
