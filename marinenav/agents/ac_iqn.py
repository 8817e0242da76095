"""AC-IQN: actor-critic with an implicit quantile critic, the paper's method.

Networks (each seeded, as the original seeds every network): the deterministic actor ``mu(s)``
(trunk, two hidden layers of 128, ``(2/pi) atan`` squash;
:class:`~marinenav.policy.networks.DeterministicActor`, 50,354 parameters, agent seed) and the
quantile critic ``Z(s, a; tau)`` (trunk times the cosine embedding, first hidden layer times the
action embedding; :class:`~marinenav.policy.networks.QuantileCritic`, 67,249 parameters, agent
seed + 1). Each has a target copy.

Update (:meth:`ACIQNAgent.objectives`, stepped in this order by the trainer's ``Updater``):

1. ``"critic"``: ``a' = mu_target(s')``,
   ``T_j = r + gamma (1 - terminated) Z_target(s', a'; tau'_j)`` for 8 fresh ``tau'``;
   prediction ``z_i = Z(s, a; tau_i)`` for 8 fresh ``tau``; quantile-Huber loss
   (``kappa = 1``; sum over ``i``, mean over ``j``, mean over the batch, weighted by ``_weight``
   when present), reported as ``loss_critic``; clip the critic gradient norm to 0.5, Adam step
   on the critic.
2. ``"actor"``, with the updated critic: ``loss = -mean_{b, i} Z(s_b, mu(s_b); tau_i)`` with 8
   fresh ``tau ~ U(0, cvar_alpha)``: risk neutral (the mean of ``Z``) at ``cvar_alpha = 1``, the
   original's; below 1 the actor maximises ``CVaR_alpha``, the mean of the worst ``alpha`` of
   outcomes (risk averse, as in the IQN paper's distortion risk measures). Evaluated through
   the critic with its parameters frozen, so that no gradient reaches the critic, reported as
   ``loss_actor``; clip the actor gradient norm to 0.5, Adam step on the actor.

Hyperparameters (the original's): gamma 0.99; two Adams (actor, critic), learning rate
1e-4; gradient norm clip 0.5 per network; 8 / 8 / 8 quantile fractions (``num_tau_train``,
``num_tau_target``, ``num_tau_actor``); ``kappa = 1``; hard target copies (actor and critic)
every 10,000 env steps (the trainer's, with TorchRL's ``HardUpdate`` over the loss module's
target parameters). Acting: ``mu(s)``, with epsilon-uniform random actions in ``[-1, 1]^2`` when
exploring (:class:`~marinenav.policy.selectors.DeterministicSelector` in the ``PolicyWrapper``);
no Gaussian or OU noise.

Deviation from the original: timeouts (truncations) bootstrap; the original stores them as
terminal (docs/training.md, "Deviations from the original trainer and agents"). The loss itself
follows the original exactly. ``n_step=n > 1`` (off by default; not original): the trainer's
per-robot n-step replay, the target discounted by each transition's ``discount`` (``gamma ** m``,
``m <= n``) instead of ``gamma``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase, TensorDictParams
from torchrl.objectives import LossModule

from marinenav.agents.base import (
    Agent,
    NStepConfig,
    Objective,
    ParameterGroup,
    PlannerCall,
    check_options,
    critic_then_actor,
    frozen,
)
from marinenav.agents.quantile import batch_mean, bootstrap_factor, quantile_huber_loss
from marinenav.keys import ACTION, OBJECTS, OBJECTS_MASK, REWARD, SELF_STATE
from marinenav.policy.networks import DeterministicActor, QuantileCritic
from marinenav.policy.selectors import DeterministicSelector
from marinenav.policy.wrapper import PolicyWrapper


@dataclass
class ACIQNConfig(NStepConfig):
    """AC-IQN hyperparameters beyond the shared ones; ``n_step`` (off by default, not
    the original) selects the trainer's per-robot n-step returns."""

    num_tau_train: int = 8  # quantile fractions of the critic prediction Z(s, a; tau_i)
    num_tau_target: int = 8  # quantile fractions of the target Z_target(s', mu'(s'); tau'_j)
    num_tau_actor: int = 8  # quantile fractions averaged in the actor loss
    kappa: float = 1.0  # Huber threshold of the quantile-Huber loss
    cvar_alpha: float = 1.0  # the actor maximises CVaR_alpha of Z; 1: the mean (risk neutral)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(
            self,
            counts=("num_tau_train", "num_tau_target", "num_tau_actor"),
            positive=("kappa", "cvar_alpha"),
            unit_interval=("cvar_alpha",),
        )


