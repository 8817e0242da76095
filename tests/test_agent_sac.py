"""SAC (the standard algorithm): the stacked critics' sizes and initialisations, the
atan-squashed Gaussian's log-density, the critic target and actor loss against hand
computations with a fixed sample, gradient flow, per-critic clipping, the temperature, and
learning the tiny problem. Seeding, the actor's parameter count, target copies and host
read-backs: tests/test_agent_contract.py."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.distributions import Normal

from marinenav.agents.sac import AtanSquashedNormal, SACAgent, SACConfig
from marinenav.policy.networks import QCritic, squash
from marinenav.training.updater import Updater
from tests.agent_utils import all_equal, observation_of, parameter_values, training_batch
from tests.learning_utils import random_return, train_briefly


def _state_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all_equal(list(a.state_dict().values()), list(b.state_dict().values()))


def _written_sample(
    agent: SACAgent, observation: tuple[torch.Tensor, ...], noise: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a, log pi(a|s))`` of the actor's reparameterised draw ``z = mu + sigma * noise``,
    ``a = (2/pi) atan(z)``, with the atan change of variables written out."""
    loc, log_std = agent.actor(*observation)
    z = loc + log_std.exp() * noise
    log_prob = (
        Normal(loc, log_std.exp()).log_prob(z) - math.log(2 / math.pi) + torch.log1p(z**2)
    ).sum(-1)
    return squash(z), log_prob


def _written_critic_loss(
    agent: SACAgent, batch, targets: list[QCritic], noise: torch.Tensor, discount: torch.Tensor
) -> torch.Tensor:
    """Both critics' MSE against ``r + discount (1 - terminated) [min Q_t(s', a') - alpha log
    pi(a'|s')]``, ``a'`` the current actor's draw with ``noise`` [B, 2]; ``discount`` [B] or a
    float."""
    nxt = batch["next"]
    next_action, log_prob = _written_sample(agent, observation_of(nxt), noise)
    next_q = torch.minimum(*(t(*observation_of(nxt), next_action).squeeze(-1) for t in targets))
    not_terminal = ~nxt["terminated"].squeeze(-1)
    soft_v = next_q - agent.config.alpha * log_prob
    y = nxt["reward"].squeeze(-1) + discount * not_terminal * soft_v
    q = [
        agent.critic_network(k)(*observation_of(batch), batch["action"]).squeeze(-1)
        for k in (0, 1)
    ]
    return F.mse_loss(q[0], y) + F.mse_loss(q[1], y)


def test_critics_are_stacked_with_the_original_size() -> None:
    agent = SACAgent()
    stacked = agent.critic_parameters()
    assert all(p.shape[0] == 2 for p in stacked)
    assert sum(p[0].numel() for p in stacked) == sum(p[1].numel() for p in stacked) == 50_609
    for k in (0, 1):
        assert sum(p.numel() for p in agent.critic_network(k).parameters()) == 50_609


def test_critics_start_from_their_own_seeds() -> None:
    agent = SACAgent(SACConfig(seed=7))
    first, second = agent.critic_network(0), agent.critic_network(1)
    assert _state_equal(first, QCritic(seed=8)) and _state_equal(second, QCritic(seed=9))
    assert not torch.equal(first.state_layer.weight, second.state_layer.weight)
    assert _state_equal(agent.critic_network(0, target=True), first)
    assert _state_equal(agent.critic_network(1, target=True), second)


def test_log_prob_is_the_change_of_variables_of_the_atan_squashing() -> None:
    gen = torch.Generator().manual_seed(0)
    loc, scale = torch.randn(64, 2, generator=gen), torch.rand(64, 2, generator=gen) + 0.2
    z = (loc + scale * 2.0 * torch.randn(64, 2, generator=gen)).requires_grad_()
    a = squash(z)
    (dadz,) = torch.autograd.grad(a.sum(), z)  # diagonal Jacobian: element-wise
    expected = (Normal(loc, scale).log_prob(z) - dadz.abs().log()).sum(-1)
    dist = AtanSquashedNormal(loc, scale)
    torch.testing.assert_close(dist.log_prob(a.detach()), expected.detach(), rtol=1e-4, atol=1e-4)
    # the sampling path scores its own latent draw
    torch.manual_seed(3)
    sample, log_prob = dist.rsample_and_log_prob()
    torch.manual_seed(3)
    z2 = loc + scale * torch.randn(64, 2)
    torch.testing.assert_close(sample, squash(z2))
    direct = (Normal(loc, scale).log_prob(z2) - math.log(2 / math.pi) + torch.log1p(z2**2)).sum(-1)
    torch.testing.assert_close(log_prob, direct)
    torch.testing.assert_close(dist.deterministic_sample, squash(loc))


