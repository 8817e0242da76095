"""DDPG: deterministic actor-critic with target actor and target critic.

Networks: actor ``DeterministicActor`` (trunk, two hidden layers of 128, ``(2/pi) atan``
squashing; 50,354 parameters, seed ``cfg.seed``), critic ``QCritic`` (trunk,
``ReLU(Linear(256, 128)) * ReLU(Linear(2, 128)(a))``, ``Linear(128, 128)`` + ReLU,
``Linear(128, 1)``; 50,609 parameters, seed ``cfg.seed + 1``). The target networks start as
copies of the online ones.

Hyperparameters (the original's values): gamma 0.99, Adam lr 1e-4 (one Adam for the actor,
one for the critic, PyTorch defaults), gradient-norm clip 0.5 per network, batch 64 (the
trainer's), target networks hard-copied every 10,000 env steps (the trainer calls
:meth:`DDPGAgent.update_targets`), exploration epsilon-uniform only.

Update (one call of :meth:`DDPGAgent.update`):

1. Critic: ``SmoothL1(Q(s, a), r + gamma (1 - terminated) Q_target(s', mu_target(s')))``
   (Huber delta 1, mean); clip, Adam step on the critic only.
2. Actor: ``-mean Q(s, mu(s))`` with the critic just updated (its parameters detached, so the
   actor step never moves the critic); clip, Adam step on the actor only.

``update`` returns detached 0-dim ``loss_critic`` and ``loss_actor``.

Built on TorchRL's ``DDPGLoss`` (``loss_function="smooth_l1"``, ``delay_actor=True``,
``delay_value=True``) with its TD(0) estimator, and ``HardUpdate``. The two halves of the loss
are called separately (``loss_value`` then ``loss_actor``) so that the actor loss sees the
updated critic, as in the original.

Deviations from the original:

* Timeouts bootstrap: the target uses ``("next", "terminated")``, not ``done`` (TorchRL's
  ``td0_return_estimate`` multiplies by ``1 - terminated``); the original stores timeouts as
  terminal (docs/training.md, "Deviations from the original trainer and agents").
* ``normalize_observations=True`` (off by default) scales the network inputs (not original).
* ``n_step=n > 1`` (off by default; not original): the trainer's per-robot n-step replay; the
  critic's target is ``R + discount (1 - terminated) Q_target(s', mu_target(s'))`` with the
  transition's ``"discount" = gamma ** m`` (TorchRL's ``steps_to_next_obs``).
* The Adams are ``fused=True`` (same update up to rounding): one kernel per step, and no
  ``item()`` calls on the step counters, which the default single-tensor / foreach Adam reads back
  once per parameter (no read-back in the update step: rule 1 of
  docs/architecture.md, "Performance rules and where they are kept").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl.objectives import DDPGLoss, HardUpdate, ValueEstimators

from marinenav.agents.base import (
    OBSERVATION_KEYS,
    Agent,
    NStepConfig,
    PlannerCall,
    check_batch,
    make_adam,
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
    target parameters, optimisers ``"critic"`` and ``"actor"``."""

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
        # HardUpdate copies when its counter reaches the interval: 0 copies on every step() call
        self.target_updater = HardUpdate(self.loss_module, value_network_update_interval=0)
        self.optimizers = {
            "critic": make_adam(self.critic.parameters(), cfg.lr),
            "actor": make_adam(self.actor.parameters(), cfg.lr),
        }
        self.policy = PolicyWrapper(DeterministicSelector(self.actor), seed=cfg.seed)

    def critic_step(self, batch: TensorDictBase) -> torch.Tensor:
        """SmoothL1 TD(0) step on the critic only; returns the detached loss."""
        loss, _ = self.loss_module.loss_value(batch)
        self.step_optimizer("critic", loss, self.critic.parameters())
        return loss.detach()

    def actor_step(self, batch: TensorDictBase) -> torch.Tensor:
        """``-mean Q(s, mu(s))`` step on the actor only; returns the detached loss."""
        loss, _ = self.loss_module.loss_actor(batch)
        self.step_optimizer("actor", loss, self.actor.parameters())
        return loss.detach()

    def update(self, batch: TensorDictBase) -> TensorDict:
        check_batch(batch, self.action_kind)
        loss_critic = self.critic_step(with_steps_to_next_obs(batch, self.config.gamma))
        loss_actor = self.actor_step(batch)
        return TensorDict({"loss_critic": loss_critic, "loss_actor": loss_actor}, batch_size=[])

    def export_network(self) -> PlannerCall:
        """The actor: action ``(N, 2)`` in (-1, 1), the planner's action as it is."""
        return PlannerCall(self.actor)
