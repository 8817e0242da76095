"""DQN (spec B5): loss on a hand-computed batch, gradient clipping, and learning the tiny problem.
Seeding, parameter counts, target copies and host read-backs: tests/test_agent_contract.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from marinenav.agents.dqn import DQNAgent, DQNConfig
from tests.agent_utils import step_norm_with_plain_sgd, training_batch
from tests.learning_utils import random_return, train_briefly


def test_loss_is_smooth_l1_to_the_vanilla_target() -> None:
    agent = DQNAgent()
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
    torch.testing.assert_close(agent.update(batch)["loss_q"], expected)


def test_gradient_norm_is_clipped() -> None:
    agent = DQNAgent(DQNConfig(grad_clip_norm=1e-3))
    assert step_norm_with_plain_sgd(agent, agent.network, "q", "discrete") <= 1e-3 * (1 + 1e-4)


def test_learns_the_tiny_problem() -> None:
    agent = DQNAgent(DQNConfig(lr=1e-3, normalize_observations=True))
    trained = train_briefly(agent)
    assert trained > random_return("discrete") + 8.0
