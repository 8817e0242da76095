"""IQN and the quantile-Huber loss: the loss on a hand-computed example and
against an explicit double loop, the standard (argmax of the mean) target, terminated /
truncated handling, importance weights, acting (risk neutral and at a CVaR level), and
learning the tiny problem. Seeding, parameter counts, target copies and host read-backs:
tests/test_agent_contract.py."""

from __future__ import annotations

import re

import pytest
import torch
from tensordict import TensorDict

from marinenav.agents.base import ReplayOptions
from marinenav.agents.iqn import IQNAgent, IQNConfig, iqn_target
from marinenav.agents.quantile import quantile_huber_loss
from marinenav.training.prioritized import DevicePrioritizedSampler
from marinenav.training.trainer import Trainer
from marinenav.training.updater import Updater
from tests.agent_utils import (
    assert_terminated_do_not_bootstrap,
    robot_observations,
    step_norm_with_plain_sgd,
    training_batch,
)
from tests.learning_utils import random_return, train_briefly
from tests.run_utils import tiny_config

# ---------------------------------------------------------------- quantile-Huber loss


def test_quantile_huber_loss_on_a_hand_computed_example() -> None:
    # z = (0, 1) at tau = (0.25, 0.75); targets T = (0.5, 3). delta_ij = T_j - z_i:
    #   i = 0: ( 0.5, 3)  both >= 0: weight |0.25 - 0| = 0.25
    #   i = 1: (-0.5, 2)  weights |0.75 - 1| = 0.25 and |0.75 - 0| = 0.75
    pred = torch.tensor([[0.0, 1.0]])
    target = torch.tensor([[0.5, 3.0]])
    tau = torch.tensor([[0.25, 0.75]])
    # kappa = 1: L(0.5) = 0.125, L(3) = 3 - 0.5 = 2.5 (|delta| > kappa), L(-0.5) = 0.125,
    # L(2) = 1.5. Row means: (0.25 * 0.125 + 0.25 * 2.5) / 2 = 0.328125,
    # (0.25 * 0.125 + 0.75 * 1.5) / 2 = 0.578125; sum 0.90625.
    loss = quantile_huber_loss(pred, target, tau, kappa=1.0)
    assert loss.shape == (1,)
    torch.testing.assert_close(loss, torch.tensor([0.90625]))
    # kappa = 2: L(0.5) = 0.125, L(3) = 2 (3 - 1) = 4, L(2) = 0.5 * 4 = 2 (|delta| = kappa);
    # divided by kappa: row means (0.25 * 0.0625 + 0.25 * 2) / 2 = 0.2578125,
    # (0.25 * 0.0625 + 0.75 * 1) / 2 = 0.3828125; sum 0.640625.
    torch.testing.assert_close(
        quantile_huber_loss(pred, target, tau, kappa=2.0), torch.tensor([0.640625])
    )


def slow_quantile_huber(pred, target, tau, kappa):
    """The definition, one (b, i, j) at a time."""
    batch, n, n_target = pred.shape[0], pred.shape[1], target.shape[1]
    losses = []
    for b in range(batch):
        total = pred.new_zeros(())
        for i in range(n):
            row = pred.new_zeros(())
            for j in range(n_target):
                delta = target[b, j] - pred[b, i]
                if delta.abs() <= kappa:
                    huber = 0.5 * delta**2
                else:
                    huber = kappa * (delta.abs() - 0.5 * kappa)
                indicator = 1.0 if delta < 0 else 0.0
                row = row + (tau[b, i] - indicator).abs() * huber / kappa
            total = total + row / n_target
        losses.append(total)
    return torch.stack(losses)


@pytest.mark.parametrize("kappa", [1.0, 0.7])
def test_quantile_huber_loss_matches_the_explicit_double_loop(kappa: float) -> None:
    gen = torch.Generator().manual_seed(3)
    pred = (torch.randn(3, 4, generator=gen, dtype=torch.float64) * 2).requires_grad_()
    target = torch.randn(3, 5, generator=gen, dtype=torch.float64) * 2
    tau = torch.rand(3, 4, generator=gen, dtype=torch.float64)
    fast = quantile_huber_loss(pred, target, tau, kappa)
    (grad_fast,) = torch.autograd.grad(fast.sum(), pred)
    slow = slow_quantile_huber(pred, target, tau, kappa)
    (grad_slow,) = torch.autograd.grad(slow.sum(), pred)
    torch.testing.assert_close(fast, slow)
    torch.testing.assert_close(grad_fast, grad_slow)


# ---------------------------------------------------------------- IQN target and loss


