"""``PolicyWrapper`` outside marinenav: any network, any Categorical / OneHot / Bounded action
spec, unbatched, batched and multi-agent data, in ``rollout``, ``Collector``, ``SerialEnv`` and
``ParallelEnv``; actions always inside the spec, exploration on and off."""

from __future__ import annotations

import re
import warnings
from functools import partial
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import Bounded, Categorical, Composite, OneHot, Unbounded
from torchrl.envs import EnvBase, GymEnv, ParallelEnv, SerialEnv
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents import make_agent
from marinenav.envs import MarineNavEnv
from marinenav.policy import PolicyWrapper
from tests.sync_utils import count_read_backs

ROOT = Path(__file__).resolve().parents[1]
RANDOM, DETERMINISTIC = ExplorationType.RANDOM, ExplorationType.DETERMINISTIC


def linear(inputs: int, outputs: int, seed: int = 0) -> nn.Linear:
    """A seeded linear network (so greedy actions are reproducible)."""
    torch.manual_seed(seed)
    return nn.Linear(inputs, outputs)


class PointsEnv(EnvBase):
    """A small multi-agent TorchRL env with a group dimension: ``B`` environments of ``N``
    points that move by their actions. Observations ``("agents", "observation") [B, N, 2]``;
    actions a box per agent with bounds that differ between agents ``[B, N, 2]``, or one of 5
    moves ``[B, N]`` (stay, +x, -x, +y, -y)."""

    LOW = torch.tensor([[-1.0, -1.0], [0.0, 0.0], [-3.0, 1.0], [0.5, -0.5]])
    MOVES = torch.tensor([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])

    def __init__(self, kind: str = "box", num_envs: int = 3, num_agents: int = 4) -> None:
        super().__init__(batch_size=torch.Size([num_envs]))
        B, N = num_envs, num_agents
        self.kind = kind
        self.observation_spec = Composite(
            agents=Composite(observation=Unbounded((B, N, 2)), shape=(B, N)), shape=(B,)
        )
        if kind == "box":
            low = self.LOW[:N].expand(B, N, 2)
            action = Bounded(low, low + torch.tensor([2.0, 0.5]), shape=(B, N, 2))
        else:
            action = Categorical(5, shape=(B, N))
        self.action_spec = Composite(agents=Composite(action=action, shape=(B, N)), shape=(B,))
        self.reward_spec = Composite(
            agents=Composite(reward=Unbounded((B, N, 1)), shape=(B, N)), shape=(B,)
        )
        flag = Categorical(2, shape=(B, 1), dtype=torch.bool)
        self.done_spec = Composite(done=flag, terminated=flag.clone(), shape=(B,))
        self.position = torch.zeros(B, N, 2)

    def _output(self) -> TensorDict:
        B, N = self.position.shape[:2]
        done = torch.zeros(B, 1, dtype=torch.bool)
        return TensorDict(
            {"agents": TensorDict({"observation": self.position.clone()}, batch_size=(B, N)),
             "done": done, "terminated": done.clone()},
            batch_size=(B,),
        )  # fmt: skip

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDict:
        self.position.zero_()
        return self._output()

    def _step(self, tensordict: TensorDictBase) -> TensorDict:
        action = tensordict.get(("agents", "action"))
        self.position += action if self.kind == "box" else self.MOVES[action]
        out = self._output()
        out.set(("agents", "reward"), -self.position.norm(dim=-1, keepdim=True))
        return out

    def _set_seed(self, seed: int | None) -> None:
        pass


def inside(spec, action: torch.Tensor) -> bool:
    """Whether every action of a time-stacked batch ``[..., T, *spec.shape]`` is in ``spec``."""
    return all(spec.is_in(a) for a in action.reshape(-1, *spec.shape))


# ---------------------------------------------------------------- Gymnasium through GymEnv
def test_pendulum_rollout_explores_inside_the_box_and_acts_greedily_without() -> None:
    env = GymEnv("Pendulum-v1")
    env.set_seed(0)
    net = linear(3, 1)
    policy = PolicyWrapper(net, env.action_spec, epsilon=1.0, seed=0)
    with set_exploration_type(RANDOM):
        explored = env.rollout(60, policy)["action"]
    assert explored.shape == (60, 1) and inside(env.action_spec, explored)
    assert explored.std() > 0.8  # U[-2, 2] has std 1.15, not the [-1, 1] of marinenav's box
    with set_exploration_type(DETERMINISTIC):
        greedy = env.rollout(20, policy)
    expected = 2 * torch.tanh(net(greedy["observation"]))  # tanh squashed into [-2, 2]
    torch.testing.assert_close(greedy["action"], expected)


