"""DDPG: the critic loss against a hand computation with the target networks
(terminated vs truncated bootstrapping), gradient flow between the two objectives, gradient
clipping, and learning the tiny problem. Seeding, parameter counts, target copies and host
read-backs: tests/test_agent_contract.py."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from marinenav.agents.ddpg import DDPGAgent, DDPGConfig
from marinenav.training.updater import Updater
from tests.agent_utils import all_equal, observation_of, parameter_values, training_batch
from tests.learning_utils import random_return, train_briefly


def test_critic_loss_is_smooth_l1_to_the_target_networks() -> None:
    agent = DDPGAgent()
    updater = Updater(agent)
    target_actor, target_critic = copy.deepcopy(agent.actor), copy.deepcopy(agent.critic)
    updater.update(training_batch(64, "continuous", seed=1))  # online moves, targets stay
    batch = training_batch(32, "continuous", seed=2)
    nxt = batch["next"]
    terminated = nxt["terminated"].squeeze(-1)
    truncated = nxt["done"].squeeze(-1) & ~terminated
    assert terminated.any() and truncated.any()
    with torch.no_grad():
        q = agent.critic(*observation_of(batch), batch["action"]).squeeze(-1)
        next_q = target_critic(*observation_of(nxt), target_actor(*observation_of(nxt))).squeeze(-1)
        reward = nxt["reward"].squeeze(-1)
        # truncated transitions bootstrap, terminated ones do not
        expected = F.smooth_l1_loss(q, reward + 0.99 * (~terminated) * next_q)
        on_done = F.smooth_l1_loss(q, reward + 0.99 * (~nxt["done"].squeeze(-1)) * next_q)
        online_next = agent.critic(*observation_of(nxt), agent.actor(*observation_of(nxt))).squeeze(
            -1
        )
        with_online = F.smooth_l1_loss(q, reward + 0.99 * (~terminated) * online_next)
    loss, _ = agent.loss_module.loss_value(batch.clone())
    torch.testing.assert_close(loss, expected)
    assert not torch.allclose(expected, on_done) and not torch.allclose(expected, with_online)
    out = updater.update(batch)
    assert set(out.keys()) == {"loss_critic", "loss_actor"}
    torch.testing.assert_close(out["loss_critic"], expected)


def test_actor_loss_is_minus_the_mean_online_q() -> None:
    agent = DDPGAgent()
    batch = training_batch(32, "continuous", seed=3)
    with torch.no_grad():
        expected = -agent.critic(*observation_of(batch), agent.actor(*observation_of(batch))).mean()
    loss, _ = agent.loss_module.loss_actor(batch)
    torch.testing.assert_close(loss, expected)


def test_each_step_moves_only_its_own_network() -> None:
    agent = DDPGAgent()
    updater = Updater(agent)
    lm = agent.loss_module
    batch = training_batch(32, "continuous", seed=4)
    actor, critic = (
        parameter_values(lm.actor_network_params),
        parameter_values(lm.value_network_params),
    )
    targets = parameter_values(lm.target_actor_network_params) + parameter_values(
        lm.target_value_network_params
    )

    updater.step("critic", batch)
    assert all_equal(parameter_values(lm.actor_network_params), actor)
    assert not all_equal(parameter_values(lm.value_network_params), critic)
    critic = parameter_values(lm.value_network_params)

    updater.step("actor", batch)
    assert all_equal(parameter_values(lm.value_network_params), critic)
    assert not all_equal(parameter_values(lm.actor_network_params), actor)
    now = parameter_values(lm.target_actor_network_params) + parameter_values(
        lm.target_value_network_params
    )
    assert all_equal(now, targets)  # neither step touches the targets


def test_gradient_norm_is_clipped_per_network() -> None:
    agent = DDPGAgent(DDPGConfig(grad_clip_norm=1e-3))
    updater = Updater(agent)
    batch = training_batch(32, "continuous", seed=5)
    for name, net in (("critic", agent.critic), ("actor", agent.actor)):
        updater.optimizers[name] = torch.optim.SGD(net.parameters(), lr=1.0)
    before = {n: [p.clone() for p in net.parameters()] for n, net in
              (("critic", agent.critic), ("actor", agent.actor))}  # fmt: skip
    updater.update(batch)
    for name, net in (("critic", agent.critic), ("actor", agent.actor)):
        pairs = zip(net.parameters(), before[name], strict=True)
        step = torch.sqrt(sum(((p - b) ** 2).sum() for p, b in pairs))
        assert 0 < step.item() <= 1e-3 * (1 + 1e-4)


# the long set: a learning check repeated per agent (the default set: ac_iqn, rainbow)
@pytest.mark.slow
def test_learns_the_tiny_problem() -> None:
    agent = DDPGAgent(DDPGConfig(lr=1e-3, normalize_observations=True))
    trained = train_briefly(agent, iterations=25)
    # random ~ -6.4; pushing straight to the goal ~ +18
    assert trained > random_return("continuous") + 15.0


def test_n_step_transitions_discount_by_their_own_gamma_to_the_m() -> None:
    agent = DDPGAgent(DDPGConfig(n_step=3))
    updater = Updater(agent)
    assert agent.replay_options().n_step == 3 and DDPGAgent().replay_options().n_step == 1
    batch = training_batch(16, "continuous", seed=5)
    batch["discount"] = torch.tensor([0.99, 0.99**2, 0.99**3, 0.99**3] * 4).unsqueeze(-1)
    nxt = batch["next"]
    with torch.no_grad():  # before the first update the targets equal the online networks
        q = agent.critic(*observation_of(batch), batch["action"]).squeeze(-1)
        next_q = agent.critic(*observation_of(nxt), agent.actor(*observation_of(nxt))).squeeze(-1)
        bootstrap = batch["discount"].squeeze(-1) * (~nxt["terminated"].squeeze(-1)) * next_q
        expected = F.smooth_l1_loss(q, nxt["reward"].squeeze(-1) + bootstrap)
        one_step, _ = agent.loss_module.loss_value(batch.exclude("discount"))
    assert not torch.allclose(one_step, expected)  # the per-sample discount matters
    torch.testing.assert_close(updater.update(batch)["loss_critic"], expected)
    assert "steps_to_next_obs" not in batch.keys()  # the caller's batch is left as it was