def test_target_takes_the_argmax_of_the_mean_not_a_max_per_tau() -> None:
    # action 0: quantiles (0, 10), mean 5; action 1: (4, 5), mean 4.5; the rest far below.
    quantiles = torch.full((2, 2, 25), -100.0)
    quantiles[:, :, 0] = torch.tensor([0.0, 10.0])
    quantiles[:, :, 1] = torch.tensor([4.0, 5.0])
    reward = torch.tensor([[1.0], [1.0]])
    bootstrap = torch.tensor([[0.99], [0.0]])  # row 1: terminated
    target = iqn_target(quantiles, reward, bootstrap)
    torch.testing.assert_close(target, torch.tensor([[1.0, 10.9], [1.0, 1.0]]))
    per_tau_max = reward + bootstrap * quantiles.max(dim=-1).values  # the original's quirk
    assert not torch.allclose(target[0], per_tau_max[0])  # (1 + 0.99 * 4, ...) differs


def expected_loss(agent: IQNAgent, batch: TensorDict, seed: int) -> torch.Tensor:
    """The loss written out: same random draws as ``IQNLoss.forward`` (tau, then tau')."""
    net, nxt = agent.network, batch["next"]
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    tau, tau_next = torch.rand(batch.shape[0], 8), torch.rand(batch.shape[0], 8)
    torch.random.set_rng_state(gen_state)
    with torch.no_grad():
        z = net(batch["self_state"], batch["objects"], batch["objects_mask"], tau)
        z = z[torch.arange(batch.shape[0]), :, batch["action"]]  # [B, 8]
        z_next = net(nxt["self_state"], nxt["objects"], nxt["objects_mask"], tau_next)
        best = z_next.mean(1).argmax(-1)
        chosen = z_next[torch.arange(batch.shape[0]), :, best]
        not_terminal = (~nxt["terminated"]).float()  # truncated transitions bootstrap
        target = nxt["reward"] + 0.99 * not_terminal * chosen
        delta = target[:, None, :] - z[:, :, None]
        huber = torch.where(delta.abs() <= 1, 0.5 * delta**2, delta.abs() - 0.5)
        rho = (tau[:, :, None] - (delta < 0).float()).abs() * huber
        return rho.mean(-1).sum(-1).mean()


def test_loss_matches_the_written_out_definition() -> None:
    agent = IQNAgent()  # the target network starts as a copy of the online one
    updater = Updater(agent)
    batch = training_batch(16, "discrete")
    expected = expected_loss(agent, batch, seed=5)
    torch.manual_seed(5)
    torch.testing.assert_close(agent.loss_module(batch)["loss"], expected)
    torch.manual_seed(5)
    out = updater.update(batch)
    assert set(out.keys()) == {"loss_q"}
    torch.testing.assert_close(out["loss_q"], expected)


def test_terminated_transitions_do_not_bootstrap_and_truncated_ones_do() -> None:
    assert_terminated_do_not_bootstrap(IQNAgent().loss_module.target_quantiles, "discrete")


def test_importance_weights_scale_the_per_sample_losses() -> None:
    agent = IQNAgent()
    batch = training_batch(16, "discrete")
    torch.manual_seed(0)
    plain = agent.loss_module(batch)["loss"]
    weighted = batch.clone().set("_weight", torch.full((16,), 2.5))
    torch.manual_seed(0)
    torch.testing.assert_close(agent.loss_module(weighted)["loss"], 2.5 * plain)


def test_replay_is_uniform_by_default_and_prioritized_on_request() -> None:
    assert IQNAgent().replay_options() == ReplayOptions(prioritized=False, n_step=1)
    agent = IQNAgent(IQNConfig(prioritized=True, n_step=3, importance_beta=0.6))
    assert agent.replay_options() == ReplayOptions(prioritized=True, beta=0.6, n_step=3)


def test_prioritized_update_returns_priorities_loss_to_the_exponent() -> None:
    agent = IQNAgent(IQNConfig(prioritized=True, priority_exponent=0.5))
    updater = Updater(agent)
    batch = training_batch(32, "discrete", seed=5)
    torch.manual_seed(3)
    expected = agent.loss_module(batch)["loss_per_sample"]
    assert expected.shape == (32,) and (expected > 0).all()
    torch.manual_seed(3)  # the update draws the same fractions
    out = updater.update(batch)
    assert out["priority"].shape == (32,) and not out["priority"].requires_grad
    torch.testing.assert_close(out["priority"], expected**0.5)
    torch.testing.assert_close(out["loss_q"], expected.mean())


def test_prioritized_training_writes_the_losses_into_the_replay(tmp_path) -> None:
    """A tiny run with ``agent.prioritized=true``: the learner's replay samples by priority,
    and after the updates the sampled transitions carry masses other than the initial one."""
    cfg = tiny_config("agent=iqn", "agent.prioritized=true", "agent.n_step=3")
    trainer = Trainer(cfg, tmp_path)
    trainer.train()
    assert trainer.updates > 0
    sampler = trainer.learner.replay.sampler
    assert isinstance(sampler, DevicePrioritizedSampler)
    filled = sampler.weights[: int(sampler.filled())]
    assert filled.numel() > 0 and (filled > 0).all()
    assert filled.unique().numel() > 1  # updated from their losses, not all the initial mass


