"""MAPPO and IPPO (``marinenav.agents.ppo``) and the on-policy ``RolloutLearner``: the policy's
outputs, masking of robots that did not act, GAE at truncation and termination against a hand
computation, what each critic sees, one learner cycle on the real environment without host
reads, a mid-rollout checkpoint round trip, export, the yaml defaults and bad input."""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path

import pytest
import torch
import torch._dynamo
from omegaconf import OmegaConf
from tensordict import TensorDict
from torch._dynamo.utils import counters
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents.ppo import (
    ADVANTAGE_KEY,
    UPDATE_KEYS,
    VALUE_KEY,
    VALUE_TARGET_KEY,
    IPPOAgent,
    MAPPOAgent,
    PPOAgent,
    PPOConfig,
    pool_others,
)
from marinenav.envs import MarineNavEnv, transition
from marinenav.policy.networks import squash
from marinenav.training.rollout import RolloutLearner
from marinenav.training.updater import Updater
from tests.agent_utils import robot_observations
from tests.compile_utils import needs_cxx
from tests.sync_utils import count_read_backs, take_the_cuda_code_path

AGENTS = [MAPPOAgent, IPPOAgent]
ROOT = Path(__file__).resolve().parents[1]


def _observations(shape: tuple[int, ...], generator: torch.Generator) -> dict:
    """Random robot observations ``[*shape, ...]`` at the ``("agents", ...)`` keys."""
    return {
        ("agents", "self_state"): torch.randn(*shape, 7, generator=generator) * 5,
        ("agents", "objects"): torch.randn(*shape, 5, 5, generator=generator) * 5,
        ("agents", "objects_mask"): torch.rand(*shape, 5, generator=generator) > 0.4,
    }


def _minibatch(agent: PPOAgent, rows: int, robots: int, seed: int = 0) -> TensorDict:
    """A minibatch ``[rows]`` (agents ``[rows, robots]``) with every key of ``UPDATE_KEYS``;
    robot 2 of rows 0 and 3 and robot 0 of row 1 did not act."""
    gen = torch.Generator().manual_seed(seed)
    active = torch.ones(rows, robots, dtype=torch.bool)
    active[0, 2] = active[3, 2] = active[1, 0] = False
    batch = TensorDict(
        {**_observations((rows, robots), gen), ("agents", "active"): active},
        batch_size=[rows],
    )
    with set_exploration_type(ExplorationType.RANDOM):
        agent.policy(batch)
    # a behaviour policy a little off the current one: ratios differ from 1, some are clipped
    log_prob = batch["agents", "action_log_prob"]
    batch["agents", "action_log_prob"] = log_prob + 0.3 * torch.randn(log_prob.shape, generator=gen)
    batch[ADVANTAGE_KEY] = torch.randn(rows, robots, 1, generator=gen)
    batch[VALUE_TARGET_KEY] = torch.randn(rows, robots, 1, generator=gen) * 3
    return batch.select(*UPDATE_KEYS)


def _gradients(agent: PPOAgent, batch: TensorDict) -> list[torch.Tensor]:
    agent.zero_grad(set_to_none=True)
    losses = agent.losses(batch)
    sum(losses.values()).backward()
    return [
        p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in agent.parameters()
    ]


def _run_config(num_envs: int, robot_slots: int, seed: int = 0):
    return OmegaConf.create(
        {"env": {"num_envs": num_envs, "robot_slots": robot_slots, "dtype": "float32"},
         "seed": seed}
    )  # fmt: skip


def _steps(agent, env, learner, td, count: int) -> tuple[TensorDict, list]:
    """``count`` batched steps as the trainer takes them; returns the next step input and what
    ``learn`` returned after each step."""
    learned = []
    for _ in range(count):
        with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
            step_input = agent.policy(td)
            step_output, td = env.step_and_reset(step_input)
        learner.observe(transition(step_input, step_output))
        learned.append(learner.learn(0))
    return td, learned


# --- the policy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", AGENTS)
def test_parameter_counts(cls) -> None:
    agent = cls()
    assert sum(p.numel() for p in agent.actor.parameters()) == 50_356
    critic = sum(p.numel() for p in agent.critic.parameters())
    assert critic == (82_993 if cls is MAPPOAgent else 50_225)
    assert cls.learning == "rollout" and not cls.epsilon_greedy
    assert cls.model_type == cls.name.upper()


