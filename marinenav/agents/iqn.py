"""IQN: implicit quantile networks on the 25 discrete actions.

Network: the shared trunk times the cosine embedding of ``tau`` (64 cosines), two hidden layers of
128, 25 quantile values per ``tau`` (:class:`~marinenav.policy.networks.ImplicitQuantileNetwork`,
69,961 parameters, seeded with the agent seed).

Hyperparameters (the original's): gamma 0.99; Adam, learning rate 1e-4; gradient norm
clipped to 0.5; 8 quantile fractions for the prediction (``num_tau_train``), 8 for the target
(``num_tau_target``), 32 for acting (``num_tau_act``); quantile-Huber loss with ``kappa = 1``
(sum over predicted quantiles, mean over target samples, mean over the batch; one objective,
``"q"``, reported as ``loss_q``); the target network is a hard copy every 10,000 env steps (the
trainer's, with TorchRL's ``HardUpdate``). Acting: epsilon-greedy on the mean of 32 quantiles at
``tau ~ U(0, cvar_alpha)`` (:class:`~marinenav.policy.selectors.QuantileSelector`): the mean of
``Z`` at ``cvar_alpha = 1``, the original's (its ``cvar`` is always 1); below 1 the agent acts on
``CVaR_alpha``, the mean of the worst ``alpha`` of outcomes (risk averse, the IQN paper's
distortion risk measure), in training, evaluation and the exported planner alike (the planner
file scales the fractions its caller draws, so the C++ node's call is unchanged).
``collect_cvar_alpha`` gives collection in training its own level (e.g. 1: collect risk
neutral, act on ``CVaR_alpha`` in evaluation and deployment). The loss and its targets are
unchanged.

Deviation from the original (docs/training.md, "Deviations from the original trainer and
agents"): the original's target takes the max over actions separately for every target fraction
``tau'_j``. We implement the standard IQN target: the greedy
next action ``a* = argmax_a mean_j Z_target(s', a; tau'_j)`` is chosen once per transition, then
``T_j = r + gamma (1 - terminated) Z_target(s', a*; tau'_j)``. Timeouts (truncations) bootstrap,
unlike the original, which stores them as terminal. ``n_step=n > 1`` (off by default;
not original): per-robot n-step returns, each target discounted by its transition's ``discount``.
``prioritized=True`` (off by default; not original): proportional prioritized replay as
Rainbow's, each transition's priority its quantile-Huber loss to the ``priority_exponent``,
the loss weighted by the replay's importance weights (exponent ``importance_beta``).
``noisy=True`` (off by default; not original): the head's three layers are factorised-Gaussian
noisy layers (Rainbow's, ``std_init = noisy_std``, 0.05): exploring actions resample the noise
from the policy's generator at every call and use the noisy weights (epsilon-greedy stays on
top), every update resamples the online network's noise and then the target's from the global
torch RNG (before the fractions), and evaluation and the exported planner use the mean weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, TensorDictParams
from torch import nn
from torchrl.objectives import LossModule

from marinenav.agents.base import (
    Agent,
    Objective,
    ParameterGroup,
    PrioritizedConfig,
    check_options,
    planner_output,
)
from marinenav.agents.quantile import batch_mean, bootstrap_factor, quantile_huber_loss
from marinenav.keys import ACTION, OBJECTS, OBJECTS_MASK, REWARD, SELF_STATE
from marinenav.policy.networks import ImplicitQuantileNetwork
from marinenav.policy.noisy import NOISY_STD, reset_online_and_target_noise
from marinenav.policy.selectors import QuantileSelector
from marinenav.policy.wrapper import PolicyWrapper
from marinenav.sim.constants import NUM_DISCRETE_ACTIONS


@dataclass
class IQNConfig(PrioritizedConfig):
    """IQN hyperparameters beyond the shared ones; ``n_step`` (off by default, not the
    original) selects the trainer's per-robot n-step returns, ``prioritized`` (off by default,
    not the original) a prioritized replay (:class:`PrioritizedConfig`)."""

    num_tau_train: int = 8  # quantile fractions of the prediction Z(s, a; tau_i)
    num_tau_target: int = 8  # quantile fractions of the target Z_target(s', a*; tau'_j)
    num_tau_act: int = 32  # quantile fractions averaged for action selection
    kappa: float = 1.0  # Huber threshold of the quantile-Huber loss
    cvar_alpha: float = 1.0  # act on CVaR_alpha of Z (taus ~ U(0, alpha)); 1: the mean
    # the level of the greedy action while collecting in training; null: cvar_alpha
    collect_cvar_alpha: float | None = None
    noisy: bool = False  # a noisy head (Rainbow's layers; not the original), see the docstring
    noisy_std: float = NOISY_STD  # std_init of its noisy layers

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(
            self,
            counts=("num_tau_train", "num_tau_target", "num_tau_act"),
            non_negative=("noisy_std",),
            positive=("kappa", "cvar_alpha"),
            unit_interval=("cvar_alpha",),
            optional_levels=("collect_cvar_alpha",),
        )


def iqn_target(
    next_quantiles: torch.Tensor, reward: torch.Tensor, bootstrap: torch.Tensor
) -> torch.Tensor:
    """Standard IQN target samples.

    Args:
        next_quantiles: target-network quantiles ``Z_target(s', a; tau'_j)`` ``[B, N', A]``.
        reward: ``[B, 1]``.
        bootstrap: ``discount (1 - terminated)`` ``[B, 1]``.

    Returns:
        ``T_j = r + bootstrap Z_target(s', a*; tau'_j)`` ``[B, N']`` with
        ``a* = argmax_a mean_j Z_target(s', a; tau'_j)`` (one action per transition, not a max
        per ``tau'_j`` as in the original).
    """
    best = next_quantiles.mean(dim=-2).argmax(dim=-1)  # [B]
    index = best.view(-1, 1, 1).expand(-1, next_quantiles.shape[-2], 1)
    chosen = next_quantiles.gather(-1, index).squeeze(-1)  # [B, N']
    return reward + bootstrap * chosen


class IQNLoss(LossModule):
    """Quantile-Huber loss of IQN with a target network (TorchRL ``LossModule``).

    The network is registered with ``convert_to_functional(..., create_target_params=True)``:
    online parameters in ``network_params`` (the network's own parameters), target parameters in
    ``target_network_params`` (copied by ``HardUpdate``).

    ``forward(batch [B])`` draws ``tau [B, num_tau_train]`` and then
    ``tau' [B, num_tau_target]`` from the global torch RNG (in that order) and returns a
    TensorDict with ``loss`` (0-dim, batch mean, weighted by ``_weight`` when present) and
    ``loss_per_sample`` ``[B]`` (detached, unweighted: what a prioritized replay's priorities
    are made from).
    """

    network: ImplicitQuantileNetwork
    network_params: TensorDictParams
    target_network_params: TensorDictParams

    def __init__(
        self,
        network: ImplicitQuantileNetwork,
        *,
        gamma: float = 0.99,
        num_tau_train: int = 8,
        num_tau_target: int = 8,
        kappa: float = 1.0,
    ) -> None:
        super().__init__()
        self.convert_to_functional(network, "network", create_target_params=True)
        self.gamma = gamma
        self.num_tau_train = num_tau_train
        self.num_tau_target = num_tau_target
        self.kappa = kappa

    def predicted_quantiles(self, batch: TensorDictBase, tau: torch.Tensor) -> torch.Tensor:
        """Online ``Z(s, a; tau_i)`` at the taken action: ``tau [B, N]`` -> ``[B, N]``. The
        online parameters are the network's own (``network_params`` holds the same tensors), so
        the network is called as it is."""
        quantiles = self.network(
            batch[SELF_STATE], batch[OBJECTS], batch[OBJECTS_MASK], tau, noise=True
        )  # [B, N, 25]
        action = batch[ACTION].view(-1, 1, 1).expand(-1, tau.shape[-1], 1)
        return quantiles.gather(-1, action).squeeze(-1)

    def target_quantiles(self, batch: TensorDictBase, tau_next: torch.Tensor) -> torch.Tensor:
        """Target samples ``T_j`` (no gradient): ``tau' [B, N']`` -> ``[B, N']`` (see
        :func:`iqn_target`)."""
        nxt = batch["next"]
        with (
            torch.no_grad(),
            self.target_network_params.to_module(self.network, preserve_module_state=False),
        ):
            quantiles = self.network(
                nxt[SELF_STATE], nxt[OBJECTS], nxt[OBJECTS_MASK], tau_next, noise=True
            )  # [B, N', 25]
        return iqn_target(quantiles, nxt[REWARD], bootstrap_factor(batch, self.gamma))

    @torch.no_grad()
    def resample_noise(self) -> None:
        """A noisy head's fresh noise from the global torch RNG, the online network's, then the
        target's (nothing, and no draw, with a plain head)."""
        reset_online_and_target_noise(self.network, self.target_network_params)

    def forward(self, batch: TensorDictBase) -> TensorDict:
        reward = batch["next", REWARD]
        shape, options = (batch.shape[0],), {"device": reward.device, "dtype": reward.dtype}
        tau = torch.rand(*shape, self.num_tau_train, **options)
        tau_next = torch.rand(*shape, self.num_tau_target, **options)
        pred = self.predicted_quantiles(batch, tau)
        target = self.target_quantiles(batch, tau_next)
        per_sample = quantile_huber_loss(pred, target, tau, self.kappa)  # [B]
        loss = batch_mean(per_sample, batch)
        return TensorDict({"loss": loss, "loss_per_sample": per_sample.detach()}, batch_size=[])


class QuantilePlannerCall(nn.Module):
    """The IQN network in the C++ planner's calling convention:
    ``forward((self_state, object_states, object_masks), taus [N, K])`` -> quantiles
    ``[N, K, 25]`` at the fractions ``cvar_alpha * taus`` (the planner draws K = 32 fractions
    ``taus ~ U(0, 1)``; the file maps them to ``U(0, cvar_alpha)``, the level the agent acts at,
    so that the caller's argmax of the mean is the agent's action; 1 leaves them as drawn)."""

    def __init__(self, network: ImplicitQuantileNetwork, cvar_alpha: float = 1.0) -> None:
        super().__init__()
        self.network = network
        self.register_buffer("cvar_alpha", torch.tensor(float(cvar_alpha)))

    def forward(
        self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor], taus: torch.Tensor
    ) -> torch.Tensor:
        self_state, object_states, object_masks = x
        taus = taus * self.cvar_alpha.to(taus.dtype)
        return self.network(self_state, object_states, object_masks, taus, noise=False)


class IQNAgent(Agent):
    """IQN agent (discrete actions): one objective, ``"q"`` (``loss_q``)."""

    name = "iqn"
    action_kind = "discrete"
    config_class = IQNConfig
    model_type = "IQN"
    export_outputs = ("quantiles",)
    export_extra_inputs = ("taus",)
    config: IQNConfig

    def __init__(self, config: IQNConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.network = ImplicitQuantileNetwork(
            seed=cfg.seed, normalize=cfg.normalize_observations,
            noisy_std=cfg.noisy_std if cfg.noisy else None,
        )  # fmt: skip
        self.loss_module = IQNLoss(
            self.network, gamma=cfg.gamma, num_tau_train=cfg.num_tau_train,
            num_tau_target=cfg.num_tau_target, kappa=cfg.kappa,
        )  # fmt: skip
        self.policy = PolicyWrapper(
            QuantileSelector(self.network, num_tau=cfg.num_tau_act), seed=cfg.seed
        )
        # the level the agent acts at, and the one its greedy action uses while collecting
        self.policy.set_cvar(cfg.cvar_alpha, exploring=cfg.collect_cvar_alpha)

    def objectives(self) -> tuple[Objective, ...]:
        """One step of the network on ``loss_q``."""
        network = ParameterGroup("q", self.network.parameters())
        return (Objective("q", self.q_loss, "loss_q", network),)

    def q_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_q``: the quantile-Huber loss (:class:`IQNLoss`; draws a noisy head's noise,
        then the fractions); with ``prioritized``, also ``priority`` ``[B]``: each transition's
        loss to the ``priority_exponent`` (the learner feeds it to the replay at the batch's
        ``"index"``)."""
        self.loss_module.resample_noise()
        losses = self.loss_module(batch)
        if not self.config.prioritized:
            return TensorDict({"loss_q": losses["loss"]})
        priority = self.config.priorities(losses["loss_per_sample"])
        return TensorDict({"loss_q": losses["loss"], "priority": priority})

    def export_network(self) -> QuantilePlannerCall:
        return QuantilePlannerCall(self.network, self.config.cvar_alpha)

    @classmethod
    def export_output_shapes(cls) -> tuple[tuple[int | None, ...], ...]:
        """Quantiles ``(K, 25)``, ``K`` the quantile fractions the caller feeds."""
        return ((None, NUM_DISCRETE_ACTIONS),)

    @classmethod
    def planner_action(cls, outputs: Any, **options: Any) -> torch.Tensor:
        """Argmax over the 25 actions of the mean of the quantiles ``[..., K, 25]``."""
        return planner_output(outputs).mean(dim=-2).argmax(dim=-1)
