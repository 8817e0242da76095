"""Rainbow: network and noisy layers, the C51 projection on hand-computed numbers, the
double-Q cross-entropy loss (terminated vs truncated, n-step discount, importance weights,
priorities), the target copy leaving the noise alone, noise in acting, the replay it asks for,
and learning the tiny problem. Seeding, parameter counts, target copies and host read-backs:
tests/test_agent_contract.py."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents.base import ReplayOptions
from marinenav.agents.rainbow import (
    NoisyLinear,
    RainbowAgent,
    RainbowConfig,
    RainbowNetwork,
    lower_tail,
    project_distribution,
)
from marinenav.training.prioritized import DevicePrioritizedSampler
from marinenav.training.trainer import Trainer
from marinenav.training.updater import Updater
from tests.agent_utils import observation, step_norm_with_plain_sgd, training_batch
from tests.learning_utils import random_return, train_briefly
from tests.run_utils import tiny_config

OBS = ("self_state", "objects", "objects_mask")


def test_replay_is_prioritized_with_its_n_step_returns() -> None:
    assert RainbowAgent().replay_options() == ReplayOptions(prioritized=True, beta=0.4, n_step=3)
    agent = RainbowAgent(RainbowConfig(n_step=5, importance_beta=0.6))
    assert agent.replay_options() == ReplayOptions(prioritized=True, beta=0.6, n_step=5)


def test_uniform_replay_on_request() -> None:
    """``prioritized=false`` (not Rainbow): uniform draws, with the n-step returns kept."""
    agent = RainbowAgent(RainbowConfig(prioritized=False))
    assert agent.replay_options() == ReplayOptions(prioritized=False, beta=0.4, n_step=3)


def test_without_noise_every_call_uses_the_mean_weights() -> None:
    """``noisy=false`` (an ablation): noisy calls equal the mean-weight call, and an update
    leaves the ``sigma`` parameters without a gradient, at their initial values."""
    agent = RainbowAgent(RainbowConfig(noisy=False))
    network = agent.network
    obs = tuple(observation(8, torch.Generator().manual_seed(3)).values())
    stream = torch.Generator().manual_seed(1)
    network.reset_noise(stream)  # draws nothing: the acting and update streams stay as they are
    assert torch.equal(stream.get_state(), torch.Generator().manual_seed(1).get_state())
    torch.testing.assert_close(network(*obs, noise=True), network(*obs, noise=False))
    sigmas = {n: p.detach().clone() for n, p in network.named_parameters() if "sigma" in n}
    assert sigmas and all((v > 0).any() for v in sigmas.values())  # std_init 0.05: not zero
    updater = Updater(agent)
    for seed in range(3):
        updater.update(training_batch(32, "discrete", seed=seed))
    for name, param in network.named_parameters():
        if "sigma" in name:
            assert param.grad is None
            torch.testing.assert_close(param.detach(), sigmas[name])
        elif "mu" in name:
            assert param.grad is not None
    noisy = RainbowAgent(RainbowConfig()).network  # the default: the noise changes the output
    noisy.reset_noise(torch.Generator().manual_seed(1))
    assert not torch.allclose(noisy(*obs, noise=True), noisy(*obs, noise=False))


@pytest.mark.parametrize("prioritized", [True, False])
def test_a_run_builds_the_replay_the_config_asks_for(prioritized: bool, tmp_path) -> None:
    """``agent.prioritized`` from the command line: the trainer's learner samples by priority
    (Rainbow's default) or uniformly, and a tiny run learns either way."""
    cfg = tiny_config("agent=rainbow", f"agent.prioritized={str(prioritized).lower()}")
    trainer = Trainer(cfg, tmp_path)
    trainer.train()
    assert trainer.updates > 0
    sampler = trainer.learner.replay.sampler
    assert isinstance(sampler, DevicePrioritizedSampler) == prioritized


def test_noisy_layer_initialisation_and_factorised_noise() -> None:
    torch.manual_seed(0)
    layer = NoisyLinear(128, 51, std_init=0.05)
    bound = 1 / math.sqrt(128)
    assert layer.weight_mu.abs().max() <= bound and layer.bias_mu.abs().max() <= bound
    assert torch.allclose(layer.weight_sigma, torch.full((51, 128), 0.05 / math.sqrt(128)))
    assert torch.allclose(layer.bias_sigma, torch.full((51,), 0.05 / math.sqrt(51)))
    gen = torch.Generator().manual_seed(3)
    layer.reset_noise(gen)
    gen = torch.Generator().manual_seed(3)
    x_in, x_out = torch.randn(128, generator=gen), torch.randn(51, generator=gen)
    f_in, f_out = x_in.sign() * x_in.abs().sqrt(), x_out.sign() * x_out.abs().sqrt()
    assert torch.equal(layer.weight_epsilon, torch.outer(f_out, f_in))
    assert torch.equal(layer.bias_epsilon, f_out)
    x = torch.randn(4, 128)
    noisy = x @ (layer.weight_mu + layer.weight_sigma * layer.weight_epsilon).T
    torch.testing.assert_close(layer(x, True), noisy + layer.bias_mu + layer.bias_sigma * f_out)
    torch.testing.assert_close(layer(x, False), x @ layer.weight_mu.T + layer.bias_mu)


def test_network_outputs_log_probabilities_of_a_dueling_head() -> None:
    net = RainbowNetwork(seed=0)
    obs = observation(6, torch.Generator().manual_seed(0))
    log_probs = net(*(obs[k] for k in OBS))
    assert log_probs.shape == (6, 25, 51)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(6, 25))
    assert torch.equal(net.support, torch.linspace(-75, 50, 51))
    # mode switch: train mode is noisy, eval mode is the mean network
    net.eval()
    torch.testing.assert_close(
        net(*(obs[k] for k in OBS)), net(*(obs[k] for k in OBS), noise=False)
    )
    assert not torch.allclose(net(*(obs[k] for k in OBS)), net(*(obs[k] for k in OBS), noise=True))