def test_policy_writes_the_action_its_latent_and_log_prob() -> None:
    agent = MAPPOAgent(PPOConfig(initial_log_std=-0.3))
    env = MarineNavEnv(3, "continuous", num_robots=3, seed=0, validate=False)
    td = env.reset()
    with set_exploration_type(ExplorationType.RANDOM):
        out = agent.policy(td.clone())
    action, latent = out["agents", "action"], out["agents", "latent_action"]
    log_prob, loc = out["agents", "action_log_prob"], out["agents", "loc"]
    assert action.shape == latent.shape == loc.shape == (3, 3, 2)
    assert log_prob.shape == (3, 3)
    assert action.dtype == latent.dtype == log_prob.dtype == torch.float32
    assert (action.abs() < 1).all()
    torch.testing.assert_close(action, squash(latent))
    sigma = math.exp(-0.3)
    torch.testing.assert_close(out["agents", "scale"], torch.full((3, 3, 2), sigma))
    normal = -0.5 * ((latent - loc) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)
    torch.testing.assert_close(log_prob, normal.sum(-1))
    assert not torch.equal(latent, loc)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        evaluation = agent.policy(td.clone())
    torch.testing.assert_close(evaluation["agents", "action"], squash(loc))


def test_sampling_follows_the_seed_in_flat_batch_order() -> None:
    agent = IPPOAgent()
    gen = torch.Generator().manual_seed(1)
    grouped = TensorDict(_observations((4, 3), gen), batch_size=[4])
    flat = TensorDict(
        {key: value.reshape(12, *value.shape[2:]) for key, value in grouped.items(True, True)},
        batch_size=[12],
    )
    actions = []
    for td in (grouped, flat):
        agent.policy.set_seed(5)
        with set_exploration_type(ExplorationType.RANDOM):
            actions.append(agent.policy(td)["agents", "action"].reshape(12, 2))
    torch.testing.assert_close(actions[0], actions[1])
    with set_exploration_type(ExplorationType.RANDOM):
        again = agent.policy(flat.clone())["agents", "action"]
    assert not torch.equal(again, actions[1])


# --- the losses ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", AGENTS)
def test_a_robot_that_did_not_act_contributes_no_gradient(cls) -> None:
    agent = cls()
    batch = _minibatch(agent, rows=5, robots=3)
    reference = _gradients(agent, batch)
    idle = ~batch["agents", "active"]
    garbage = batch.clone()
    for key in UPDATE_KEYS:
        if key == ("agents", "active"):
            continue
        value = garbage[key]
        mask = idle.reshape(*idle.shape, *([1] * (value.dim() - 2)))
        junk = ~value if value.dtype == torch.bool else value * 50.0 + 1e3
        garbage[key] = torch.where(mask, junk, value)
    changed = _gradients(agent, garbage)
    assert all(
        torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(reference, changed, strict=True)
    )
    # the same change to a robot that acted does move the gradients
    acted = batch.clone()
    acted[ADVANTAGE_KEY][2, 1] += 10.0
    acted[VALUE_TARGET_KEY][2, 1] += 10.0
    moved = _gradients(agent, acted)
    assert not all(torch.allclose(a, b) for a, b in zip(reference, moved, strict=True))


def test_losses_average_over_the_robot_steps_that_acted() -> None:
    """Critic loss at l2: the mean of (value - target)^2 over the acting robot-steps only."""
    agent = IPPOAgent()
    batch = _minibatch(agent, rows=4, robots=3)
    with torch.no_grad():
        losses = agent.losses(batch)
        value = agent.critic_module(batch.clone())[VALUE_KEY]
    error = (value - batch[VALUE_TARGET_KEY]).squeeze(-1) ** 2
    active = batch["agents", "active"]
    torch.testing.assert_close(losses["loss_critic"], error[active].mean())
    expected_entropy = 2 * (0.5 * math.log(2 * math.pi * math.e) - 0.5)
    torch.testing.assert_close(losses["loss_entropy"], torch.tensor(-1e-3 * expected_entropy))


