"""``PolicyWrapper``: batched acting for any batch shape, epsilon as a buffer, modes, CVaR input,
remappable keys, no host synchronisation."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.envs import MarineNavEnv
from marinenav.policy.networks import (
    DeterministicActor,
    GaussianActor,
    ImplicitQuantileNetwork,
    QNetwork,
    squash,
)
from marinenav.policy.selectors import (
    DeterministicSelector,
    GaussianSelector,
    GreedyQSelector,
    QuantileSelector,
)
from marinenav.policy.wrapper import PolicyWrapper
from tests.agent_utils import robot_observations
from tests.sync_utils import count_read_backs

SELECTORS = {
    "dqn": lambda: GreedyQSelector(QNetwork(seed=0)),
    "iqn": lambda: QuantileSelector(ImplicitQuantileNetwork(seed=0)),
    "ddpg": lambda: DeterministicSelector(DeterministicActor(seed=0)),
    "sac": lambda: GaussianSelector(GaussianActor(seed=0)),
}


@pytest.mark.parametrize("name", list(SELECTORS))
def test_same_actions_for_batched_and_flattened_inputs(name: str) -> None:
    policy = PolicyWrapper(SELECTORS[name](), epsilon=0.5, seed=3)
    batched = robot_observations(4, 5)
    flat = TensorDict(
        {key[1]: batched[key].reshape(20, *batched[key].shape[2:]) for key in policy.in_keys},
        batch_size=[20],
    )
    flat_policy = PolicyWrapper(
        policy.selector, in_keys=["self_state", "objects", "objects_mask"], out_key="action",
        epsilon=0.5, seed=3,
    )  # fmt: skip
    with set_exploration_type(ExplorationType.RANDOM):
        a = policy(batched)["agents", "action"]
        b = flat_policy(flat)["action"]
    assert a.shape[:2] == (4, 5)
    torch.testing.assert_close(a.reshape(b.shape), b, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["dqn", "ddpg"])
def test_epsilon_is_a_buffer_that_switches_to_random_actions(name: str) -> None:
    policy = PolicyWrapper(SELECTORS[name](), epsilon=0.0, seed=0)
    obs = robot_observations(50, 5)
    with set_exploration_type(ExplorationType.RANDOM):
        greedy = policy(obs.clone())["agents", "action"]
        policy.set_epsilon(1.0)
        random = policy(obs.clone())["agents", "action"]
        policy.set_epsilon(torch.tensor(0.0))
        again = policy(obs.clone())["agents", "action"]
    assert "epsilon" in dict(policy.named_buffers())
    torch.testing.assert_close(greedy, again)
    if name == "dqn":
        assert len(torch.unique(greedy)) < 25 <= len(torch.unique(random)) + 1
    else:
        assert (random.abs() <= 1).all() and random.std() > 0.4  # U[-1, 1] has std 0.58
    assert not torch.equal(greedy, random)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_an_exploration_rate_outside_0_1_is_refused(bad: float) -> None:
    policy = PolicyWrapper(SELECTORS["dqn"](), epsilon=0.25, seed=0)
    with pytest.raises(ValueError) as error:
        policy.set_epsilon(bad)
    assert str(error.value) == f"epsilon must be in [0, 1], got {bad}"
    assert policy.epsilon.item() == 0.25  # the rate in use is kept
    with pytest.raises(ValueError) as error:
        PolicyWrapper(SELECTORS["dqn"](), epsilon=bad)
    assert str(error.value) == f"epsilon must be in [0, 1], got {bad}"
    policy.set_epsilon(1)  # the bounds themselves are rates
    policy.set_epsilon(0.0)
    assert policy.epsilon.item() == 0.0


def test_deterministic_mode_has_no_randomness_and_sac_uses_the_mean() -> None:
    selector = SELECTORS["sac"]()
    policy = PolicyWrapper(selector, epsilon=0.9, seed=0)
    obs = robot_observations(3, 5)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        first = policy(obs.clone())["agents", "action"]
        second = policy(obs.clone())["agents", "action"]
    mean, _ = selector.actor(*(obs[k] for k in policy.in_keys))
    torch.testing.assert_close(first, second)
    torch.testing.assert_close(first, squash(mean))
    policy.eval()  # outside any exploration context the module mode decides
    torch.testing.assert_close(policy(obs.clone())["agents", "action"], first)
    policy.train()
    assert not torch.equal(policy(obs.clone())["agents", "action"], first)


class _TauRecorder(nn.Module):
    """Stands in for an IQN network: records the quantile fractions it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.largest_tau = None

    def forward(self, self_state, objects, objects_mask, tau):
        self.largest_tau = tau.max(dim=-1).values
        return torch.zeros(*tau.shape, 25)


def test_cvar_level_is_an_input() -> None:
    network = _TauRecorder()
    policy = PolicyWrapper(QuantileSelector(network), seed=0)
    obs = robot_observations(2, 5)
    obs.set("cvar", torch.tensor([[0.1] * 5, [1.0] * 5]))
    policy.eval()
    policy(obs)
    largest = network.largest_tau.view(2, 5)
    assert (largest[0] <= 0.1).all() and (largest[1] > 0.5).all()
    del obs["cvar"]
    policy(obs)
    assert (network.largest_tau > 0.5).all()  # the buffer default: risk neutral


def test_forward_makes_no_host_read_back() -> None:
    policy = PolicyWrapper(SELECTORS["iqn"](), epsilon=0.3, seed=0)
    obs = robot_observations(8, 5)
    with count_read_backs() as counts, set_exploration_type(ExplorationType.RANDOM):
        for _ in range(20):
            policy(obs)
    assert sum(counts.values()) == 0, dict(counts)


@pytest.mark.parametrize("name", ["dqn", "sac"])
def test_drops_into_a_torchrl_collector(name: str) -> None:
    kind = "discrete" if name == "dqn" else "continuous"
    env = MarineNavEnv(2, kind, num_robots=3, seed=0)
    policy = PolicyWrapper(SELECTORS[name](), epsilon=0.1, seed=0)
    collector = Collector(
        env, policy, frames_per_batch=20, total_frames=20, auto_register_policy_transforms=False
    )
    data = next(iter(collector))
    collector.shutdown()
    assert data["agents", "action"].shape[:3] == (2, 10, 3)  # 3 robot slots
    assert data["next", "agents", "reward"].shape == (2, 10, 3, 1)


def test_bad_keys_raise() -> None:
    with pytest.raises(ValueError, match="in_keys"):
        PolicyWrapper(SELECTORS["dqn"](), in_keys=["self_state"])