def reference_projection(probs, target_support, v_min, v_max):
    """The original's (Kaixhin's) floor / ceil projection, written out with loops."""
    B, A = probs.shape
    dz = (v_max - v_min) / (A - 1)
    m = torch.zeros(B, A, dtype=torch.float64)
    for i in range(B):
        for j in range(A):
            b = (min(max(float(target_support[i, j]), v_min), v_max) - v_min) / dz
            low, up = math.floor(b), math.ceil(b)
            if low == up:
                if up > 0:
                    low -= 1
                else:  # l == u == 0
                    up += 1
            m[i, low] += float(probs[i, j]) * (up - b)
            m[i, up] += float(probs[i, j]) * (b - low)
    return m


def test_projection_by_hand() -> None:
    """Support [-1, -0.5, 0, 0.5, 1]: points below / above the support clamp to the ends, a
    point on an atom keeps its mass there, a point between atoms splits linearly."""
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.25, 0.15]])
    points = torch.tensor([[-2.0, -0.5, 0.1, 0.75, 3.0]])
    m = project_distribution(probs, points, -1.0, 1.0)
    expected = torch.tensor([[0.1, 0.2, 0.3 * 0.8, 0.3 * 0.2 + 0.25 * 0.5, 0.25 * 0.5 + 0.15]])
    torch.testing.assert_close(m, expected)
    # exactly on the end points and on every atom
    on_atoms = project_distribution(probs, torch.tensor([[-1.0, -0.5, 0.0, 0.5, 1.0]]), -1, 1)
    torch.testing.assert_close(on_atoms, probs)


def test_projection_matches_the_original_floor_ceil_rule() -> None:
    gen = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(8, 51, generator=gen), -1)
    points = torch.randn(8, 51, generator=gen) * 12
    points[0, :5] = torch.tensor([-10.0, 10.0, 0.0, 0.4, -9.6])  # atoms and ends exactly
    m = project_distribution(probs, points, -10.0, 10.0)
    torch.testing.assert_close(m.double(), reference_projection(probs, points, -10.0, 10.0),
                               atol=1e-6, rtol=0)  # fmt: skip
    torch.testing.assert_close(m.sum(-1), torch.ones(8))