def test_gae_bootstraps_at_truncation_and_not_at_termination() -> None:
    """gamma 0.9, lambda 0.8, one environment, three steps, two robots with the same rewards
    and values: robot 0 is truncated at step 1 (the step limit), robot 1 terminated there;
    both restart at step 2 (a new episode) and terminate."""
    agent = IPPOAgent(PPOConfig(gamma=0.9, gae_lambda=0.8))
    value = torch.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1, 1).expand(1, 3, 2, 1)
    next_value = torch.tensor([2.0, 5.0, 7.0]).reshape(1, 3, 1, 1).expand(1, 3, 2, 1)
    reward = torch.tensor([0.5, 1.0, 2.0]).reshape(1, 3, 1, 1).expand(1, 3, 2, 1)
    done = torch.tensor([[False, False], [True, True], [True, True]]).reshape(1, 3, 2, 1)
    terminated = torch.tensor([[False, False], [False, True], [True, True]]).reshape(1, 3, 2, 1)
    rollout = TensorDict(
        {("agents", "state_value"): value.clone(), ("next", "agents", "state_value"): next_value,
         ("next", "agents", "reward"): reward, ("next", "agents", "done"): done,
         ("next", "agents", "terminated"): terminated},
        batch_size=[1, 3],
    )  # fmt: skip
    agent.advantage_module(rollout)
    # step 2: 2 - 3 = -1 (terminal, no bootstrap), for both robots
    # step 1, truncated: 1 + 0.9 * 5 - 2 = 3.5; terminated: 1 - 2 = -1 (both cut there)
    # step 0: 0.5 + 0.9 * 2 - 1 = 1.3, plus 0.9 * 0.8 times step 1's advantage
    expected = torch.tensor([[1.3 + 0.72 * 3.5, 1.3 - 0.72], [3.5, -1.0], [-1.0, -1.0]])
    advantage = rollout[ADVANTAGE_KEY].reshape(3, 2)
    torch.testing.assert_close(advantage, expected)
    torch.testing.assert_close(
        rollout[VALUE_TARGET_KEY].reshape(3, 2), expected + torch.tensor([[1.0], [2.0], [3.0]])
    )


def test_advantages_are_standardised_over_the_robot_steps_that_acted() -> None:
    agent = MAPPOAgent()
    env = MarineNavEnv(4, "continuous", num_robots=3, seed=2, validate=False, max_episode_steps=5)
    learner = RolloutLearner(agent, Updater(agent), _run_config(4, 3), "cpu")
    _steps(agent, env, learner, env.reset(), 6)  # an episode restarts in there
    rollout = learner.buffer[:, :6].clone()
    rollout["agents", "active"][:, :, 2] = False  # one robot idle throughout
    rollout["agents", "active"][0, :3, 0] = False
    agent.estimate_advantages(rollout)
    advantage = rollout[ADVANTAGE_KEY].squeeze(-1)
    active = rollout["agents", "active"]
    assert (advantage[~active] == 0).all()
    torch.testing.assert_close(advantage[active].mean(), torch.tensor(0.0), atol=1e-5, rtol=0)
    torch.testing.assert_close(advantage[active].std(correction=0), torch.tensor(1.0))


# --- the critics --------------------------------------------------------------------------------


def _values(agent: PPOAgent, td: TensorDict) -> torch.Tensor:
    with torch.no_grad():
        return agent.critic_module(td.clone())[VALUE_KEY].squeeze(-1)


@pytest.mark.parametrize("cls", AGENTS)
def test_only_the_centralised_critic_sees_the_other_robots(cls) -> None:
    agent = cls()
    gen = torch.Generator().manual_seed(3)
    td = TensorDict(
        {**_observations((2, 4), gen), ("agents", "active"): torch.ones(2, 4, dtype=torch.bool)},
        batch_size=[2],
    )
    base = _values(agent, td)
    other = td.clone()
    other["agents", "self_state"][:, 1] += torch.tensor([8.0, -6.0, 1.0, 0.5, 0.2, 300.0, -200.0])
    changed = _values(agent, other)
    torch.testing.assert_close(changed[:, 1] != base[:, 1], torch.ones(2, dtype=torch.bool))
    if cls is MAPPOAgent:
        assert (changed[:, [0, 2, 3]] != base[:, [0, 2, 3]]).all()
    else:
        torch.testing.assert_close(changed[:, [0, 2, 3]], base[:, [0, 2, 3]], rtol=0, atol=0)
    # a robot that does not act (absent or finished) is invisible to the others' values
    td["agents", "active"][:, 1] = False
    other["agents", "active"][:, 1] = False
    torch.testing.assert_close(
        _values(agent, other)[:, [0, 2, 3]], _values(agent, td)[:, [0, 2, 3]], rtol=0, atol=0
    )


