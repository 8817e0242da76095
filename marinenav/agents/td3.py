"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic
Methods"): DDPG with TD3's three changes, which counter the value overestimation measured in
DDPG with the original's settings (docs/results.md, "DDPG: 3-step returns, and TD3"). Not in
the original.

Networks: the DDPG actor ``DeterministicActor`` (seed ``cfg.seed``) and two DDPG critics
``QCritic`` (seeds ``cfg.seed + 1`` and ``cfg.seed + 2``, as SAC's), each with a target copy.

Update (one call of :meth:`TD3Agent.update`):

1. Critics (every call): ``y = r + discount (1 - terminated) min_k Q_target_k(s', a')`` with
   ``a' = clamp(mu_target(s') + clamp(eps, -noise_clip, noise_clip), -1, 1)``,
   ``eps ~ N(0, policy_noise^2)`` per action component (target policy smoothing); loss
   ``SmoothL1(Q_1(s, a), y) + SmoothL1(Q_2(s, a), y)`` (DDPG's Huber loss on each critic), one
   Adam over both critics' stacked parameters, each critic's gradient clipped to norm
   ``grad_clip_norm`` separately.
2. Actor (every ``policy_delay``-th call, the first call included): ``-mean Q_1(s, mu(s))`` with
   the updated critic 1 (detached), clip, Adam step. A call that does not step the actor reports
   the last actor loss.

Built on TorchRL's ``TD3Loss`` (``num_qvalue_nets=2`` over a list of the two critics, bounds
(-1, 1), ``loss_function="smooth_l1"``, target actor and target critics) with its TD(0)
estimator, and ``HardUpdate``.

What stays the original DDPG's: exploration (epsilon-uniform random actions, the
trainer's schedule), the deterministic evaluation action ``mu(s)``, Adam 1e-4, clip 0.5, batch
64, and the targets hard-copied every 10,000 env steps by the trainer (TD3's paper uses Polyak
averaging, tau 0.005; the trainer's copy is kept so that only the three changes differ).
``n_step > 1`` (off by default) learns from the trainer's per-robot n-step replay, as DDPG can.

The delayed actor step is a branch on a Python counter (``critic_updates``, kept in
checkpoints), so ``update`` is not one fixed graph: ``cudagraph_update = False``, and
``compile_update(compile=True)`` compiles the critic step and the actor step separately.
The Adams are ``fused=True`` (no host read of their step counters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl._utils import compile_with_warmup
from torchrl.objectives import HardUpdate, TD3Loss, ValueEstimators

from marinenav.agents.base import (
    OBSERVATION_KEYS,
    Agent,
    NStepConfig,
    PlannerCall,
    StackedCritics,
    check_batch,
    check_options,
    make_adam,
    with_steps_to_next_obs,
)
from marinenav.keys import ACTION
from marinenav.policy.networks import DeterministicActor
from marinenav.policy.selectors import DeterministicSelector
from marinenav.policy.wrapper import PolicyWrapper


@dataclass
class TD3Config(NStepConfig):
    """TD3's hyperparameters (the paper's values) on top of the shared ones and
    ``n_step``."""

    policy_noise: float = 0.2  # std of the target policy smoothing noise (action units)
    noise_clip: float = 0.5  # the smoothing noise is clipped to [-noise_clip, noise_clip]
    policy_delay: int = 2  # critic updates per actor update

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self, non_negative=("policy_noise", "noise_clip"), counts=("policy_delay",))


class TD3Agent(StackedCritics, Agent):
    """TD3 agent: ``actor`` online network, TorchRL ``TD3Loss`` holding the stacked critics and
    the targets, optimisers ``"critics"`` and ``"actor"``."""

    name = "td3"
    action_kind = "continuous"
    config_class = TD3Config
    model_type = "TD3"
    export_outputs = ("action",)
    cudagraph_update = False  # the actor steps on every policy_delay-th call: a Python branch

    def __init__(self, config: TD3Config | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.actor = DeterministicActor(seed=cfg.seed, normalize=cfg.normalize_observations)
        actor_module = TensorDictModule(
            self.actor, in_keys=list(OBSERVATION_KEYS), out_keys=[ACTION]
        )
        critics = self.critic_modules(cfg)
        self.loss_module = TD3Loss(
            actor_module, critics, bounds=(-1.0, 1.0), num_qvalue_nets=2,
            policy_noise=cfg.policy_noise, noise_clip=cfg.noise_clip, loss_function="smooth_l1",
            delay_actor=True, delay_qvalue=True,
        )  # fmt: skip
        # TD(0): r + gamma * (1 - ("next", "terminated")) * min_k Q_target_k(s', a')
        self.loss_module.make_value_estimator(ValueEstimators.TD0, gamma=cfg.gamma)
        self.target_updater = HardUpdate(self.loss_module, value_network_update_interval=0)
        self.optimizers = {
            "critics": make_adam(self.critic_parameters(), cfg.lr),
            "actor": make_adam(self.actor.parameters(), cfg.lr),
        }
        self.policy = PolicyWrapper(DeterministicSelector(self.actor), seed=cfg.seed)
        self.critic_updates = 0  # calls of update() so far (decides the delayed actor step)
        self.register_buffer("last_loss_actor", torch.zeros(()), persistent=False)

    def critic_step(self, batch: TensorDictBase) -> torch.Tensor:
        """One SmoothL1 step on both critics towards the clipped double-Q target; returns the
        detached sum of the two critics' losses."""
        loss, _ = self.loss_module.value_loss(batch)
        self.step_optimizer("critics", loss, self.critic_parameters(), stacked=True)
        return loss.detach()

    def actor_step(self, batch: TensorDictBase) -> torch.Tensor:
        """``-mean Q_1(s, mu(s))`` step on the actor only; returns the detached loss."""
        loss, _ = self.loss_module.actor_loss(batch)
        self.step_optimizer("actor", loss, self.actor.parameters())
        return loss.detach()

    def update(self, batch: TensorDictBase) -> TensorDict:
        check_batch(batch, self.action_kind)
        loss_critic = self.critic_step(with_steps_to_next_obs(batch, self.config.gamma))
        if self.critic_updates % self.config.policy_delay == 0:
            self.last_loss_actor.copy_(self.actor_step(batch))
        self.critic_updates += 1
        return TensorDict(
            {"loss_critic": loss_critic, "loss_actor": self.last_loss_actor.clone()},
            batch_size=[],
        )

    def compile_update(self, compile: bool = True, cudagraphs: bool = False) -> None:
        """``torch.compile`` the critic step and the actor step separately (``update`` itself
        branches on the Python counter); ``cudagraphs=true`` is refused (the base class says
        why)."""
        super().compile_update(compile=False, cudagraphs=cudagraphs)
        if compile:
            self.critic_step = compile_with_warmup(self.critic_step, warmup=1)
            self.actor_step = compile_with_warmup(self.actor_step, warmup=1)

    def training_state_dict(self) -> dict[str, Any]:
        """The base state plus ``critic_updates``, so a resumed run keeps the actor's
        phase."""
        return {**super().training_state_dict(), "critic_updates": self.critic_updates}

    def load_training_state_dict(self, state: dict[str, Any]) -> None:
        super().load_training_state_dict(state)
        self.critic_updates = int(state["critic_updates"])

    def export_network(self) -> PlannerCall:
        """The actor: action ``(N, 2)`` in (-1, 1), as DDPG's planner (the original's C++
        planner loads it as a DDPG file)."""
        return PlannerCall(self.actor)