def test_gradient_norm_is_clipped() -> None:
    agent = IQNAgent(IQNConfig(grad_clip_norm=1e-3))
    assert step_norm_with_plain_sgd(agent, agent.network, "q", "discrete") <= 1e-3 * (1 + 1e-4)


def test_policy_acts_on_a_batch_of_robots() -> None:
    agent = IQNAgent()
    td = robot_observations(3, 4)
    agent.policy.eval()
    action = agent.policy(td)["agents", "action"]
    assert action.shape == (3, 4) and action.dtype == torch.int64
    assert ((action >= 0) & (action < 25)).all()


def _mean_quantile_choice(agent: IQNAgent, td: TensorDict, alpha: float) -> torch.Tensor:
    """Argmax of the mean quantiles at ``alpha * tau``, ``tau`` the first ``[12, 32]`` draws of
    the policy's restarted stream: the acting rule written out."""
    group = td["agents"]
    obs = (group["self_state"].reshape(12, -1), group["objects"].reshape(12, 5, 5),
           group["objects_mask"].reshape(12, 5))  # fmt: skip
    tau = torch.rand(12, 32, generator=torch.Generator().manual_seed(agent.policy.seed))
    with torch.no_grad():
        return agent.network(*obs, alpha * tau).mean(dim=-2).argmax(dim=-1).reshape(3, 4)


def test_cvar_alpha_is_the_level_the_policy_acts_at() -> None:
    """``agent.cvar_alpha=0.25``: the action is the argmax of the mean quantile over fractions
    drawn from U(0, 0.25), i.e. CVaR_0.25; the default acts on the mean (U(0, 1))."""
    td = robot_observations(3, 4, seed=5)
    chosen = {}
    for alpha in (1.0, 0.25):
        agent = IQNAgent(IQNConfig(cvar_alpha=alpha, seed=3))
        agent.policy.eval()
        agent.policy.set_seed(agent.policy.seed)
        chosen[alpha] = agent.policy(td.clone())["agents", "action"]
        assert torch.equal(chosen[alpha], _mean_quantile_choice(agent, td, alpha))
    assert not torch.equal(chosen[1.0], chosen[0.25])  # the level changed some choices


def test_cvar_alpha_outside_zero_one_is_refused() -> None:
    for alpha, rule in ((0.0, "must be positive"), (1.5, "must be in [0, 1]")):
        with pytest.raises(ValueError, match=rf"agent.cvar_alpha {re.escape(rule)}"):
            IQNConfig(cvar_alpha=alpha)
    for level in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"agent.collect_cvar_alpha must be in \(0, 1\]"):
            IQNConfig(collect_cvar_alpha=level)


def test_collection_can_act_at_its_own_level() -> None:
    """``cvar_alpha=0.25, collect_cvar_alpha=1``: exploring (training's collection, epsilon 0
    here so only the greedy rule shows) acts on the mean, evaluation on CVaR_0.25; without
    ``collect_cvar_alpha`` both act on CVaR_0.25."""
    td = robot_observations(3, 4, seed=5)

    def act(agent: IQNAgent, exploring: bool) -> torch.Tensor:
        agent.policy.train(exploring)
        agent.policy.set_seed(agent.policy.seed)
        return agent.policy(td.clone())["agents", "action"]

    split = IQNAgent(IQNConfig(cvar_alpha=0.25, collect_cvar_alpha=1.0, seed=3))
    assert torch.equal(act(split, exploring=True), _mean_quantile_choice(split, td, 1.0))
    assert torch.equal(act(split, exploring=False), _mean_quantile_choice(split, td, 0.25))
    same = IQNAgent(IQNConfig(cvar_alpha=0.25, seed=3))
    assert torch.equal(act(same, exploring=True), _mean_quantile_choice(same, td, 0.25))
    # the collection level is set from the config, not carried in the state dict
    keys = split.state_dict().keys()
    assert "policy.cvar" in keys and "policy.explore_cvar" not in keys


def _noise(network) -> list[torch.Tensor]:
    """Every noise buffer of the network's noisy layers, copied."""
    return [b.clone() for n, b in network.named_buffers() if "epsilon" in n]


def test_the_default_head_is_plain_and_its_update_draws_no_noise() -> None:
    """``noisy`` off (the default, the original's network): no noisy layer, and the update's
    noise step draws nothing, so the default's random numbers are those it always drew."""
    agent = IQNAgent()
    assert not agent.network.noisy and not _noise(agent.network)
    torch.manual_seed(4)
    agent.loss_module.resample_noise()
    after = torch.rand(3)
    torch.manual_seed(4)
    assert torch.equal(after, torch.rand(3))