@pytest.mark.parametrize(("loc", "scale"), [(0.0, 1.0), (0.7, 0.5), (-1.5, 2.0)])
def test_one_dimensional_density_integrates_to_one(loc: float, scale: float) -> None:
    grid = torch.linspace(-1.0, 1.0, 200_001, dtype=torch.float64)[1:-1]
    dist = AtanSquashedNormal(torch.tensor([loc], dtype=torch.float64),
                              torch.tensor([scale], dtype=torch.float64))  # fmt: skip
    density = dist.log_prob(grid.unsqueeze(-1)).exp()
    total = torch.trapezoid(density, grid)
    assert abs(total.item() - 1.0) < 1e-3


def test_critic_target_is_the_soft_min_q_of_the_current_actor() -> None:
    cfg = SACConfig()
    agent = SACAgent(cfg)
    updater = Updater(agent)
    targets = [agent.critic_network(k) for k in (0, 1)]
    updater.update(training_batch(64, "continuous", seed=1))  # online moves, targets stay
    assert _state_equal(agent.critic_network(0, target=True), targets[0])
    batch = training_batch(16, "continuous", seed=2)
    nxt = batch["next"]
    terminated = nxt["terminated"].squeeze(-1)
    assert terminated.any() and (nxt["done"].squeeze(-1) & ~terminated).any()
    torch.manual_seed(5)
    loss, _ = agent.loss_module.qvalue_v2_loss(batch.clone())
    torch.manual_seed(5)
    noise = torch.randn(16, 2)  # the one draw of the target: a' ~ pi(.|s')
    with torch.no_grad():  # the current actor draws a', not a target actor
        expected = _written_critic_loss(agent, batch, targets, noise, cfg.gamma)
    torch.testing.assert_close(loss, expected)


def test_n_step_transitions_discount_the_soft_value_by_their_own_gamma_to_the_m() -> None:
    cfg = SACConfig(n_step=3, gamma=0.5)  # a small gamma, so that gamma ** m differ visibly
    agent = SACAgent(cfg)
    updater = Updater(agent)
    assert agent.replay_options().n_step == 3 and SACAgent().replay_options().n_step == 1
    batch = training_batch(16, "continuous", seed=5)
    batch["discount"] = torch.tensor([0.5, 0.5**2, 0.5**3, 0.5**3] * 4).unsqueeze(-1)
    targets = [agent.critic_network(k) for k in (0, 1)]  # no update yet: targets = online
    torch.manual_seed(7)
    noise = torch.randn(16, 2)  # the target's one draw a' ~ pi(.|s')
    with torch.no_grad():
        discount = batch["discount"].squeeze(-1)
        expected = _written_critic_loss(agent, batch, targets, noise, discount)
        torch.manual_seed(7)
        one_step, _ = agent.loss_module.qvalue_v2_loss(batch.exclude("discount"))
    assert not torch.allclose(one_step, expected)  # the per-sample discount matters
    torch.manual_seed(7)
    torch.testing.assert_close(updater.update(batch)["loss_critic"], expected)
    assert "steps_to_next_obs" not in batch.keys()  # the caller's batch is left as it was


def test_actor_loss_is_alpha_log_pi_minus_min_q() -> None:
    cfg = SACConfig()
    agent = SACAgent(cfg)
    batch = training_batch(16, "continuous", seed=3)
    torch.manual_seed(6)
    loss, metadata = agent.loss_module.actor_loss(batch)
    torch.manual_seed(6)
    noise = torch.randn(16, 2)
    with torch.no_grad():
        action, log_prob = _written_sample(agent, observation_of(batch), noise)
        q = torch.minimum(
            *(agent.critic_network(k)(*observation_of(batch), action).squeeze(-1) for k in (0, 1))
        )
        expected = (cfg.alpha * log_prob - q).mean()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(metadata["log_prob"], log_prob)


