"""MAPPO and IPPO: on-policy multi-agent PPO with continuous thrust changes (not in the paper).

Both agents share one actor across robots and learn from whole ``[E, T]`` rollouts of the
batched environment (:class:`~marinenav.training.rollout.RolloutLearner`); they differ in the
critic only:

* ``ippo``: independent critics ``V(o_i)`` on each robot's own observation
  (:class:`IndependentCritic`, de Witt et al. 2020);
* ``mappo``: a centralised critic ``V_i(o_1, ..., o_R)`` over the robot slots of the robot's
  environment (:class:`CentralisedCritic`, Yu et al. 2022), one value per robot: robot ``i``'s
  own features next to the mean and the maximum of the other robots' features, where robots
  that are absent (padding) or finished (goal, collision) are masked out.

Actor (:class:`GaussianPPOActor`): the paper's observation encoder, two hidden layers of 128
and a mean head; the log standard deviation is a learned vector, independent of the state (the
usual PPO choice for continuous control). Latent ``z ~ N(mu(o), sigma)``, executed action
``a = (2/pi) atan(z)`` in (-1, 1)^2 (the house's squash; the simulator multiplies by 1000 N/s).
PPO works on the latent: the rollout stores ``z`` and ``log N(z; mu, sigma)``, so the ratio
``pi_new(a) / pi_old(a)`` is exact (the squash's Jacobian cancels) and never inverts ``atan``
near +-1. Evaluation acts with ``(2/pi) atan(mu)``.

Learning (one rollout, in :meth:`PPOAgent.estimate_advantages` and the objective ``"ppo"``):

1. Values ``V(s_t)`` and ``V(s_{t+1})`` of the whole rollout, then TorchRL's ``GAE``
   (``gamma``, ``lambda``) per robot: a robot's trajectory is cut where its ``done`` is set;
   bootstrapping stops at ``terminated`` (goal, collision, and every later step of a finished
   robot) and continues at a truncation by the step limit, from the terminal observation.
   Advantages are standardised over the robot-steps that acted.
2. ``epochs x minibatches`` steps of TorchRL's ``ClipPPOLoss`` (clip ``clip_epsilon``) on
   random minibatches of ``(environment, step)`` rows (all robot slots of a row together, which
   the centralised critic needs), the critic regressed onto the GAE value targets. Every loss
   averages over the robot-steps that acted only: ``loss_mask_key = ("agents", "active")``, a
   ``torch.where`` mask inside TorchRL's reduction, no boolean indexing.
3. Entropy bonus ``entropy_coeff * H``, with ``H`` the latent Gaussian's entropy (closed form,
   state independent here; ``ClipPPOLoss``'s own entropy term checks finiteness on the host).
   One backward of the three losses' sum, then actor and critic each clipped and stepped by
   their own Adams (no shared parameters, so a loss weight between them would only rescale
   Adam's input).

Deviations and choices (PPO is not in the original, so there is no original value to keep):
scaled network inputs by default (``normalize_observations=True``: the raw thrusts up to
1000 N make PPO's larger learning rate unstable); the policy mean head starts at 1/100 of its
default initial weights, so the first rollouts act around zero change.

Export (the C++ planner's calling convention, ``model_type`` ``MAPPO`` / ``IPPO``): the actor's
``("mu", "log_sigma")`` of the latent Gaussian, as SAC's, so the planner's action rule is SAC's:
``(2/pi) atan(mu + exp(log_sigma) * noise)``, or ``(2/pi) atan(mu)`` without noise
(:meth:`PPOAgent.planner_action`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from tensordict.utils import NestedKey
from torch import nn
from torchrl.modules import ProbabilisticActor
from torchrl.modules.distributions import IndependentNormal
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from marinenav.agents.base import (
    Agent,
    AgentConfig,
    Objective,
    ParameterGroup,
    PlannerCall,
    check_options,
)
from marinenav.keys import (
    ACTION_KEY,
    ACTIVE_KEY,
    DONE_KEY,
    GROUP,
    POLICY_IN_KEYS,
    REWARD_KEY,
    TERMINATED_KEY,
)
from marinenav.policy.networks import (
    ACTION_DIM,
    FEATURES,
    HIDDEN,
    LocScale,
    ObservationEncoder,
    mlp,
    seeded,
    squash,
)
from marinenav.policy.wrapper import PolicyWrapper, marinenav_action_spec

LATENT_KEY: NestedKey = (GROUP, "latent_action")  # pre-squash Gaussian sample z
LOG_PROB_KEY: NestedKey = (GROUP, "action_log_prob")  # log N(z; mu, sigma) when acting
LOC_KEY: NestedKey = (GROUP, "loc")
SCALE_KEY: NestedKey = (GROUP, "scale")
VALUE_KEY: NestedKey = (GROUP, "state_value")
ADVANTAGE_KEY: NestedKey = (GROUP, "advantage")
VALUE_TARGET_KEY: NestedKey = (GROUP, "value_target")
# what one PPO minibatch row holds (an environment at one step, all robot slots)
UPDATE_KEYS: tuple[NestedKey, ...] = (
    *POLICY_IN_KEYS, ACTIVE_KEY, LATENT_KEY, LOG_PROB_KEY, ADVANTAGE_KEY, VALUE_TARGET_KEY,
)  # fmt: skip
_HALF_LOG_2PI_E = 0.5 * (1.0 + math.log(2.0 * math.pi))
POLICY_HEAD_INIT_SCALE = 0.01  # the mean head starts near zero: first actions ~ N(0, sigma)


@dataclass
class PPOConfig(AgentConfig):
    """MAPPO / IPPO hyperparameters (defaults from the MAPPO and CleanRL PPO literature for
    large batches; see ``conf/agent/mappo.yaml`` for one line on each)."""

    lr: float = 3e-4  # Adam learning rate (actor and critic)
    grad_clip_norm: float = 0.5  # gradient-norm clip, actor and critic separately
    normalize_observations: bool = True  # positions / 10 m, thrusts / 1000 N
    gae_lambda: float = 0.95  # GAE lambda
    clip_epsilon: float = 0.2  # PPO ratio clip [1 - eps, 1 + eps]
    rollout_steps: int = 64  # T: batched environment steps per rollout
    epochs: int = 5  # passes over each rollout
    minibatches: int = 4  # minibatches per pass ((E * T) / minibatches env-steps each)
    entropy_coeff: float = 1e-3  # weight of the policy entropy bonus
    loss_critic_type: str = "l2"  # critic regression: l2, l1 or smooth_l1
    initial_log_std: float = -0.5  # initial log sigma of the latent Gaussian

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(
            self, counts=("rollout_steps", "epochs", "minibatches"),
            unit_interval=("gae_lambda",), positive=("clip_epsilon",),
            non_negative=("entropy_coeff",), finite=("initial_log_std",),
        )  # fmt: skip
        if self.loss_critic_type not in ("l2", "l1", "smooth_l1"):
            raise ValueError(
                f"agent.loss_critic_type must be l2, l1 or smooth_l1, got {self.loss_critic_type!r}"
            )


# --- networks -----------------------------------------------------------------------------------


class GaussianPPOActor(nn.Module):
    """Shared actor: trunk, two hidden layers of 128, mean head; a learned, state-independent
    log standard deviation. 50,356 parameters."""

    def __init__(
        self, seed: int | None = None, normalize: bool = False, initial_log_std: float = -0.5
    ) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.body = mlp(FEATURES, HIDDEN, HIDDEN, final_activation=True)
            self.mean = nn.Linear(HIDDEN, ACTION_DIM)
        with torch.no_grad():
            self.mean.weight.mul_(POLICY_HEAD_INIT_SCALE)
            self.mean.bias.zero_()
        self.log_std = nn.Parameter(torch.full((ACTION_DIM,), float(initial_log_std)))

    def forward(self, self_state, objects, objects_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mu [..., 2], log_sigma [..., 2])`` of the latent (pre-squash) Gaussian."""
        mu = self.mean(self.body(self.encoder(self_state, objects, objects_mask)))
        return mu, self.log_std.expand_as(mu)

    def entropy(self) -> torch.Tensor:
        """Entropy of the latent Gaussian (0-dim, nats): ``sum_d (1/2 log(2 pi e) + log sigma_d)``,
        the same for every state."""
        return (self.log_std + _HALF_LOG_2PI_E).sum()