def test_a_noisy_head_explores_on_fresh_noise_and_acts_on_the_mean_otherwise() -> None:
    """``agent.noisy=true``: the head's three layers are noisy (122,594 parameters against
    69,961); an exploring call draws fresh noise from the policy's stream (one sample for the
    batch), then the fractions, and acts greedily on the noisy weights; evaluation and the
    exported planner use the mean weights and leave the noise alone."""
    agent = IQNAgent(IQNConfig(noisy=True, seed=3))
    network, policy = agent.network, agent.policy
    assert sum(p.numel() for p in network.parameters()) == 122_594
    td = robot_observations(3, 4, seed=5)
    group = td["agents"]
    obs = (group["self_state"].reshape(12, -1), group["objects"].reshape(12, 5, 5),
           group["objects_mask"].reshape(12, 5))  # fmt: skip

    def act(exploring: bool) -> torch.Tensor:
        policy.train(exploring)
        policy.set_seed(policy.seed)
        return policy(td.clone())["agents", "action"].reshape(12)

    before = _noise(network)
    explored = act(exploring=True)
    drawn = _noise(network)
    assert not any(torch.equal(a, b) for a, b in zip(before, drawn, strict=True))
    stream = torch.Generator().manual_seed(policy.seed)
    replay = IQNAgent(IQNConfig(noisy=True, seed=3)).network
    replay.reset_noise(stream)
    tau = torch.rand(12, 32, generator=stream)
    with torch.no_grad():
        assert torch.equal(explored, replay(*obs, tau, noise=True).mean(dim=-2).argmax(dim=-1))
    greedy = act(exploring=False)
    assert all(torch.equal(a, b) for a, b in zip(drawn, _noise(network), strict=True))
    tau = torch.rand(12, 32, generator=torch.Generator().manual_seed(policy.seed))
    with torch.no_grad():
        mean_weights = network(*obs, tau, noise=False)
        planner = agent.export_network()(obs, tau)
        assert not torch.allclose(mean_weights, network(*obs, tau, noise=True))
    torch.testing.assert_close(planner, mean_weights)
    assert torch.equal(greedy, mean_weights.mean(dim=-2).argmax(dim=-1))


def test_a_noisy_update_resamples_both_networks_noise_and_trains_sigma() -> None:
    """Every update draws fresh online and target noise (from the global stream, before the
    fractions) and gives the ``sigma`` parameters a gradient."""
    agent = IQNAgent(IQNConfig(noisy=True))
    updater = Updater(agent)
    sigmas = {n: p.detach().clone() for n, p in agent.network.named_parameters() if "sigma" in n}
    online = _noise(agent.network)
    target = [v.clone() for k, v in agent.loss_module.target_network_params.items(True, True)
              if "epsilon" in k[-1]]  # fmt: skip
    assert len(sigmas) == 6 and len(online) == len(target) == 6
    for seed in range(3):
        updater.update(training_batch(32, "discrete", seed=seed))
    new_online = _noise(agent.network)
    new_target = [v for k, v in agent.loss_module.target_network_params.items(True, True)
                  if "epsilon" in k[-1]]  # fmt: skip
    assert not any(torch.equal(a, b) for a, b in zip(online, new_online, strict=True))
    assert not any(torch.equal(a, b) for a, b in zip(target, new_target, strict=True))
    assert not any(torch.equal(a, b) for a, b in zip(new_online, new_target, strict=True))
    for name, param in agent.network.named_parameters():
        if "sigma" in name:
            assert param.grad is not None
            assert not torch.equal(param.detach(), sigmas[name])


def test_a_noisy_run_trains_exports_and_resumes_its_layout(tmp_path) -> None:
    """``agent=iqn agent.noisy=true`` from the command line: a tiny run trains, and its
    checkpoint rebuilds the noisy network (and a plain config refuses its weights)."""
    cfg = tiny_config("agent=iqn", "agent.noisy=true")
    trainer = Trainer(cfg, tmp_path)
    trainer.train()
    assert trainer.updates > 0 and trainer.agent.network.noisy
    state = trainer.agent.network.state_dict()
    IQNAgent(IQNConfig(noisy=True)).network.load_state_dict(state)
    with pytest.raises(RuntimeError, match="weight_mu"):
        IQNAgent().network.load_state_dict(state)


# the long set: a learning check repeated per agent (the default set: ac_iqn, rainbow)
@pytest.mark.slow
def test_learns_the_tiny_problem() -> None:
    agent = IQNAgent(IQNConfig(lr=1e-3, normalize_observations=True))
    trained = train_briefly(agent)
    assert trained > random_return("discrete") + 8.0
