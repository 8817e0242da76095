"""DDPG: deterministic actor-critic with target actor and target critic.

Networks: actor ``DeterministicActor`` (trunk, two hidden layers of 128, ``(2/pi) atan``
squashing; 50,354 parameters, seed ``cfg.seed``), critic ``QCritic`` (trunk,
``ReLU(Linear(256, 128)) * ReLU(Linear(2, 128)(a))``, ``Linear(128, 128)`` + ReLU,
``Linear(128, 1)``; 50,609 parameters, seed ``cfg.seed + 1``). The target networks start as
copies of the online ones.

Hyperparameters (the original's values): gamma 0.99, Adam lr 1e-4 (one Adam for the actor,
one for the critic, PyTorch defaults), gradient-norm clip 0.5 per network, batch 64 (the
trainer's), target networks hard-copied every 10,000 env steps (the trainer's), exploration
epsilon-uniform only.

Update (:meth:`DDPGAgent.objectives`, stepped in this order by the trainer's ``Updater``):

1. ``"critic"``: ``SmoothL1(Q(s, a), r + gamma (1 - terminated) Q_target(s', mu_target(s')))``
   (Huber delta 1, mean), reported as ``loss_critic``; clip, Adam step on the critic only.
2. ``"actor"``: ``-mean Q(s, mu(s))`` with the critic just updated (its parameters detached, so
   the actor step never moves the critic), reported as ``loss_actor``; clip, Adam step on the
   actor only.

Built on TorchRL's ``DDPGLoss`` (``loss_function="smooth_l1"``, ``delay_actor=True``,
``delay_value=True``: the target actor and critic) with its TD(0) estimator. The two halves of
the loss are called separately (``loss_value`` then ``loss_actor``) so that the actor loss sees
the updated critic, as in the original.

Deviations from the original:

* Timeouts bootstrap: the target uses ``("next", "terminated")``, not ``done`` (TorchRL's
  ``td0_return_estimate`` multiplies by ``1 - terminated``); the original stores timeouts as
  terminal (docs/training.md, "Deviations from the original trainer and agents").
* ``normalize_observations=True`` (off by default) scales the network inputs (not original).
* ``n_step=n > 1`` (off by default; not original): the trainer's per-robot n-step replay; the
  critic's target is ``R + discount (1 - terminated) Q_target(s', mu_target(s'))`` with the
  transition's ``"discount" = gamma ** m`` (TorchRL's ``steps_to_next_obs``).
* The Adams are ``fused=True`` (same update up to rounding; ``training.updater.make_adam``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl.objectives import DDPGLoss, ValueEstimators

from marinenav.agents.base import (
    OBSERVATION_KEYS,
    Agent,
    NStepConfig,
    Objective,
    ParameterGroup,
    PlannerCall,
    critic_then_actor,
    with_steps_to_next_obs,
)
from marinenav.keys import ACTION
from marinenav.policy.networks import DeterministicActor, QCritic
from marinenav.policy.selectors import DeterministicSelector
from marinenav.policy.wrapper import PolicyWrapper


@dataclass
class DDPGConfig(NStepConfig):
    """DDPG has no hyperparameters beyond the shared ones and ``n_step``."""


class DDPGAgent(Agent):
    """DDPG agent: ``actor`` and ``critic`` online networks, TorchRL ``DDPGLoss`` holding the
    target parameters, objectives ``"critic"`` and ``"actor"``."""

    name = "ddpg"
    action_kind = "continuous"
    config_class = DDPGConfig
    model_type = "DDPG"
    export_outputs = ("action",)

    def __init__(self, config: DDPGConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.actor = DeterministicActor(seed=cfg.seed, normalize=cfg.normalize_observations)
        self.critic = QCritic(seed=cfg.seed + 1, normalize=cfg.normalize_observations)
        actor_module = TensorDictModule(
            self.actor, in_keys=list(OBSERVATION_KEYS), out_keys=[ACTION]
        )
        critic_module = TensorDictModule(
            self.critic, in_keys=[*OBSERVATION_KEYS, ACTION], out_keys=["state_action_value"]
        )
        self.loss_module = DDPGLoss(
            actor_module, critic_module, loss_function="smooth_l1", delay_actor=True,
            delay_value=True,
        )  # fmt: skip
        # TD(0): r + gamma * (1 - ("next", "terminated")) * Q_target(s', mu_target(s'))
        self.loss_module.make_value_estimator(ValueEstimators.TD0, gamma=cfg.gamma)
        self.policy = PolicyWrapper(DeterministicSelector(self.actor), seed=cfg.seed)

    def objectives(self) -> tuple[Objective, ...]:
        """The critic's step, then the actor's against the updated critic."""
        critic = ParameterGroup("critic", self.critic.parameters())
        return critic_then_actor(self, critic, ParameterGroup("actor", self.actor.parameters()))

    def critic_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_critic``: SmoothL1 TD(0) loss of the critic (gradients reach it only)."""
        loss, _ = self.loss_module.loss_value(with_steps_to_next_obs(batch, self.config.gamma))
        return TensorDict({"loss_critic": loss})

    def actor_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_actor``: ``-mean Q(s, mu(s))`` (gradients reach the actor only)."""
        loss, _ = self.loss_module.loss_actor(batch)
        return TensorDict({"loss_actor": loss})

    def export_network(self) -> PlannerCall:
        """The actor: action ``(N, 2)`` in (-1, 1), the planner's action as it is."""
        return PlannerCall(self.actor)