class ACIQNLoss(LossModule):
    """The two AC-IQN losses (TorchRL ``LossModule``).

    Actor and critic are registered with ``convert_to_functional(..., create_target_params=True)``:
    online parameters in ``actor_params`` / ``critic_params`` (the networks' own parameters),
    target parameters in ``target_actor_params`` / ``target_critic_params`` (copied by
    ``HardUpdate``). Quantile fractions come from the global torch RNG.

    :meth:`critic_loss` and :meth:`actor_loss` are separate so that the critic is stepped before
    the actor loss is evaluated, as the original does; ``forward`` returns both for the current
    parameters (``loss_critic``, ``loss_actor``: 0-dim).
    """

    actor: DeterministicActor
    actor_params: TensorDictParams
    target_actor_params: TensorDictParams
    critic: QuantileCritic
    critic_params: TensorDictParams
    target_critic_params: TensorDictParams

    def __init__(
        self,
        actor: DeterministicActor,
        critic: QuantileCritic,
        *,
        gamma: float = 0.99,
        num_tau_train: int = 8,
        num_tau_target: int = 8,
        num_tau_actor: int = 8,
        kappa: float = 1.0,
        cvar_alpha: float = 1.0,
    ) -> None:
        super().__init__()
        self.convert_to_functional(actor, "actor", create_target_params=True)
        self.convert_to_functional(critic, "critic", create_target_params=True)
        self.gamma = gamma
        self.num_tau_train = num_tau_train
        self.num_tau_target = num_tau_target
        self.num_tau_actor = num_tau_actor
        self.kappa = kappa
        self.cvar_alpha = cvar_alpha

    @staticmethod
    def _taus(batch: TensorDictBase, n: int) -> torch.Tensor:
        """Fresh ``tau ~ U(0, 1)`` ``[B, n]`` on the batch's device."""
        reward = batch["next", REWARD]
        return torch.rand(batch.shape[0], n, device=reward.device, dtype=reward.dtype)

    def target_quantiles(self, batch: TensorDictBase, tau_next: torch.Tensor) -> torch.Tensor:
        """``T_j = r + gamma (1 - terminated) Z_target(s', mu_target(s'); tau'_j)`` ``[B, N']``
        (no gradient) at ``tau' [B, N']``."""
        nxt = batch["next"]
        obs = (nxt[SELF_STATE], nxt[OBJECTS], nxt[OBJECTS_MASK])
        with torch.no_grad():
            with self.target_actor_params.to_module(self.actor, preserve_module_state=False):
                next_action = self.actor(*obs)  # [B, 2]
            with self.target_critic_params.to_module(self.critic, preserve_module_state=False):
                quantiles = self.critic(*obs, next_action, tau_next)  # [B, N']
            return nxt[REWARD] + bootstrap_factor(batch, self.gamma) * quantiles

    def predicted_quantiles(self, batch: TensorDictBase, tau: torch.Tensor) -> torch.Tensor:
        """Online ``Z(s, a; tau_i)`` at the stored action ``[B, N]`` for ``tau [B, N]``. The
        online parameters are the critic's own (``critic_params`` holds the same tensors), so the
        critic is called as it is."""
        return self.critic(
            batch[SELF_STATE], batch[OBJECTS], batch[OBJECTS_MASK], batch[ACTION], tau
        )

    def critic_loss(self, batch: TensorDictBase) -> torch.Tensor:
        """Quantile-Huber critic loss (0-dim). Draws ``tau [B, num_tau_train]``, then
        ``tau' [B, num_tau_target]``. Gradients reach the online critic only."""
        tau = self._taus(batch, self.num_tau_train)
        tau_next = self._taus(batch, self.num_tau_target)
        pred = self.predicted_quantiles(batch, tau)
        target = self.target_quantiles(batch, tau_next)
        return batch_mean(quantile_huber_loss(pred, target, tau, self.kappa), batch)

    def actor_loss(self, batch: TensorDictBase) -> torch.Tensor:
        """``-mean_{b, i} Z(s_b, mu(s_b); tau_i)`` (0-dim) for ``tau [B, num_tau_actor]`` drawn
        from ``U(0, cvar_alpha)`` (a Monte Carlo estimate of ``-CVaR_alpha``), through a
        :func:`~marinenav.agents.base.frozen` critic: gradients reach the online actor only.
        Both networks are called with their own (online) parameters."""
        tau = self._taus(batch, self.num_tau_actor)
        if self.cvar_alpha != 1.0:
            tau = tau * self.cvar_alpha
        obs = (batch[SELF_STATE], batch[OBJECTS], batch[OBJECTS_MASK])
        action = self.actor(*obs)
        with frozen(self.critic):
            quantiles = self.critic(*obs, action, tau)  # [B, N]
        return -quantiles.mean()

    def forward(self, batch: TensorDictBase) -> TensorDict:
        return TensorDict(
            {"loss_critic": self.critic_loss(batch), "loss_actor": self.actor_loss(batch)},
            batch_size=[],
        )


class ACIQNAgent(Agent):
    """AC-IQN agent (continuous actions): objectives ``"critic"`` (``loss_critic``) and
    ``"actor"`` (``loss_actor``)."""

    name = "ac_iqn"
    action_kind = "continuous"
    config_class = ACIQNConfig
    model_type = "AC_IQN"
    export_outputs = ("action",)
    config: ACIQNConfig

    def __init__(self, config: ACIQNConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.actor = DeterministicActor(seed=cfg.seed, normalize=cfg.normalize_observations)
        self.critic = QuantileCritic(seed=cfg.seed + 1, normalize=cfg.normalize_observations)
        self.loss_module = ACIQNLoss(
            self.actor, self.critic, gamma=cfg.gamma, num_tau_train=cfg.num_tau_train,
            num_tau_target=cfg.num_tau_target, num_tau_actor=cfg.num_tau_actor, kappa=cfg.kappa,
            cvar_alpha=cfg.cvar_alpha,
        )  # fmt: skip
        self.policy = PolicyWrapper(DeterministicSelector(self.actor), seed=cfg.seed)

    def objectives(self) -> tuple[Objective, ...]:
        """The critic's step, then the actor's against the updated critic."""
        critic = ParameterGroup("critic", self.critic.parameters())
        return critic_then_actor(self, critic, ParameterGroup("actor", self.actor.parameters()))

    def critic_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_critic``: :meth:`ACIQNLoss.critic_loss` (draws the quantile fractions)."""
        return TensorDict({"loss_critic": self.loss_module.critic_loss(batch)})

    def actor_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_actor``: :meth:`ACIQNLoss.actor_loss` (draws the quantile fractions)."""
        return TensorDict({"loss_actor": self.loss_module.actor_loss(batch)})

    def export_network(self) -> PlannerCall:
        """The actor: action ``(N, 2)`` in (-1, 1), the planner's action as it is."""
        return PlannerCall(self.actor)