def expected_loss(agent: RainbowAgent, batch, online_argmax: bool = True):
    """The C51 double-Q loss per sample, computed from the networks' current noise."""
    loss_module = agent.loss_module
    net = agent.network
    with torch.no_grad():
        log_p = net(*(batch[k] for k in OBS), noise=True)
        log_p_taken = log_p[torch.arange(batch.shape[0]), batch["action"]]
        nxt = batch["next"]
        online_next = net(*(nxt[k] for k in OBS), noise=True)
        with loss_module.target_value_network_params.to_module(net):
            target_next = net(*(nxt[k] for k in OBS), noise=True)
        chooser = online_next if online_argmax else target_next
        best = net.expected_value(chooser).argmax(-1)
        p_next = target_next[torch.arange(batch.shape[0]), best].exp()
        discount = batch.get("discount", None)
        if discount is None:
            discount = torch.full((batch.shape[0], 1), agent.config.gamma**agent.config.n_step)
        nonterminal = (~nxt["terminated"]).float()
        points = nxt["reward"] + nonterminal * discount * net.support
        m = project_distribution(p_next, points, agent.config.v_min, agent.config.v_max)
        return -(m * log_p_taken).sum(-1)


def perturbed_agent(**config) -> tuple[RainbowAgent, Updater]:
    """An agent whose online network differs from its target (one update on a random batch),
    and its updater."""
    agent = RainbowAgent(RainbowConfig(**config))
    updater = Updater(agent)
    updater.optimizers["q"] = torch.optim.SGD(agent.network.parameters(), lr=0.5)
    updater.update(training_batch(64, "discrete", seed=7))
    return agent, updater


def test_loss_is_double_q_c51_cross_entropy() -> None:
    agent, _ = perturbed_agent()
    batch = training_batch(32, "discrete", seed=1)
    batch["next", "reward"] = batch["next", "reward"] * 4
    agent.loss_module.resample_noise(torch.Generator().manual_seed(0))
    out = agent.loss_module(batch)
    per_sample = expected_loss(agent, batch)
    torch.testing.assert_close(out["loss_per_sample"], per_sample)
    torch.testing.assert_close(out["loss"], per_sample.mean())
    # the greedy action at s' comes from the online network: the target's argmax differs
    assert not torch.allclose(expected_loss(agent, batch, online_argmax=False), per_sample)


def test_terminated_does_not_bootstrap_and_truncated_does() -> None:
    agent, _ = perturbed_agent()
    batch = training_batch(8, "discrete", seed=2)
    batch["next", "reward"] = torch.full((8, 1), 1.25)
    batch["next", "terminated"] = torch.tensor([True] * 4 + [False] * 4).unsqueeze(-1)
    batch["next", "done"] = torch.ones(8, 1, dtype=torch.bool)  # 4 terminated, 4 truncated
    agent.loss_module.resample_noise(torch.Generator().manual_seed(0))
    out = agent.loss_module(batch)
    # terminated: the target is the reward alone, 1.25 = atom 30 (0.0) * 0.5 + atom 31 (2.5) * 0.5
    with torch.no_grad():
        log_p = agent.network(*(batch[k] for k in OBS), noise=True)
        log_p_taken = log_p[torch.arange(8), batch["action"]]
    by_hand = -(0.5 * log_p_taken[:4, 30] + 0.5 * log_p_taken[:4, 31])
    torch.testing.assert_close(out["loss_per_sample"][:4], by_hand)
    # truncated: bootstraps from the next state
    truncated = batch.clone()
    truncated["next", "terminated"][:] = False
    out_truncated = agent.loss_module(truncated)
    torch.testing.assert_close(out_truncated["loss_per_sample"][4:], out["loss_per_sample"][4:])
    assert not torch.allclose(out_truncated["loss_per_sample"][:4], by_hand)


def test_per_sample_discount_and_default_gamma_to_the_n() -> None:
    agent, _ = perturbed_agent()
    batch = training_batch(16, "discrete", seed=3)
    agent.loss_module.resample_noise(torch.Generator().manual_seed(0))
    default = agent.loss_module(batch)["loss_per_sample"]
    torch.testing.assert_close(default, expected_loss(agent, batch))  # gamma ** 3
    batch["discount"] = torch.tensor([0.99, 0.99**2, 0.99**3, 0.0] * 4).unsqueeze(-1)
    torch.testing.assert_close(agent.loss_module(batch)["loss_per_sample"],
                               expected_loss(agent, batch))  # fmt: skip
    batch["discount"] = torch.full((16, 1), 0.99**3)
    torch.testing.assert_close(agent.loss_module(batch)["loss_per_sample"], default)