@pytest.mark.parametrize("categorical", [False, True], ids=["one_hot", "categorical"])
def test_cartpole_rollout_actions_are_valid_indices(categorical: bool) -> None:
    env = GymEnv("CartPole-v1", categorical_action_encoding=categorical)
    net = linear(4, 2)
    policy = PolicyWrapper(net, env.full_action_spec, epsilon=0.5, seed=1)
    with set_exploration_type(RANDOM):
        data = env.rollout(200, policy, break_when_any_done=False)
    assert inside(env.action_spec, data["action"])
    index = data["action"] if categorical else data["action"].argmax(-1)
    greedy = net(data["observation"]).argmax(-1)
    assert set(index.tolist()) == {0, 1}
    assert 0.15 < (index != greedy).float().mean() < 0.35  # epsilon 0.5, half of them agree
    with set_exploration_type(DETERMINISTIC):
        data = env.rollout(20, policy)
    index = data["action"] if categorical else data["action"].argmax(-1)
    torch.testing.assert_close(index, net(data["observation"]).argmax(-1))


def test_same_seed_same_actions_and_no_read_back() -> None:
    spec = Bounded(torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 10.0]), shape=(2,))
    obs = TensorDict({"observation": torch.randn(16, 3)}, batch_size=[16])
    first, second = (PolicyWrapper(linear(3, 2), spec, epsilon=0.5, seed=4) for _ in range(2))
    with set_exploration_type(RANDOM), count_read_backs() as counts:
        a = first(obs.clone())["action"]
        b = second(obs.clone())["action"]
    assert sum(counts.values()) == 0, dict(counts)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert spec.is_in(a[0]) and ((a >= spec.space.low) & (a <= spec.space.high)).all()


def test_tensordict_module_is_called_on_the_tensordict_and_epsilon_added() -> None:
    module = TensorDictModule(linear(3, 1), in_keys=["observation"], out_keys=["action"])
    spec = Bounded(-2.0, 2.0, shape=(1,))
    policy = PolicyWrapper(module, spec, epsilon=0.0)
    assert policy.in_keys == ["observation"] and policy.out_keys == ["action"]
    obs = TensorDict({"observation": torch.randn(8, 3)}, batch_size=[8])
    with set_exploration_type(RANDOM):
        torch.testing.assert_close(policy(obs.clone())["action"], module(obs.clone())["action"])
        policy.set_epsilon(1.0)
        random_action = policy(obs.clone())["action"]
    assert (random_action.abs() <= 2).all()
    assert not torch.equal(random_action, module(obs.clone())["action"])


@pytest.mark.parametrize("name", ["Pendulum-v1", "CartPole-v1"])
def test_collector_on_a_serial_env(name: str) -> None:
    env = SerialEnv(2, lambda: GymEnv(name))
    outputs = 1 if name == "Pendulum-v1" else 2
    policy = PolicyWrapper(nn.LazyLinear(outputs), env.full_action_spec, epsilon=0.3)
    collector = Collector(
        env, policy, frames_per_batch=40, total_frames=80, auto_register_policy_transforms=False
    )
    batches = list(collector)
    collector.shutdown()
    leaf = GymEnv(name).action_spec
    for batch in batches:
        assert batch["action"].shape == (2, 20, *leaf.shape)
        assert inside(leaf, batch["action"])


def test_parallel_env_rollout() -> None:
    env = ParallelEnv(2, partial(GymEnv, "Pendulum-v1"), mp_start_method="fork")  # shared imports
    policy = PolicyWrapper(linear(3, 1), env.full_action_spec, epsilon=1.0)
    with set_exploration_type(RANDOM):
        action = env.rollout(10, policy)["action"]
    env.close()
    assert action.shape == (2, 10, 1) and (action.abs() <= 2).all() and action.std() > 0.5