def test_pooling_over_the_other_acting_robots_against_a_loop() -> None:
    gen = torch.Generator().manual_seed(6)
    for slots in (1, 2, 5):
        features = torch.relu(torch.randn(7, slots, 4, generator=gen))
        features[:, 0, :2] = features[:, -1, :2]  # ties between robots
        active = torch.rand(7, slots, generator=gen) > 0.3
        mean, maximum = pool_others(features, active)
        for e in range(7):
            for i in range(slots):
                others = [j for j in range(slots) if j != i and active[e, j]]
                if not others:
                    expected_mean = expected_max = torch.zeros(4)
                else:
                    expected_mean = features[e, others].mean(0)
                    expected_max = features[e, others].amax(0)
                torch.testing.assert_close(mean[e, i], expected_mean)
                torch.testing.assert_close(maximum[e, i], expected_max, rtol=0, atol=0)


# --- the learner --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", AGENTS)
def test_one_learner_cycle_on_the_env_moves_the_networks_without_host_reads(cls) -> None:
    agent = cls(PPOConfig(rollout_steps=4, epochs=2, minibatches=4))
    env = MarineNavEnv(5, "continuous", num_robots=3, seed=0, validate=False, max_episode_steps=2)
    take_the_cuda_code_path(env.sim)
    learner = RolloutLearner(agent, Updater(agent), _run_config(5, 3), "cpu")
    before = {name: p.detach().clone() for name, p in agent.named_parameters()}
    td = env.reset()
    with count_read_backs() as counts:
        td, learned = _steps(agent, env, learner, td, 3)
    assert sum(counts.values()) == 0, dict(counts)
    assert learned == [(None, 0)] * 3
    assert all(torch.equal(p, before[name]) for name, p in agent.named_parameters())
    # the step limit (3 steps: the limit counts from 0) ends every episode inside the
    # rollout: truncated robots are done, not terminated
    nxt = learner.buffer["next", "agents"]
    assert nxt["done"][:, 2].all() and not nxt["done"][:, :2].any()
    with count_read_backs() as counts:
        td, learned = _steps(agent, env, learner, td, 1)
    assert sum(counts.values()) == 0, dict(counts)
    losses, updates = learned[0]
    assert updates == 2 * 4 and learner.step == 0
    assert set(losses.keys()) == {"loss_objective", "loss_critic", "loss_entropy"}
    assert all(value.dim() == 0 and torch.isfinite(value) for value in losses.values())
    for name, p in agent.named_parameters():
        assert not torch.equal(p, before[name]), name


@pytest.mark.parametrize("cls", AGENTS)
def test_learner_state_round_trip_mid_rollout_continues_identically(cls) -> None:
    config = PPOConfig(rollout_steps=4, epochs=2, minibatches=2)

    def build(seed: int):
        agent = cls(dataclasses.replace(config, seed=seed))
        agent.policy.set_seed(seed)
        env = MarineNavEnv(4, "continuous", num_robots=3, seed=seed, validate=False,
                           max_episode_steps=3)  # fmt: skip
        updater = Updater(agent)
        return agent, env, RolloutLearner(agent, updater, _run_config(4, 3, seed), "cpu")

    agent, env, learner = build(0)
    td, _ = _steps(agent, env, learner, env.reset(), 4 + 2)  # one learned rollout, 2 steps in
    snapshot = copy.deepcopy(
        {"agent": agent.training_state_dict(), "updater": learner.updater.state_dict(),
         "rng": agent.rng_state(), "learner": learner.state_dict(), "sim": env.sim.state_dict()}
    )  # fmt: skip
    _, learned = _steps(agent, env, learner, td, 2)

    other, other_env, other_learner = build(9)
    other_env.reset()
    other.load_training_state_dict(snapshot["agent"])
    other_learner.updater.load_state_dict(snapshot["updater"])
    other.load_rng_state(snapshot["rng"])
    other_learner.load_state_dict(snapshot["learner"])
    other_env.sim.load_state_dict(snapshot["sim"])
    _, other_learned = _steps(other, other_env, other_learner, other_env.observe(), 2)

    (losses, updates), (other_losses, other_updates) = learned[-1], other_learned[-1]
    assert updates == other_updates == 4
    for key, value in losses.items():
        torch.testing.assert_close(other_losses[key], value, rtol=0, atol=0)
    for (name, p), q in zip(agent.named_parameters(), other.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=0, atol=0, msg=name)


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("cls", AGENTS)
def test_compiled_update_and_acting_equal_eager_and_compile_once(cls) -> None:
    """``Updater.compile()`` on rollout minibatches and ``compile_policy()`` (the actor's
    ``mu, sigma`` module; the noise stays eager): eager's losses, parameters (to ``1e-6``, a
    hundredth of one Adam step) and actions, no graph made after the first compiled call."""
    torch._dynamo.reset()
    counters.clear()
    eager, compiled = cls(), cls()
    updaters = Updater(eager), Updater(compiled)
    updaters[1].compile()
    for k in range(4):
        batch = _minibatch(eager, 16, 3, seed=k)
        with torch._dynamo.config.patch(error_on_recompile=k > 1):
            results = [updater.update(batch.clone()) for updater in updaters]
        for key, value in results[0].items():
            torch.testing.assert_close(results[1][key], value, rtol=1e-5, atol=1e-6)
    assert counters["stats"]["unique_graphs"] >= 1
    for p, q in zip(eager.parameters(), compiled.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=0, atol=1e-6)
    torch._dynamo.reset()
    counters.clear()
    eager, compiled = cls(), cls()  # fresh random streams (_minibatch acted with eager's)
    compiled.compile_policy()
    with set_exploration_type(ExplorationType.RANDOM):
        for t in range(4):
            obs = robot_observations(4, 5, seed=t)
            with torch._dynamo.config.patch(error_on_recompile=t > 0):
                acted = [
                    agent.policy(obs.clone())["agents", "action"] for agent in (eager, compiled)
                ]
            torch.testing.assert_close(acted[1], acted[0], rtol=0, atol=1e-6)
    assert counters["stats"]["unique_graphs"] == 1