def test_importance_weights_weight_the_mean() -> None:
    agent, _ = perturbed_agent()
    batch = training_batch(16, "discrete", seed=4)
    agent.loss_module.resample_noise(torch.Generator().manual_seed(0))
    plain = agent.loss_module(batch)
    weight = torch.linspace(0.0, 1.0, 16)
    batch["_weight"] = weight
    weighted = agent.loss_module(batch)
    torch.testing.assert_close(weighted["loss"], (weight * plain["loss_per_sample"]).mean())
    torch.testing.assert_close(weighted["loss_per_sample"], plain["loss_per_sample"])
    # a zero weight removes the sample from the gradient
    batch["_weight"] = torch.zeros(16)
    batch["_weight"][3] = 1.0
    agent.network.zero_grad()
    agent.loss_module(batch)["loss"].backward()
    grad = [p.grad.clone() for p in agent.network.parameters()]
    agent.network.zero_grad()
    (agent.loss_module(batch[3:4])["loss"] / 16).backward()
    for a, b in zip(grad, (p.grad for p in agent.network.parameters()), strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("prioritized", [True, False])
def test_update_returns_priorities_loss_to_the_exponent(prioritized: bool) -> None:
    """Prioritized, the update reports each transition's loss to the exponent; uniform, the
    loss alone (a ``"priority"`` would go to a sampler that has none)."""
    agent, updater = perturbed_agent(priority_exponent=0.5, prioritized=prioritized)
    batch = training_batch(32, "discrete", seed=5)
    generator = agent.noise_generator(torch.device("cpu"))
    state = generator.get_state()
    agent.loss_module.resample_noise(generator)
    expected = agent.loss_module(batch)["loss_per_sample"]
    generator.set_state(state)  # the update draws the same noise
    out = updater.update(batch)
    torch.testing.assert_close(out["loss_q"], expected.mean())
    assert out["loss_q"].shape == ()
    if not prioritized:
        assert set(out.keys()) == {"loss_q"}
        return
    assert out["priority"].shape == (32,) and not out["priority"].requires_grad
    torch.testing.assert_close(out["priority"], expected**0.5)


def test_target_copy_takes_the_parameters_and_leaves_the_noise() -> None:
    agent = RainbowAgent()
    updater = Updater(agent)
    online = agent.loss_module.value_network_params
    target = agent.loss_module.target_value_network_params
    params = [key for key, value in online.items(True, True) if value.requires_grad]
    assert len(params) == 2 + 2 + 6 * 4  # encoder weights and biases, 6 noisy layers
    for seed in range(2):
        updater.update(training_batch(32, "discrete", seed=seed))
    updater.update_targets()
    assert all(torch.equal(target.get(key), online.get(key)) for key in params)
    # the noise buffers are not copied: each network keeps its own noise
    key = ("advantage", "layers", "2", "weight_epsilon")
    assert not torch.equal(target.get(key), online.get(key))


def test_gradient_norm_is_clipped() -> None:
    agent = RainbowAgent(RainbowConfig(grad_clip_norm=1e-3))
    assert step_norm_with_plain_sgd(agent, agent.network, "q", "discrete") <= 1e-3 * (1 + 1e-4)


def test_acting_eval_uses_mean_weights_and_exploring_resamples_noise() -> None:
    agent = RainbowAgent()
    policy = agent.policy
    obs = observation(40, torch.Generator().manual_seed(0))
    td = TensorDict({("agents", k): v for k, v in obs.items()}, batch_size=[40])
    with torch.no_grad():
        greedy = agent.network.expected_value(
            agent.network(*(obs[k] for k in OBS), noise=False)
        ).argmax(-1)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        first = policy(td.clone())["agents", "action"]
        second = policy(td.clone())["agents", "action"]
    assert torch.equal(first, greedy) and torch.equal(second, greedy)
    policy.eval()
    assert torch.equal(policy(td.clone())["agents", "action"], greedy)
    policy.train()

    # exploring (epsilon 0): fresh noise at every call, reproducible from the policy seed
    epsilon_key = ("advantage", "layers", "0", "weight_epsilon")
    noise = agent.loss_module.value_network_params.get(epsilon_key)
    with set_exploration_type(ExplorationType.RANDOM):
        policy.set_seed(11)
        before = noise.clone()
        a = policy(td.clone())["agents", "action"]
        after_first = noise.clone()
        b = policy(td.clone())["agents", "action"]
        assert not torch.equal(before, after_first) and not torch.equal(after_first, noise)
        policy.set_seed(11)
        assert torch.equal(policy(td.clone())["agents", "action"], a)
        assert torch.equal(noise, after_first)
        # the action is greedy for the noisy network just sampled, not for the mean one
        with torch.no_grad():
            noisy = agent.network(*(obs[k] for k in OBS), noise=True)
            mean = agent.network(*(obs[k] for k in OBS), noise=False)
        assert torch.equal(a, agent.network.expected_value(noisy).argmax(-1))
        assert not torch.allclose(noisy, mean)
    assert b.shape == (40,)


def test_lower_tail_by_hand() -> None:
    """The worst quarter of 0.1, 0.2, 0.3, 0.4 on 0, 1, 2, 3: 0.1 at 0 and 0.15 of the 0.2 at 1,
    renormalised (CVaR 0.6); level 1 is the distribution itself, bit for bit; a level per row."""
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    tail = lower_tail(probs, 0.25)
    assert torch.allclose(tail, torch.tensor([0.4, 0.6, 0.0, 0.0], dtype=torch.float64))
    assert float((tail * torch.arange(4.0, dtype=torch.float64)).sum()) == pytest.approx(0.6)
    assert torch.equal(lower_tail(probs, 1.0), probs)
    rows = torch.stack([probs, probs.flip(0)])  # [2, 4]
    both = lower_tail(rows, torch.tensor([0.5, 1.0], dtype=torch.float64))
    assert torch.allclose(both[0], torch.tensor([0.2, 0.4, 0.4, 0.0], dtype=torch.float64))
    assert torch.equal(both[1], rows[1])


def cvar_by_hand(probs: torch.Tensor, support: torch.Tensor, level: float) -> torch.Tensor:
    """``CVaR_level`` of each categorical row ``[..., atoms]``, atom by atom in Python."""
    flat = probs.reshape(-1, probs.shape[-1]).tolist()
    values = []
    for row in flat:
        left, total = level, 0.0
        for p, z in zip(row, support.tolist(), strict=True):
            take = min(p, max(left, 0.0))
            total, left = total + take * z, left - take
        values.append(total / level)
    return torch.tensor(values, dtype=probs.dtype).reshape(probs.shape[:-1])


def test_acting_at_a_cvar_level_is_the_argmax_of_each_actions_lower_tail_mean() -> None:
    """``agent.cvar_alpha=0.25``: the greedy action maximises the mean of the worst quarter of
    each action's return distribution (computed atom by atom); it changes some choices against
    the mean, and the exported planner (its probabilities the tail's, the planner's rule
    unchanged) takes the same actions; ``--cvar`` on a planner file multiplies the levels."""
    from marinenav.planner.load import PlannerPolicy

    averse = RainbowAgent(RainbowConfig(cvar_alpha=0.25))
    neutral = RainbowAgent()
    obs = observation(64, torch.Generator().manual_seed(3))
    td = TensorDict({("agents", k): v for k, v in obs.items()}, batch_size=[64])
    with torch.no_grad():
        probs = averse.network(*(obs[k] for k in OBS), noise=False).exp()
    values = cvar_by_hand(probs, averse.network.support, 0.25)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        action = averse.policy(td.clone())["agents", "action"]
        mean_action = neutral.policy(td.clone())["agents", "action"]
    chosen = values.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(chosen, values.max(dim=-1).values, atol=1e-5)
    assert not torch.equal(action, mean_action)

    call = copy.deepcopy(averse.export_network()).double()  # as export copies it
    state = tuple(obs[k].double() for k in OBS)
    with torch.no_grad():
        exported = call(state)
    assert torch.allclose(exported.sum(-1), torch.ones(64, 25, dtype=torch.float64))
    assert torch.equal(RainbowAgent.planner_action(exported), action)
    assert averse.export_metadata()["cvar_alpha"] == 0.25

    metadata = averse.export_metadata()
    for level in (1.0, 0.5):
        planner = PlannerPolicy(call, "rainbow", metadata, cvar=level)
        acted = planner(td.clone())["agents", "action"]
        values = cvar_by_hand(probs.double(), averse.network.support.double(), 0.25 * level)
        picked = values.gather(-1, acted.unsqueeze(-1)).squeeze(-1)
        assert torch.allclose(picked, values.max(dim=-1).values, atol=1e-9)


def test_collection_has_its_own_level() -> None:
    """``collect_cvar_alpha`` sets the level of the greedy action while exploring; evaluation
    keeps ``cvar_alpha``; a level outside (0, 1] is refused."""
    agent = RainbowAgent(RainbowConfig(cvar_alpha=0.25, collect_cvar_alpha=1.0))
    assert float(agent.policy.cvar) == 0.25 and float(agent.policy.explore_cvar) == 1.0
    for key, value in (("cvar_alpha", 0.0), ("cvar_alpha", 1.5), ("collect_cvar_alpha", 0.0)):
        with pytest.raises(ValueError, match=key):
            RainbowConfig(**{key: value})


def test_learns_the_tiny_problem() -> None:
    agent = RainbowAgent(RainbowConfig(lr=1e-3, normalize_observations=True, n_step=1))
    trained = train_briefly(agent, iterations=25)
    assert trained > random_return("discrete") + 8.0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_update_and_acting_never_synchronise() -> None:
    agent = RainbowAgent().to("cuda")
    updater = Updater(agent)
    batch = training_batch(64, "discrete").to("cuda")
    batch["discount"] = torch.full((64, 1), 0.99**2, device="cuda")
    batch["_weight"] = torch.rand(64, device="cuda")
    obs = observation(64, torch.Generator().manual_seed(0))
    td = TensorDict({("agents", k): v for k, v in obs.items()}, batch_size=[64]).to("cuda")
    updater.update(batch)  # the optimizer state is made at the first step
    agent.policy(td.clone())
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            out = updater.update(batch)
            with set_exploration_type(ExplorationType.RANDOM):
                agent.policy(td.clone())
        updater.update_targets()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert out["priority"].device.type == "cuda"


def test_checkpoint_state_restores_the_noise_stream() -> None:
    agent = RainbowAgent()
    updater = Updater(agent)
    updater.update(training_batch(16, "discrete"))
    state = copy.deepcopy(agent.training_state_dict())  # state_dict() tensors alias the live ones
    learned = copy.deepcopy(updater.state_dict())
    expected = updater.update(training_batch(16, "discrete"))["loss_q"]
    restored = RainbowAgent()
    restored_updater = Updater(restored)
    restored.load_training_state_dict(state)
    restored_updater.load_state_dict(learned)
    loss = restored_updater.update(training_batch(16, "discrete"))["loss_q"]
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)


def test_acting_on_cvar_only_outside_collection_leaves_training_as_it_was(tmp_path) -> None:
    """A tiny run with ``cvar_alpha=0.25, collect_cvar_alpha=1`` learns exactly what the
    risk-neutral run learns (collection, replay and updates alike): only its evaluations and
    planner act on the tail, so a run trained risk neutral and scored with ``evaluate --cvar
    0.25`` is the same run. Collecting at 0.25 as well changes what it learns."""
    from marinenav.training.trainer import Trainer
    from tests.run_utils import tiny_config

    networks = {}
    runs = {"neutral": (), "averse": ("agent.cvar_alpha=0.25", "agent.collect_cvar_alpha=1"),
            "collecting_averse": ("agent.cvar_alpha=0.25",)}  # fmt: skip
    for name, overrides in runs.items():
        trainer = Trainer(tiny_config("agent=rainbow", *overrides), tmp_path / name)
        trainer.train()
        assert trainer.updates > 0
        networks[name] = trainer.agent.network.state_dict()

    def same(a: str, b: str) -> bool:
        return all(torch.equal(networks[a][key], networks[b][key]) for key in networks[a])

    assert same("neutral", "averse")
    assert not same("neutral", "collecting_averse")  # the level reaches collection there
