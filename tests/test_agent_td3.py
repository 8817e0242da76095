"""TD3 (DDPG with clipped double Q, target policy smoothing and delayed actor steps): the critic
loss against a hand computation with the target networks, the smoothing noise and its clip, the
actor's delay (and its phase across a checkpoint), the n-step discount, option validation and
learning the tiny problem. Seeding, parameter counts, target copies, host read-backs and the
export: tests/test_agent_contract.py."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from marinenav.agents.td3 import TD3Agent, TD3Config
from marinenav.training.updater import Updater
from tests.agent_utils import all_equal, observation_of, training_batch
from tests.learning_utils import random_return, train_briefly


def snapshot(parameters) -> list[torch.Tensor]:
    return [p.detach().clone() for p in parameters]


def hand_loss(agent: TD3Agent, target_actor, batch, discount=0.99) -> torch.Tensor:
    """``sum_k SmoothL1(Q_k(s, a), r + discount (1 - terminated) min_k Q_target_k(s', mu_t(s')))``
    with no smoothing noise."""
    nxt = batch["next"]
    with torch.no_grad():
        next_action = target_actor(*observation_of(nxt))
        targets = [agent.critic_network(k, target=True) for k in (0, 1)]
        next_q = torch.stack([q(*observation_of(nxt), next_action) for q in targets]).squeeze(-1)
        bootstrap = discount * (~nxt["terminated"].squeeze(-1)) * next_q.min(0)[0]
        y = nxt["reward"].squeeze(-1) + bootstrap
        observed = observation_of(batch)
        q = [agent.critic_network(k)(*observed, batch["action"]).squeeze(-1) for k in (0, 1)]
    return F.smooth_l1_loss(q[0], y) + F.smooth_l1_loss(q[1], y)


def test_critic_loss_is_smooth_l1_to_the_min_of_the_target_critics() -> None:
    agent = TD3Agent(TD3Config(policy_noise=0.0))
    updater = Updater(agent)
    target_actor = copy.deepcopy(agent.actor)
    updater.update(training_batch(64, "continuous", seed=1))  # online moves, targets stay
    batch = training_batch(32, "continuous", seed=2)
    expected = hand_loss(agent, target_actor, batch)
    # the two critics start apart (seeds +1, +2), so the min differs from either critic alone
    assert not all_equal(snapshot(agent.critic_network(0).parameters()),
                         snapshot(agent.critic_network(1).parameters()))  # fmt: skip
    loss, _ = agent.loss_module.value_loss(batch.clone())
    torch.testing.assert_close(loss, expected)
    out = updater.update(batch)
    assert set(out.keys()) == {"loss_critic", "loss_actor"}
    torch.testing.assert_close(out["loss_critic"], expected)


def test_smoothing_noise_moves_the_target_and_its_clip_bounds_it() -> None:
    batch = training_batch(32, "continuous", seed=3)
    plain = TD3Agent(TD3Config(policy_noise=0.0))
    expected = hand_loss(plain, plain.actor, batch)  # before any update the targets are copies
    noisy = TD3Agent(TD3Config(policy_noise=0.5))
    torch.manual_seed(0)
    loss_noisy, _ = noisy.loss_module.value_loss(batch.clone())
    assert not torch.allclose(loss_noisy, expected)
    clipped = TD3Agent(TD3Config(policy_noise=0.5, noise_clip=0.0))
    loss_clipped, _ = clipped.loss_module.value_loss(batch.clone())
    torch.testing.assert_close(loss_clipped, expected)


def test_actor_steps_on_every_policy_delay_th_update_from_the_first() -> None:
    agent = TD3Agent(TD3Config(policy_delay=3))
    updater = Updater(agent)
    moved = []
    for call in range(7):
        actor = snapshot(agent.actor.parameters())
        critics = snapshot(agent.critic_parameters())
        out = updater.update(training_batch(32, "continuous", seed=10 + call))
        assert not all_equal(snapshot(agent.critic_parameters()), critics)
        moved.append(not all_equal(snapshot(agent.actor.parameters()), actor))
        if moved[-1]:
            last_actor_loss = out["loss_actor"].clone()
        torch.testing.assert_close(out["loss_actor"], last_actor_loss)  # reported until the next
    assert moved == [True, False, False, True, False, False, True]


def test_the_actor_phase_survives_a_checkpoint() -> None:
    agent = TD3Agent()  # policy_delay 2
    updater = Updater(agent)
    updater.update(training_batch(32, "continuous", seed=20))  # actor steps; the next does not
    resumed = TD3Agent()
    resumed_updater = Updater(resumed)
    resumed.load_training_state_dict(copy.deepcopy(agent.training_state_dict()))
    resumed_updater.load_state_dict(copy.deepcopy(updater.state_dict()))
    assert resumed_updater.updates == 1
    actor = snapshot(resumed.actor.parameters())
    out = resumed_updater.update(training_batch(32, "continuous", seed=21))
    assert all_equal(snapshot(resumed.actor.parameters()), actor)
    assert torch.equal(out["loss_actor"], torch.zeros(()))  # no actor step since the resume


def test_n_step_transitions_discount_by_their_own_gamma_to_the_m() -> None:
    agent = TD3Agent(TD3Config(n_step=3, policy_noise=0.0))
    updater = Updater(agent)
    assert agent.replay_options().n_step == 3 and TD3Agent().replay_options().n_step == 1
    batch = training_batch(16, "continuous", seed=5)
    discount = torch.tensor([0.99, 0.99**2, 0.99**3, 0.99**3] * 4)
    batch["discount"] = discount.unsqueeze(-1)
    expected = hand_loss(agent, agent.actor, batch, discount=discount)
    torch.testing.assert_close(updater.update(batch)["loss_critic"], expected)
    assert "steps_to_next_obs" not in batch.keys()  # the caller's batch is left as it was


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"policy_delay": 0}, "policy_delay must be at least 1"),
        ({"policy_noise": -0.1}, "must not be negative"),
        ({"noise_clip": -1.0}, "must not be negative"),
        ({"n_step": 0}, "n_step must be at least 1"),
    ],
)
def test_bad_options_are_refused(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TD3Config(**options)


# the long set: a learning check repeated per agent (the default set: ac_iqn, rainbow)
@pytest.mark.slow
def test_learns_the_tiny_problem() -> None:
    agent = TD3Agent(TD3Config(lr=1e-3, normalize_observations=True, policy_delay=1))
    trained = train_briefly(agent, iterations=25)
    # random ~ -6.4; pushing straight to the goal ~ +18
    assert trained > random_return("continuous") + 15.0
