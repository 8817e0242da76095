"""SAC: soft actor-critic with two Q critics, target critics and an atan-squashed
Gaussian policy.

Networks: actor ``GaussianActor`` (trunk, two hidden layers of 128, heads for the mean
``mu`` and ``log sigma`` clamped to [-20, 2]; 50,612 parameters, seed ``cfg.seed``); two critics
``QCritic`` (the DDPG critic; 50,609 parameters each, seeds ``cfg.seed + 1`` and
``cfg.seed + 2``, so they start from different initialisations). Target critics start as copies.

Policy: ``z = mu + sigma * eps``, ``a = (2/pi) atan(z)`` in (-1, 1)^2 and, by the change of
variables of the ``(2/pi) atan`` squashing (``da/dz = (2/pi) / (1 + z^2)``),
``log pi(a|s) = sum_dims [log N(z; mu, sigma) - log(2/pi) + log(1 + z^2)]``
(:class:`AtanSquashedNormal`).

Hyperparameters (the original's values): gamma 0.99, Adam lr 1e-4 (PyTorch defaults),
gradient-norm clip 0.5 per network, fixed temperature ``alpha = 0.078``, batch 64 (the
trainer's), target critics hard-copied every 10,000 env steps (the trainer's), exploration
epsilon-uniform on top of policy sampling.
Options that are not in the original: ``learn_alpha`` (automatic entropy tuning towards
``target_entropy = -2``, with its own Adam at ``lr``, off by default); ``n_step = n > 1`` (off by
default): the trainer's per-robot n-step replay, the critics' target
``R + discount (1 - terminated) [min Q_t(s', a') - alpha log pi(a'|s')]`` with the transition's
``"discount" = gamma ** m`` (TorchRL's ``steps_to_next_obs``), as DDPG's.

Update (:meth:`SACAgent.objectives`, stepped in this order by the trainer's ``Updater``):

1. ``"critics"``: ``y = r + gamma (1 - terminated) [min(Q1_t, Q2_t)(s', a') - alpha log pi(a'|s')]``
   with ``a' ~ pi(.|s')`` from the current actor; loss ``MSE(Q1(s, a), y) + MSE(Q2(s, a), y)``
   (reported as ``loss_critic``); one Adam over both critics, each critic's gradient clipped to
   norm 0.5 separately. Adam is element-wise, so this equals the original's one Adam per
   critic.
2. ``"actor"``: ``mean(alpha log pi(a~|s) - min(Q1, Q2)(s, a~))``, ``a~ ~ pi(.|s)`` re-sampled,
   with the updated critics (detached: the actor step never moves the critics); clip 0.5, Adam
   step. The same step reports the temperature's loss ``-log alpha (log pi(a~|s) +
   target_entropy)`` (``loss_alpha``, on the detached ``log pi``) and ``alpha``, the temperature
   the actor loss used; with ``learn_alpha`` it also minimises ``loss_alpha`` and steps the
   temperature (group ``"alpha"``, clipped on its own). No gradient crosses between the two:
   the actor loss uses a detached alpha, the alpha loss a detached ``log pi``.

Built on TorchRL's ``SACLoss`` (v2: no state-value network; ``num_qvalue_nets=2`` with the two
critics passed as a list so their stacked parameters keep their own initialisations,
``loss_function="l2"``, ``delay_qvalue=True``, ``delay_actor=False``, ``fixed_alpha=not
learn_alpha``) with its TD(0) estimator and a ``ProbabilisticActor`` over
:class:`AtanSquashedNormal`. The critics' parameters live stacked
``[2, ...]`` in ``loss_module.qvalue_network_params``; :meth:`SACAgent.critic_network` returns a
plain ``QCritic`` copy of one of them.

Deviations from the original (its quirks replaced by the standard algorithm; docs/training.md,
"Deviations from the original trainer and agents"):

* The next action of the target comes from the current actor, not a target actor, and there
  is no target actor (the original keeps and copies one).
* ``log pi`` uses the true log-determinant of ``(2/pi) atan``; the original subtracts the tanh
  correction ``log(1 - a^2 + 1e-6)``.
* Evaluation acts with the deterministic ``(2/pi) atan(mu)``; the original samples at
  evaluation too (the policy's :class:`~marinenav.policy.selectors.GaussianSelector`).
* Timeouts bootstrap: targets use ``("next", "terminated")``, not ``done`` (the original stores
  timeouts as terminal).
* One Adam holds both critics' stacked parameters (equivalent, see above); the gradient clip
  is still per critic.
* The Adams are ``fused=True`` (same update up to rounding; ``training.updater.make_adam``).
* ``normalize_observations=True`` (off by default) scales the network inputs (not original).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch.distributions import Distribution, constraints
from torchrl.modules import ProbabilisticActor
from torchrl.objectives import SACLoss, ValueEstimators

from marinenav.agents.base import (
    OBSERVATION_KEYS,
    Agent,
    NStepConfig,
    Objective,
    ParameterGroup,
    PlannerCall,
    StackedCritics,
    check_options,
    with_steps_to_next_obs,
)
from marinenav.keys import ACTION
from marinenav.policy.networks import GaussianActor, LocScale, squash
from marinenav.policy.selectors import GaussianSelector
from marinenav.policy.wrapper import PolicyWrapper

_LOG_2_OVER_PI = math.log(2.0 / math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_NO_SAMPLE_SHAPE = torch.Size()


class AtanSquashedNormal(Distribution):
    """``a = (2/pi) atan(z)`` with ``z ~ N(loc, scale)`` independent over the last dimension
    (the event dimension): a distribution on ``(-1, 1)^d``.

    ``log_prob(a) = sum [log N(z; loc, scale) - log(2/pi) + log(1 + z^2)]``, ``z = tan(pi a / 2)``.
    :meth:`rsample_and_log_prob` scores the latent ``z`` it drew (exact even where ``a`` rounds
    to +-1); :meth:`log_prob` inverts ``a``, which loses precision near the boundary.
    ``deterministic_sample`` is ``(2/pi) atan(loc)``. No argument validation (it would read
    values back to the host).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.independent(constraints.interval(-1.0, 1.0), 1)
    has_rsample = True

    def __init__(self, loc: torch.Tensor, scale: torch.Tensor, validate_args=None) -> None:
        self.loc, self.scale = torch.broadcast_tensors(loc, scale)
        super().__init__(self.loc.shape[:-1], self.loc.shape[-1:], validate_args=False)

    def _latent_log_prob(self, z: torch.Tensor) -> torch.Tensor:
        normal = -0.5 * ((z - self.loc) / self.scale) ** 2 - self.scale.log() - _LOG_SQRT_2PI
        return (normal - _LOG_2_OVER_PI + torch.log1p(z * z)).sum(-1)

    def _latent_rsample(self, sample_shape=_NO_SAMPLE_SHAPE) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        noise = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + self.scale * noise

    def rsample(self, sample_shape=_NO_SAMPLE_SHAPE) -> torch.Tensor:
        return squash(self._latent_rsample(sample_shape))

    def rsample_and_log_prob(self, sample_shape=_NO_SAMPLE_SHAPE):
        z = self._latent_rsample(sample_shape)
        return squash(z), self._latent_log_prob(z)

    def sample(self, sample_shape=_NO_SAMPLE_SHAPE) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def sample_and_log_prob(self, sample_shape=_NO_SAMPLE_SHAPE):
        with torch.no_grad():
            return self.rsample_and_log_prob(sample_shape)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return self._latent_log_prob(torch.tan(value * (math.pi / 2.0)))

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return squash(self.loc)