# ---------------------------------------------------------------- multi-agent
def test_multi_agent_box_draws_inside_each_agents_bounds() -> None:
    env = PointsEnv("box")
    net = linear(2, 2)
    policy = PolicyWrapper(net, env.full_action_spec, in_keys=[("agents", "observation")],
                           epsilon=1.0)  # fmt: skip
    assert policy.space.low.shape == (4, 2)  # bounds differ between agents: group dim kept
    with set_exploration_type(RANDOM):
        action = env.rollout(50, policy)["agents", "action"]  # [B, T, N, 2]
    low, high = PointsEnv.LOW, PointsEnv.LOW + torch.tensor([2.0, 0.5])
    assert action.shape == (3, 50, 4, 2)
    assert ((action >= low) & (action <= high)).all()
    assert ((action - low) / (high - low)).std() > 0.25  # uniform over each box: std 0.29
    with set_exploration_type(DETERMINISTIC):
        data = env.rollout(5, policy)
    expected = low + (high - low) * (torch.tanh(net(data["agents", "observation"])) + 1) / 2
    torch.testing.assert_close(data["agents", "action"], expected)


def test_multi_agent_categorical_in_a_collector() -> None:
    env = PointsEnv("categorical")
    policy = PolicyWrapper(linear(2, 5), env.full_action_spec, in_keys=[("agents", "observation")],
                           epsilon=0.5)  # fmt: skip
    collector = Collector(
        env, policy, frames_per_batch=30, total_frames=30, auto_register_policy_transforms=False
    )
    batch = next(iter(collector))
    collector.shutdown()
    action = batch["agents", "action"]
    assert action.shape == (3, 10, 4) and action.dtype == torch.int64
    assert set(action.unique().tolist()) == set(range(5))


# ---------------------------------------------------------------- our own environment
def test_a_plain_network_acts_in_marinenav_env() -> None:
    env = MarineNavEnv(2, "continuous", num_robots=3, seed=0)
    policy = PolicyWrapper(linear(7, 2), env.full_action_spec,
                           in_keys=[("agents", "self_state")], epsilon=0.5)  # fmt: skip
    assert policy.out_keys == [("agents", "action")] and policy.space.low.shape == (2,)
    with set_exploration_type(RANDOM):
        data = env.rollout(10, policy, break_when_any_done=False)
    action = data["agents", "action"]
    assert action.shape == (2, 10, 3, 2) and (action.abs() <= 1).all()


def test_marinenav_agent_in_a_collector_has_no_init_tracker_warning() -> None:
    env = MarineNavEnv(2, "discrete", num_robots=2, seed=0)
    agent = make_agent("dqn")
    agent.policy.set_epsilon(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        collector = Collector(env, agent.policy, frames_per_batch=20, total_frames=20)
        batch = next(iter(collector))
    collector.shutdown()
    action = batch["agents", "action"]
    assert action.shape == (2, 10, 2) and ((action >= 0) & (action < 25)).all()


def test_unbatched_marinenav_observation() -> None:
    policy = make_agent("sac").policy.eval()
    obs = TensorDict({("agents", "self_state"): torch.randn(7),
                      ("agents", "objects"): torch.randn(5, 5),
                      ("agents", "objects_mask"): torch.ones(5, dtype=torch.bool)}, [])  # fmt: skip
    action = policy(obs)["agents", "action"]
    assert action.shape == (2,) and (action.abs() < 1).all()


def test_unsupported_spec_and_wrong_network_width_are_refused() -> None:
    with pytest.raises(TypeError, match="Categorical, OneHot and Bounded"):
        PolicyWrapper(linear(3, 1), Unbounded((1,)))
    with pytest.raises(ValueError, match="action spec"):
        PolicyWrapper(linear(3, 1))
    policy = PolicyWrapper(linear(3, 3), OneHot(4))
    with pytest.raises(ValueError, match="needs 4"):
        policy(TensorDict({"observation": torch.randn(3)}, []))


def test_docs_open_with_a_short_foreign_env_example() -> None:
    page = (ROOT / "docs" / "policy.md").read_text()
    first = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert page.index("```python") < page.index("\n## "), "the example opens the page"
    code = first.group(1)
    assert len(code.strip().splitlines()) < 10 and "GymEnv" in code
    exec(compile(code, "<docs/policy.md>", "exec"), {"__name__": "__doc_example__"})
