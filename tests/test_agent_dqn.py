"""DQN: loss on a hand-computed batch, gradient clipping, and learning the tiny problem.
Seeding, parameter counts, target copies and host read-backs: tests/test_agent_contract.py."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from marinenav.agents.dqn import DQNAgent, DQNConfig
from marinenav.training.updater import Updater
from tests.agent_utils import step_norm_with_plain_sgd, training_batch
from tests.learning_utils import random_return, train_briefly


def test_loss_is_smooth_l1_to_the_vanilla_target() -> None:
    agent = DQNAgent()
    updater = Updater(agent)
    batch = training_batch(16, "discrete")
    net = agent.network
    with torch.no_grad():
        q = net(batch["self_state"], batch["objects"], batch["objects_mask"])
        chosen = q.gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        nxt = batch["next"]
        best = net(nxt["self_state"], nxt["objects"], nxt["objects_mask"]).max(-1).values
        # truncated transitions bootstrap, terminated ones do not
        target = nxt["reward"].squeeze(-1) + 0.99 * (~nxt["terminated"].squeeze(-1)) * best
        expected = F.smooth_l1_loss(chosen, target)
    loss = agent.loss_module(batch)["loss"]
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(updater.update(batch)["loss_q"], expected)


def test_gradient_norm_is_clipped() -> None:
    agent = DQNAgent(DQNConfig(grad_clip_norm=1e-3))
    assert step_norm_with_plain_sgd(agent, agent.network, "q", "discrete") <= 1e-3 * (1 + 1e-4)


# the long set: a learning check repeated per agent (the default set: ac_iqn, rainbow)
@pytest.mark.slow
def test_learns_the_tiny_problem() -> None:
    agent = DQNAgent(DQNConfig(lr=1e-3, normalize_observations=True))
    trained = train_briefly(agent)
    assert trained > random_return("discrete") + 8.0


def _q(net, td) -> torch.Tensor:
    return net(td["self_state"], td["objects"], td["objects_mask"])


def test_double_q_target_picks_the_next_action_with_the_online_network() -> None:
    agent = DQNAgent(DQNConfig(double_q=True))
    updater = Updater(agent)
    target_net = copy.deepcopy(agent.network)
    with torch.no_grad():  # the online network moves away from its (target) copy
        for p in agent.network.parameters():
            p.add_(0.3 * torch.randn_like(p))
    batch = training_batch(32, "discrete")
    nxt = batch["next"]
    with torch.no_grad():
        chosen = _q(agent.network, batch).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        pick = _q(agent.network, nxt).argmax(-1, keepdim=True)
        value = _q(target_net, nxt).gather(-1, pick).squeeze(-1)
        vanilla = _q(target_net, nxt).max(-1).values
        assert not torch.equal(value, vanilla)  # the two targets differ on this batch
        target = nxt["reward"].squeeze(-1) + 0.99 * (~nxt["terminated"].squeeze(-1)) * value
        expected = F.smooth_l1_loss(chosen, target)
    torch.testing.assert_close(updater.update(batch)["loss_q"], expected)


def test_n_step_transitions_discount_by_their_own_gamma_to_the_m() -> None:
    agent = DQNAgent(DQNConfig(n_step=3))
    updater = Updater(agent)
    assert agent.replay_options().n_step == 3 and DQNAgent().replay_options().n_step == 1
    batch = training_batch(16, "discrete")
    batch["discount"] = torch.tensor([0.99, 0.99**2, 0.99**3, 0.99**3] * 4).unsqueeze(-1)
    nxt = batch["next"]
    with torch.no_grad():
        q = _q(agent.network, batch)
        chosen = q.gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        best = _q(agent.network, nxt).max(-1).values
        bootstrap = batch["discount"].squeeze(-1) * (~nxt["terminated"].squeeze(-1)) * best
        expected = F.smooth_l1_loss(chosen, nxt["reward"].squeeze(-1) + bootstrap)
        one_step = agent.loss_module(batch.exclude("discount"))["loss"]
    assert not torch.allclose(one_step, expected)  # the per-sample discount matters
    torch.testing.assert_close(updater.update(batch)["loss_q"], expected)
    assert "steps_to_next_obs" not in batch.keys()  # the caller's batch is left as it was


def test_n_step_must_be_positive() -> None:
    with pytest.raises(ValueError, match="n_step must be at least 1"):
        DQNConfig(n_step=0)