@dataclass
class SACConfig(NStepConfig):
    """SAC hyperparameters beyond the shared ones and ``n_step``."""

    alpha: float = 0.078  # entropy temperature (initial value when learned)
    learn_alpha: bool = False  # automatic entropy tuning (not in the original)
    target_entropy: float = -2.0  # -action_dim, used only when learn_alpha

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self, positive=("alpha",), finite=("target_entropy",))


class SACAgent(StackedCritics, Agent):
    """SAC agent: ``actor`` online network, TorchRL ``SACLoss`` holding the stacked critics and
    their targets, objectives ``"critics"`` and ``"actor"`` (which also steps ``"alpha"`` when
    learned)."""

    name = "sac"
    action_kind = "continuous"
    config_class = SACConfig
    model_type = "SAC"
    export_outputs = ("mu", "log_sigma")
    planner_options = ("noise",)  # the planner samples: standard-normal draws

    def __init__(self, config: SACConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.actor = GaussianActor(seed=cfg.seed, normalize=cfg.normalize_observations)
        actor_module = ProbabilisticActor(
            TensorDictModule(
                LocScale(self.actor), in_keys=list(OBSERVATION_KEYS), out_keys=["loc", "scale"]
            ),
            in_keys=["loc", "scale"],
            out_keys=[ACTION],
            distribution_class=AtanSquashedNormal,
        )
        critics = self.critic_modules(cfg)
        self.loss_module = SACLoss(
            actor_module, critics, num_qvalue_nets=2, loss_function="l2",
            alpha_init=cfg.alpha, fixed_alpha=not cfg.learn_alpha,
            target_entropy=cfg.target_entropy, delay_actor=False, delay_qvalue=True,
        )  # fmt: skip
        # TD(0): r + gamma * (1 - ("next", "terminated")) * V(s'), V = min Q_t - alpha log pi
        self.loss_module.make_value_estimator(ValueEstimators.TD0, gamma=cfg.gamma)
        _ = self.loss_module.target_entropy  # registers the lazy buffer now (stable state_dict)
        self.policy = PolicyWrapper(GaussianSelector(self.actor), seed=cfg.seed)

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature (0-dim tensor, no host read)."""
        return self.loss_module.log_alpha.detach().exp()

    def objectives(self) -> tuple[Objective, ...]:
        """Both critics' step, then the actor's (and the learned temperature's) against the
        updated critics."""
        actor = ParameterGroup("actor", self.actor.parameters())
        if self.config.learn_alpha:
            alpha = ParameterGroup("alpha", [self.loss_module.log_alpha])
            actor_objective = Objective("actor", self.actor_loss, ("loss_actor", "loss_alpha"),
                                   (actor, alpha))  # fmt: skip
        else:
            actor_objective = Objective("actor", self.actor_loss, "loss_actor", actor)
        critics = ParameterGroup("critics", self.critic_parameters(), stacked=True)
        return Objective("critics", self.critic_loss, "loss_critic", critics), actor_objective

    def critic_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_critic``: the sum of the two critics' MSE losses (draws ``a' ~ pi(.|s')``)."""
        loss, _ = self.loss_module.qvalue_v2_loss(with_steps_to_next_obs(batch, self.config.gamma))
        return TensorDict({"loss_critic": loss})

    def actor_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_actor`` (draws ``a~ ~ pi(.|s)``), ``loss_alpha`` on its detached ``log pi``,
        and ``alpha``, the temperature the actor loss used."""
        loss, metadata = self.loss_module.actor_loss(batch)
        loss_alpha = self.loss_module.alpha_loss(metadata["log_prob"]).mean()
        return TensorDict({"loss_actor": loss, "loss_alpha": loss_alpha, "alpha": self.alpha})

    def export_network(self) -> PlannerCall:
        """The actor: ``(mu (N, 2), log_sigma (N, 2))`` of the pre-squash Gaussian (no sampling
        or squashing in the exported module)."""
        return PlannerCall(self.actor)

    @classmethod
    def planner_action(
        cls, outputs: Any, *, noise: torch.Tensor | None = None, **options: Any
    ) -> torch.Tensor:
        """The planner's ``(2/pi) atan(mu + exp(log_sigma) * noise)`` ``[..., 2]`` from
        ``(mu [..., 2], log_sigma [..., 2])``; without ``noise`` (standard-normal draws
        ``[..., 2]``), ``(2/pi) atan(mu)``: the deterministic action the ``PolicyWrapper``
        evaluates with."""
        mu, log_sigma = (torch.as_tensor(x) for x in outputs)
        z = mu if noise is None else mu + log_sigma.exp() * torch.as_tensor(noise).to(mu)
        return squash(z)