class IndependentCritic(nn.Module):
    """IPPO critic ``V(o_i)``: trunk, two hidden layers of 128, one value. 50,225 parameters."""

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.head = mlp(FEATURES, HIDDEN, HIDDEN, 1)

    def forward(self, self_state, objects, objects_mask) -> torch.Tensor:
        """Value ``[..., 1]`` of each robot's own observation."""
        return self.head(self.encoder(self_state, objects, objects_mask))


def pool_others(features: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and element-wise maximum, for each robot ``i``, of the non-negative ``features
    [..., R, H]`` of the other robots ``j != i`` with ``active [..., R]`` set; zeros where there
    are none. Both ``[..., R, H]``, in ``O(R H)``: the mean from the total minus the robot's own
    share, the maximum from the two largest (robot ``i``'s own value replaced by the runner-up
    where it is the largest)."""
    weight = active.unsqueeze(-1).to(features.dtype)  # [..., R, 1]
    present = features * weight  # absent robots: 0, the neutral value of features >= 0
    total = present.sum(-2, keepdim=True)
    count = (weight.sum(-2, keepdim=True) - weight).clamp(min=1.0)
    mean = (total - present) / count
    if features.shape[-2] < 2:
        return mean, torch.zeros_like(features)
    top, index = present.topk(2, dim=-2)  # [..., 2, H]
    slot = torch.arange(features.shape[-2], device=features.device).unsqueeze(-1)  # [R, 1]
    maximum = torch.where(index[..., :1, :] == slot, top[..., 1:, :], top[..., :1, :])
    return mean, maximum


class CentralisedCritic(nn.Module):
    """MAPPO critic: one value per robot slot from the observations of every robot of the
    environment. 82,993 parameters.

    Per robot ``j``: ``h_j = ReLU(Linear(256, 128)(trunk(o_j)))``. For robot ``i``: the mean and
    the element-wise maximum of ``h_j`` over the other robots ``j != i`` that act in this state
    (zeros when there are none), concatenated with ``h_i``, then ``Linear(384, 128)`` + ReLU and
    ``Linear(128, 1)``. Pooling keeps the critic independent of the slot order and of the number
    of robot slots, so one critic serves every curriculum stage.
    """

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.embed = nn.Linear(FEATURES, HIDDEN)
            self.head = mlp(3 * HIDDEN, HIDDEN, 1)

    def forward(self, self_state, objects, objects_mask, active) -> torch.Tensor:
        """Values ``[..., R, 1]`` from ``self_state [..., R, 7]``, ``objects [..., R, 5, 5]``,
        ``objects_mask [..., R, 5]`` and ``active [..., R]`` (bool: the robot acts in this
        state; absent and finished robots are ignored by the others' values)."""
        own = torch.relu(self.embed(self.encoder(self_state, objects, objects_mask)))  # [.., R, H]
        mean, maximum = pool_others(own, active)
        return self.head(torch.cat((own, mean, maximum), dim=-1))


# --- acting ---------------------------------------------------------------------------------------


class GaussianRolloutPolicy(PolicyWrapper):
    """The acting module of the PPO agents: a :class:`PolicyWrapper` over the actor's
    ``TensorDictModule`` that writes ``mu`` and ``sigma`` (the module the loss's
    ``ProbabilisticActor`` wraps, and what ``Agent.compile_policy`` compiles). It writes, for a
    batch of any shape (``[E]`` with the ``("agents", ...)`` group ``[E, R]``, or a flat
    ``[N]``):

    =================================  ================================================
    ``("agents", "latent_action")``    ``z = mu + sigma * noise`` exploring, ``mu`` else
    ``("agents", "action_log_prob")``  ``log N(z; mu, sigma)`` (summed over the 2 dims)
    ``("agents", "action")``           ``(2/pi) atan(z)`` in (-1, 1)^2
    ``("agents", "loc" / "scale")``    ``mu``, ``sigma``
    =================================  ================================================

    The noise comes from the wrapper's generator (``seed``, :meth:`set_seed`), drawn in flat
    batch order, as every marinenav policy's. There is no epsilon-greedy exploration: a uniform
    action would not be a sample of the policy whose log-probability PPO stores, so
    :meth:`set_epsilon` accepts only 0.
    """

    def __init__(self, loc_scale: TensorDictModule, seed: int = 0) -> None:
        super().__init__(
            loc_scale, marinenav_action_spec("continuous"), out_key=ACTION_KEY, seed=seed
        )
        self.out_keys = [LOC_KEY, SCALE_KEY, LATENT_KEY, LOG_PROB_KEY, ACTION_KEY]

    def set_epsilon(self, value: float | torch.Tensor) -> None:
        if isinstance(value, torch.Tensor) or value != 0:
            raise ValueError(
                "PPO policies explore by sampling their Gaussian; epsilon-greedy actions would "
                "break the stored log-probabilities (only set_epsilon(0) is accepted)"
            )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        explore = self.exploring()
        with torch.no_grad():
            self.selector(tensordict)
            loc, scale = tensordict.get(LOC_KEY), tensordict.get(SCALE_KEY)
            dist = IndependentNormal(loc, scale)  # the loss's distribution (ProbabilisticActor)
            latent = loc
            if explore:
                noise = torch.randn(loc.shape, generator=self.generator(loc.device),
                                    device=loc.device, dtype=loc.dtype)  # fmt: skip
                latent = loc + scale * noise
            log_prob = dist.log_prob(latent)
        tensordict.set(LATENT_KEY, latent)
        tensordict.set(LOG_PROB_KEY, log_prob)
        tensordict.set(ACTION_KEY, squash(latent))
        return tensordict


# --- the agents -----------------------------------------------------------------------------------


class PPOAgent(Agent):
    """Shared actor, one critic (set by the subclass), TorchRL's ``ClipPPOLoss`` and ``GAE``,
    one objective ``"ppo"`` stepping parameter groups ``"actor"`` and ``"critic"``. The learner
    calls :meth:`estimate_advantages` once per rollout and updates once per minibatch."""

    action_kind = "continuous"
    learning: ClassVar[str] = "rollout"
    epsilon_greedy: ClassVar[bool] = False
    config_class = PPOConfig
    export_outputs: ClassVar[tuple[str, ...]] = ("mu", "log_sigma")
    export_extra_inputs: ClassVar[tuple[str, ...]] = ()
    planner_options: ClassVar[tuple[str, ...]] = ("noise",)  # SAC's sampling rule
    update_keys: ClassVar[tuple[NestedKey, ...]] = UPDATE_KEYS  # what the learner's rows hold
    model_type: ClassVar[str]
    centralised: ClassVar[bool]
    config: PPOConfig

    def __init__(self, config: PPOConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        normalize = cfg.normalize_observations
        self.actor = GaussianPPOActor(cfg.seed, normalize, cfg.initial_log_std)
        if self.centralised:
            self.critic: nn.Module = CentralisedCritic(cfg.seed + 1, normalize)
            critic_in_keys = [*POLICY_IN_KEYS, ACTIVE_KEY]
        else:
            self.critic = IndependentCritic(cfg.seed + 1, normalize)
            critic_in_keys = list(POLICY_IN_KEYS)
        loc_scale = TensorDictModule(
            LocScale(self.actor), in_keys=list(POLICY_IN_KEYS), out_keys=[LOC_KEY, SCALE_KEY]
        )
        self.actor_module = ProbabilisticActor(
            loc_scale,
            in_keys={"loc": LOC_KEY, "scale": SCALE_KEY},
            out_keys=[LATENT_KEY],
            distribution_class=IndependentNormal,
            log_prob_key=LOG_PROB_KEY,
        )
        self.critic_module = TensorDictModule(
            self.critic, in_keys=critic_in_keys, out_keys=[VALUE_KEY]
        )
        self.loss_module = ClipPPOLoss(
            self.actor_module, self.critic_module, clip_epsilon=cfg.clip_epsilon,
            entropy_bonus=False, critic_coeff=1.0, loss_critic_type=cfg.loss_critic_type,
            normalize_advantage=False, log_explained_variance=False, functional=False,
        )  # fmt: skip
        keys = dict(
            advantage=ADVANTAGE_KEY, value_target=VALUE_TARGET_KEY, value=VALUE_KEY,
            reward=REWARD_KEY, done=DONE_KEY, terminated=TERMINATED_KEY,
        )  # fmt: skip
        self.loss_module.set_keys(action=LATENT_KEY, sample_log_prob=LOG_PROB_KEY, **keys)
        self.loss_module.loss_mask_key = ACTIVE_KEY  # masked mean over robot-steps that acted
        # vectorized=False: TorchRL's vectorised GAE splits trajectories with data-dependent
        # shapes (host reads); the plain recursion is T small batched steps
        self.advantage_module = GAE(
            gamma=cfg.gamma, lmbda=cfg.gae_lambda, value_network=None, vectorized=False
        )
        self.advantage_module.set_keys(**keys)
        self.policy = GaussianRolloutPolicy(loc_scale, seed=cfg.seed)

    # ------------------------------------------------------------------ learning
    def estimate_advantages(self, rollout: TensorDictBase) -> TensorDictBase:
        """Values, GAE advantages and value targets of a rollout ``[E, T]`` (time last) whose
        ``("agents", ...)`` group is ``[E, T, R]``, written into it in place: ``state_value``
        and ``("next", ..., "state_value")`` ``[E, T, R, 1]``, ``value_target`` and the
        ``advantage`` standardised over the robot-steps that acted (0 elsewhere). No gradient;
        no host read."""
        with torch.no_grad():
            self.critic_module(rollout)
            self.critic_module(rollout.get("next"))
            self.advantage_module(rollout)
            advantage = rollout.get(ADVANTAGE_KEY)
            acted = rollout.get(ACTIVE_KEY).unsqueeze(-1)  # [E, T, R, 1]
            weight = acted.to(advantage.dtype)
            count = weight.sum().clamp(min=1.0)
            mean = (advantage * weight).sum() / count
            std = (((advantage - mean) ** 2) * weight).sum().div(count).sqrt()
            rollout.set(ADVANTAGE_KEY, torch.where(acted, (advantage - mean) / (std + 1e-8), 0.0))
        return rollout

    def objectives(self) -> tuple[Objective, ...]:
        """One step on the sum of the three losses (:meth:`losses`): actor and critic, each
        clipped and stepped on its own."""
        groups = (ParameterGroup("actor", self.actor.parameters()),
                  ParameterGroup("critic", self.critic.parameters()))  # fmt: skip
        minimise = ("loss_objective", "loss_critic", "loss_entropy")
        return (Objective("ppo", self.losses, minimise, groups),)

    def check_batch(self, batch: TensorDictBase) -> None:
        """A minibatch holds the keys of :data:`UPDATE_KEYS`."""
        missing = [key for key in UPDATE_KEYS if key not in batch.keys(include_nested=True)]
        if missing:
            raise ValueError(f"PPO minibatch is missing {missing[0]!r} (see UPDATE_KEYS)")

    def losses(self, batch: TensorDictBase) -> TensorDict:
        """The three 0-dim losses of a minibatch (with gradients): ``loss_objective`` (clipped
        surrogate), ``loss_critic`` and ``loss_entropy`` (``-entropy_coeff * H``); the first two
        are means over the robot-steps that acted.

        Args:
            batch: rows ``[B]`` (an environment at one step) with the ``("agents", ...)`` group
                ``[B, R]``: the keys of :data:`UPDATE_KEYS` (:meth:`check_batch`).
        """
        out = self.loss_module(batch)
        loss_entropy = -self.config.entropy_coeff * self.actor.entropy()
        return TensorDict(
            {"loss_objective": out.get("loss_objective"), "loss_critic": out.get("loss_critic"),
             "loss_entropy": loss_entropy},
            batch_size=[],
        )  # fmt: skip

    # ------------------------------------------------------------------ export
    def export_network(self) -> PlannerCall:
        """The actor in the C++ planner's calling convention: ``(mu (N, 2), log_sigma (N, 2))`` of
        the latent Gaussian (no sampling, no squash)."""
        return PlannerCall(self.actor)

    @classmethod
    def planner_action(
        cls, outputs: Any, *, noise: torch.Tensor | None = None, **options: Any
    ) -> torch.Tensor:
        """The planner's ``(2/pi) atan(mu + exp(log_sigma) * noise)`` ``[..., 2]`` from
        ``(mu [..., 2], log_sigma [..., 2])`` (SAC's rule); without ``noise`` (standard-normal
        draws ``[..., 2]``), ``(2/pi) atan(mu)``, the policy's evaluation action."""
        mu, log_sigma = (torch.as_tensor(x) for x in outputs)
        latent = mu if noise is None else mu + log_sigma.exp() * torch.as_tensor(noise).to(mu)
        return squash(latent)

    def export_metadata(self) -> dict[str, Any]:
        """Extra entries of the export record, for people (the action rule takes none)."""
        return {
            "action_rule": "(2/pi) atan(mu + exp(log_sigma) * noise); noise = 0 to evaluate",
            "critic": "centralised" if self.centralised else "independent",
        }


class MAPPOAgent(PPOAgent):
    """MAPPO: shared Gaussian actor, centralised critic over the environment's robots."""

    name = "mappo"
    model_type = "MAPPO"
    centralised = True


class IPPOAgent(PPOAgent):
    """IPPO: shared Gaussian actor, independent critics on each robot's own observation."""

    name = "ippo"
    model_type = "IPPO"
    centralised = False