def test_each_step_moves_only_its_own_network() -> None:
    agent = SACAgent(SACConfig(learn_alpha=True))
    updater = Updater(agent)
    lm = agent.loss_module
    batch = training_batch(32, "continuous", seed=4)
    actor, critics = (
        parameter_values(lm.actor_network_params),
        parameter_values(lm.qvalue_network_params),
    )
    targets = parameter_values(lm.target_qvalue_network_params)
    log_alpha = lm.log_alpha.detach().clone()

    updater.step("critics", batch)
    assert all_equal(parameter_values(lm.actor_network_params), actor)
    assert not all_equal(parameter_values(lm.qvalue_network_params), critics)
    assert torch.equal(lm.log_alpha, log_alpha)
    critics = parameter_values(lm.qvalue_network_params)

    # the actor's step also steps the learned temperature, on its own loss: no gradient of the
    # actor loss reaches alpha, none of the alpha loss the actor
    trainable = [p for p in lm.actor_network_params.values(True, True) if p.requires_grad]
    losses = lm.actor_loss(batch)[0], lm.alpha_loss(torch.zeros(32)).mean()
    grads = [torch.autograd.grad(loss, (lm.log_alpha, *trainable), allow_unused=True)
             for loss in losses]  # fmt: skip
    assert grads[0][0] is None and all(g is None for g in grads[1][1:])
    updater.step("actor", batch)
    assert all_equal(parameter_values(lm.qvalue_network_params), critics)
    assert not all_equal(parameter_values(lm.actor_network_params), actor)
    assert not torch.equal(lm.log_alpha, log_alpha)
    # neither step touches the targets
    assert all_equal(parameter_values(lm.target_qvalue_network_params), targets)


def test_each_critic_gradient_is_clipped_separately() -> None:
    agent = SACAgent(SACConfig(grad_clip_norm=1e-3))
    updater = Updater(agent)
    params = agent.critic_parameters()
    updater.optimizers["critics"] = torch.optim.SGD(params, lr=1.0)
    before = [p.detach().clone() for p in params]
    updater.step("critics", training_batch(32, "continuous", seed=5))
    steps = torch.stack([((p - b) ** 2).flatten(1).sum(1) for p, b in
                         zip(params, before, strict=True)]).sum(0).sqrt()  # fmt: skip
    # both raw norms exceed the limit, so each critic's step has the full length 1e-3 (a joint
    # clip would give sqrt(n1^2 + n2^2) = 1e-3, each critic's step below it)
    torch.testing.assert_close(steps, torch.full((2,), 1e-3), rtol=1e-3, atol=0.0)


def test_temperature_is_fixed_by_default_and_learned_on_request() -> None:
    batch = training_batch(32, "continuous", seed=6)
    fixed = SACAgent()
    fixed_updater = Updater(fixed)
    out = fixed_updater.update(batch)
    torch.testing.assert_close(out["alpha"], torch.tensor(0.078))
    torch.testing.assert_close(fixed.alpha, torch.tensor(0.078))
    assert "alpha" not in fixed_updater.optimizers
    assert not fixed.loss_module.log_alpha.requires_grad
    learned = SACAgent(SACConfig(learn_alpha=True))
    initial = learned.alpha
    out = Updater(learned).update(batch)
    assert not torch.equal(learned.alpha, initial)
    assert set(out.keys()) == {"loss_critic", "loss_actor", "loss_alpha", "alpha"}
    assert out["loss_alpha"].dim() == 0
    assert torch.equal(out["alpha"], initial)  # the temperature the update's actor loss used


# the long set: a learning check repeated per agent (the default set: ac_iqn, rainbow)
@pytest.mark.slow
def test_learns_the_tiny_problem() -> None:
    agent = SACAgent(SACConfig(lr=1e-3, normalize_observations=True))
    trained = train_briefly(agent, iterations=25)
    # random ~ -6.4; pushing straight to the goal ~ +18 (evaluation acts with the mean)
    assert trained > random_return("continuous") + 15.0