# --- export, config, bad input ------------------------------------------------------------------


def test_export_network_and_planner_action_match_the_policy() -> None:
    agent = MAPPOAgent()
    gen = torch.Generator().manual_seed(4)
    obs = _observations((6,), gen)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        action = agent.policy(TensorDict(obs, batch_size=[6]))["agents", "action"]
    module = copy.deepcopy(agent.export_network()).double().eval()  # what marinenav.export does
    inputs = tuple(obs[("agents", k)].double() for k in ("self_state", "objects", "objects_mask"))
    with torch.no_grad():
        mu, log_sigma = module(inputs)
    assert mu.shape == log_sigma.shape == (6, 2)
    torch.testing.assert_close(log_sigma, torch.full((6, 2), -0.5, dtype=torch.float64))
    torch.testing.assert_close(MAPPOAgent.planner_action((mu, log_sigma)).float(), action)
    noise = torch.randn(6, 2, generator=gen, dtype=torch.float64)
    expected = (2 / math.pi) * torch.atan(mu + math.exp(-0.5) * noise)
    torch.testing.assert_close(MAPPOAgent.planner_action((mu, log_sigma), noise=noise), expected)


@pytest.mark.parametrize("name", ["mappo", "ippo"])
def test_a_run_gets_the_config_defaults(name: str) -> None:
    """``agent=mappo`` (or ``ippo``) with no recipe part composes to PPOConfig's defaults: the
    yaml file selects the schema and states no value of its own."""
    from tests.run_utils import compose_config

    values = OmegaConf.to_container(compose_config(f"agent={name}", "recipe=paper").agent)
    assert values.pop("name") == name
    defaults = dataclasses.asdict(PPOConfig())
    assert values == defaults
    assert OmegaConf.load(ROOT / "conf" / "agent" / f"{name}.yaml") == {
        "defaults": [f"/schema/agent/{name}@_here_"]
    }


def test_bad_input_gets_a_clear_error() -> None:
    with pytest.raises(ValueError, match="agent.rollout_steps must be at least 1, got 0"):
        PPOConfig(rollout_steps=0)
    with pytest.raises(ValueError, match="loss_critic_type"):
        PPOConfig(loss_critic_type="huber")
    agent = IPPOAgent(PPOConfig(rollout_steps=2, minibatches=3))
    with pytest.raises(ValueError, match="epsilon-greedy"):
        agent.policy.set_epsilon(0.1)
    agent.policy.set_epsilon(0.0)
    updater = Updater(agent)
    with pytest.raises(ValueError, match="minibatches=3 must divide the 4 rows"):
        RolloutLearner(agent, updater, _run_config(2, 3), "cpu")
    learner = RolloutLearner(agent, updater, _run_config(3, 5), "cpu")
    env = MarineNavEnv(3, "continuous", num_robots=3, seed=0, validate=False)
    with pytest.raises(ValueError, match=r"built for \[E, R\] = \[3, 5\]"):
        _steps(agent, env, learner, env.reset(), 1)
    with pytest.raises(ValueError, match="missing"):
        updater.update(_minibatch(agent, 4, 3).exclude(ADVANTAGE_KEY))
