"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic
Methods"): DDPG with TD3's three changes, which counter the value overestimation measured in
DDPG with the original's settings (docs/results.md, "DDPG: 3-step returns, and TD3"). Not in
the original.

Networks: the DDPG actor ``DeterministicActor`` (seed ``cfg.seed``) and two DDPG critics
``QCritic`` (seeds ``cfg.seed + 1`` and ``cfg.seed + 2``, as SAC's), each with a target copy.

Update (:meth:`TD3Agent.objectives`, stepped in this order by the trainer's ``Updater``):

1. ``"critics"`` (every update): ``y = r + discount (1 - terminated) min_k Q_target_k(s', a')`` with
   ``a' = clamp(mu_target(s') + clamp(eps, -noise_clip, noise_clip), -1, 1)``,
   ``eps ~ N(0, policy_noise^2)`` per action component (target policy smoothing); loss
   ``SmoothL1(Q_1(s, a), y) + SmoothL1(Q_2(s, a), y)`` (DDPG's Huber loss on each critic),
   reported as ``loss_critic``; one Adam over both critics' stacked parameters, each critic's
   gradient clipped to norm ``grad_clip_norm`` separately.
2. ``"actor"`` (every ``policy_delay``-th update, the first included: ``every=policy_delay``):
   ``-mean Q_1(s, mu(s))`` with the updated critic 1 (detached), clip, Adam step. An update
   that does not step the actor reports the last actor loss.

Built on TorchRL's ``TD3Loss`` (``num_qvalue_nets=2`` over a list of the two critics, bounds
(-1, 1), ``loss_function="smooth_l1"``, target actor and target critics) with its TD(0)
estimator.

What stays the original DDPG's: exploration (epsilon-uniform random actions, the
trainer's schedule), the deterministic evaluation action ``mu(s)``, Adam 1e-4, clip 0.5, batch
64, and the targets hard-copied every 10,000 env steps by the trainer (TD3's paper uses Polyak
averaging, tau 0.005; the trainer's copy is kept so that only the three changes differ).
``n_step > 1`` (off by default) learns from the trainer's per-robot n-step replay, as DDPG can.

The delayed actor step is a branch on the updater's host counter of updates (the run's update
count, kept in checkpoints), so an update is not one fixed graph: ``cudagraph_update = False``,
and ``compile=true`` compiles the critic step and the actor step separately.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl.objectives import TD3Loss, ValueEstimators

from marinenav.agents.base import (
    OBSERVATION_KEYS,
    Agent,
    NStepConfig,
    Objective,
    ParameterGroup,
    PlannerCall,
    StackedCritics,
    check_options,
    critic_then_actor,
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
    the targets, objectives ``"critics"`` and ``"actor"`` (delayed)."""

    name = "td3"
    action_kind = "continuous"
    config_class = TD3Config
    model_type = "TD3"
    export_outputs = ("action",)
    cudagraph_update = False  # the actor steps on every policy_delay-th update: a host branch

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
        self.policy = PolicyWrapper(DeterministicSelector(self.actor), seed=cfg.seed)

    def objectives(self) -> tuple[Objective, ...]:
        """Both critics' step on every update; the actor's, against the updated critic 1, on
        every ``policy_delay``-th."""
        critics = ParameterGroup("critics", self.critic_parameters(), stacked=True)
        actor = ParameterGroup("actor", self.actor.parameters())
        return critic_then_actor(self, critics, actor, actor_every=self.config.policy_delay)

    def critic_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_critic``: the sum of the two critics' SmoothL1 losses towards the clipped
        double-Q target (draws the smoothing noise)."""
        loss, _ = self.loss_module.value_loss(with_steps_to_next_obs(batch, self.config.gamma))
        return TensorDict({"loss_critic": loss})

    def actor_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_actor``: ``-mean Q_1(s, mu(s))`` (gradients reach the actor only)."""
        loss, _ = self.loss_module.actor_loss(batch)
        return TensorDict({"loss_actor": loss})

    def export_network(self) -> PlannerCall:
        """The actor: action ``(N, 2)`` in (-1, 1), as DDPG's planner (the original's C++
        planner loads it as a DDPG file)."""
        return PlannerCall(self.actor)
