"""AC-IQN: both losses against their written-out definitions, which network each step
moves (critic step: critic only; actor step: actor only, no critic gradient), update order,
acting, learning the tiny problem, the `frozen` helper the actor loss uses and the online
parameters the losses call being the networks' own. Seeding, parameter counts, target copies
and host read-backs: tests/test_agent_contract.py."""

from __future__ import annotations

import copy
import re

import pytest
import torch

from marinenav.agents import make_agent
from marinenav.agents.ac_iqn import ACIQNAgent, ACIQNConfig
from marinenav.agents.base import frozen
from marinenav.training.updater import Updater
from tests.agent_utils import (
    assert_terminated_do_not_bootstrap,
    observation_of,
    robot_observations,
    training_batch,
)
from tests.learning_utils import random_return, train_briefly


def snapshot(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def unchanged(module: torch.nn.Module, before: list[torch.Tensor]) -> bool:
    return all(torch.equal(p, b) for p, b in zip(module.parameters(), before, strict=True))


def values(params) -> list[torch.Tensor]:
    return [p.detach().clone() for p in params.values(True, True)]


def test_critic_is_seeded_apart_from_the_actor() -> None:
    agent = ACIQNAgent()
    # the critic uses seed + 1: its trunk differs from the actor's
    assert not torch.equal(
        agent.actor.encoder.self_layer.weight, agent.critic.encoder.self_layer.weight
    )


def quantile_huber(pred, target, tau):
    delta = target[:, None, :] - pred[:, :, None]
    huber = torch.where(delta.abs() <= 1, 0.5 * delta**2, delta.abs() - 0.5)
    return ((tau[:, :, None] - (delta < 0).float()).abs() * huber).mean(-1).sum(-1).mean()


def test_critic_loss_matches_the_written_out_definition() -> None:
    agent = ACIQNAgent()  # targets start as copies of the online networks
    batch = training_batch(16, "continuous")
    nxt = batch["next"]
    obs = (batch["self_state"], batch["objects"], batch["objects_mask"])
    next_obs = (nxt["self_state"], nxt["objects"], nxt["objects_mask"])
    torch.manual_seed(7)
    tau, tau_next = torch.rand(16, 8), torch.rand(16, 8)  # the loss's draw order
    with torch.no_grad():
        z = agent.critic(*obs, batch["action"], tau)
        z_next = agent.critic(*next_obs, agent.actor(*next_obs), tau_next)
        # terminated transitions do not bootstrap, truncated ones do
        target = nxt["reward"] + 0.99 * (~nxt["terminated"]).float() * z_next
        expected = quantile_huber(z, target, tau)
    torch.manual_seed(7)
    torch.testing.assert_close(agent.loss_module.critic_loss(batch), expected)


def test_terminated_transitions_do_not_bootstrap_and_truncated_ones_do() -> None:
    assert_terminated_do_not_bootstrap(ACIQNAgent().loss_module.target_quantiles, "continuous")


def test_actor_loss_is_minus_the_mean_quantile_of_the_actor_action() -> None:
    agent = ACIQNAgent()
    batch = training_batch(16, "continuous")
    obs = (batch["self_state"], batch["objects"], batch["objects_mask"])
    torch.manual_seed(3)
    tau = torch.rand(16, 8)
    with torch.no_grad():
        expected = -agent.critic(*obs, agent.actor(*obs), tau).mean()
    torch.manual_seed(3)
    torch.testing.assert_close(agent.loss_module.actor_loss(batch), expected)


def test_risk_averse_actor_averages_the_lower_quantiles_only() -> None:
    agent = ACIQNAgent(ACIQNConfig(cvar_alpha=0.25))
    batch = training_batch(16, "continuous")
    obs = (batch["self_state"], batch["objects"], batch["objects_mask"])
    torch.manual_seed(3)
    tau = 0.25 * torch.rand(16, 8)  # U(0, 0.25): the worst quarter of outcomes
    with torch.no_grad():
        expected = -agent.critic(*obs, agent.actor(*obs), tau).mean()
        risk_neutral = -agent.critic(*obs, agent.actor(*obs), tau / 0.25).mean()
    torch.manual_seed(3)
    loss = agent.loss_module.actor_loss(batch)
    torch.testing.assert_close(loss, expected)
    assert not torch.allclose(loss, risk_neutral)


def test_cvar_alpha_outside_zero_one_is_refused() -> None:
    for alpha, rule in ((0.0, "must be positive"), (1.5, "must be in [0, 1]")):
        with pytest.raises(ValueError, match=rf"agent.cvar_alpha {re.escape(rule)}"):
            ACIQNConfig(cvar_alpha=alpha)


def test_critic_step_moves_only_the_critic() -> None:
    agent = ACIQNAgent()
    updater = Updater(agent)
    actor, critic = snapshot(agent.actor), snapshot(agent.critic)
    targets = values(agent.loss_module.target_actor_params) + values(
        agent.loss_module.target_critic_params
    )
    updater.step("critic", training_batch(32, "continuous"))
    assert unchanged(agent.actor, actor)
    assert not unchanged(agent.critic, critic)
    assert all(p.grad is None for p in agent.actor.parameters())  # the target actor has no grad
    after = values(agent.loss_module.target_actor_params) + values(
        agent.loss_module.target_critic_params
    )
    assert all(torch.equal(a, b) for a, b in zip(after, targets, strict=True))


def test_actor_step_moves_only_the_actor_and_leaves_no_critic_gradient() -> None:
    agent = ACIQNAgent()
    updater = Updater(agent)
    batch = training_batch(32, "continuous")
    updater.step("critic", batch)
    updater.optimizers["critic"].zero_grad(set_to_none=True)
    actor, critic = snapshot(agent.actor), snapshot(agent.critic)
    updater.step("actor", batch)
    assert unchanged(agent.critic, critic)
    assert all(p.grad is None for p in agent.critic.parameters())
    assert not unchanged(agent.actor, actor)


def test_update_steps_the_critic_then_the_actor_against_the_updated_critic() -> None:
    batch = training_batch(32, "continuous")
    first, second = ACIQNAgent(), ACIQNAgent()  # identical (seeded) networks
    updaters = Updater(first), Updater(second)
    torch.manual_seed(0)
    losses = updaters[0].update(batch)
    assert set(losses.keys()) == {"loss_critic", "loss_actor"}
    assert all(v.dim() == 0 and not v.requires_grad for v in losses.values())
    torch.manual_seed(0)
    critic_step = updaters[1].step("critic", batch)
    torch.testing.assert_close(losses["loss_critic"], critic_step["loss_critic"])
    torch.testing.assert_close(losses["loss_actor"], second.loss_module.actor_loss(batch))


def test_policy_acts_with_the_actor_when_deterministic() -> None:
    agent = ACIQNAgent()
    td = robot_observations(3, 4)
    agent.policy.eval()
    action = agent.policy(td)["agents", "action"]
    assert action.shape == (3, 4, 2)
    with torch.no_grad():
        expected = agent.actor(*observation_of(td["agents"]))
    torch.testing.assert_close(action, expected)
    assert (action.abs() < 1).all()


def test_learns_the_tiny_problem() -> None:
    agent = ACIQNAgent(ACIQNConfig(lr=1e-3, normalize_observations=True))
    trained = train_briefly(agent)
    assert trained > random_return("continuous") + 8.0


def test_frozen_passes_gradients_to_inputs_not_weights_and_restores_the_flags() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    net[2].bias.requires_grad_(False)  # already frozen before the block: stays frozen
    x = torch.randn(5, 3, requires_grad=True)
    with frozen(net):
        assert not any(p.requires_grad for p in net.parameters())
        net(x).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert all(p.grad is None for p in net.parameters())
    assert [p.requires_grad for p in net.parameters()] == [True, True, True, False]
    with pytest.raises(RuntimeError, match="inside"), frozen(net):
        raise RuntimeError("inside")
    assert [p.requires_grad for p in net.parameters()] == [True, True, True, False]


@pytest.mark.parametrize("name", ["ac_iqn", "iqn"])
def test_online_parameters_are_the_networks_own_also_after_a_checkpoint_load(name: str) -> None:
    """The quantile losses call their online networks without swapping ``*_params`` in: that
    is only the same computation while those tensordicts hold the networks' own parameters and
    buffers (TorchRL's ``convert_to_functional`` makes them so), also after loading a state."""
    agent = make_agent(name, seed=3)
    agent.load_training_state_dict(copy.deepcopy(make_agent(name, seed=4).training_state_dict()))
    loss = agent.loss_module
    for network_name in ("actor", "critic") if name == "ac_iqn" else ("network",):
        network, params = getattr(loss, network_name), getattr(loss, f"{network_name}_params")
        parameters = dict(network.named_parameters())
        own = parameters | dict(network.named_buffers())
        held = {".".join(key): value for key, value in params.items(True, True)}
        assert held.keys() == own.keys()
        for key, value in held.items():
            assert value.data_ptr() == own[key].data_ptr(), (network_name, key)
            if key in parameters:
                assert value is own[key], (network_name, key)
