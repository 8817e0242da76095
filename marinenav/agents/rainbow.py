"""Rainbow: C51 distributional Q-learning with dueling streams, factorised-Gaussian
noisy layers, double-Q targets, n-step returns and prioritized replay.

Network (:class:`RainbowNetwork`, 540,428 trainable parameters counting noisy ``mu`` and
``sigma``): the shared trunk (plain ``Linear`` encoders) -> 256 features; a value stream
``Noisy(256, 128)`` + ReLU, ``Noisy(128, 128)`` + ReLU, ``Noisy(128, atoms)`` and an advantage
stream ``Noisy(256, 128)`` + ReLU, ``Noisy(128, 128)`` + ReLU, ``Noisy(128, 25 * atoms)``;
``q = v + a - mean_a(a)`` per atom, log-softmax over the atoms: ``[..., 25, atoms]``.

Noisy layers are :class:`~marinenav.policy.noisy.NoisyLinear`: TorchRL's ``NoisyLinear``
(initialised with ``mu ~ U(+-1/sqrt(in))``, ``sigma_w = std/sqrt(in)``, ``sigma_b = std/sqrt(out)``,
factorised noise ``f(x) = sign(x) sqrt|x|``), subclassed so that the noise is drawn from a given
``torch.Generator`` and switched on or off per call (TorchRL's switches on the exploration type).

Loss (:class:`RainbowLoss`, a TorchRL ``LossModule``; TorchRL's ``DistributionalDQNLoss`` reads
values back to the host, moves tensors to the CPU and has no double-Q choice, so it is not used):

1. ``a* = argmax_a sum_z z p_online(s', a)`` (double Q; ``s'`` is the state ``n`` steps later);
2. ``p' = p_target(s', a*)`` with freshly sampled target noise;
3. ``Tz = clamp(R + (1 - terminated) * discount * z, v_min, v_max)`` with ``discount`` the
   batch's ``"discount"`` ``[B, 1]`` (``gamma ** m`` of an ``m``-step return), default
   ``gamma ** n_step``; truncated transitions bootstrap, terminated ones do not;
4. projection onto the support, ``m_i = sum_j p'_j max(0, 1 - |b_j - i|)`` with
   ``b = (Tz - v_min) / dz``: the same numbers as the original's floor / ceil projection with its
   ``l = u`` fix (mass of an atom landing on a support point goes to that point), written as one
   dense, deterministic kernel (no scatter, no boolean indexing);
5. ``loss_i = -sum_z m log p_online(s, a)``; the optimised loss is ``mean_i(w_i loss_i)`` with
   ``w = "_weight"`` ``[B]`` (importance weights; 1 when absent);
6. new priorities ``loss_i ** priority_exponent`` (detached;
   :meth:`~marinenav.agents.base.PrioritizedConfig.priorities`), reported by the agent under
   ``"priority"`` ``[B]``.

One objective, ``"q"`` (:meth:`RainbowAgent.q_loss`: fresh noise, then the loss; reported as
``loss_q`` with ``priority``): gradient norm clipped to 0.5, Adam 1e-4; the target network is a
hard copy when the trainer copies (TorchRL's ``HardUpdate``; parameters only, not the noise
buffers). Acting (:class:`DistributionalSelector`):
``argmax_a sum_z z p(s, a)``; exploring, the noise is resampled from the policy's generator at
every call (one noise sample for the whole batch of robots) and the ``PolicyWrapper`` adds
epsilon-greedy on top; evaluation (``explore=False``) uses the mean weights. Below
``cvar_alpha = 1`` the agent acts on ``CVaR_alpha`` of each action's return distribution, the
mean of its lowest ``alpha`` of probability mass (:func:`lower_tail`; ``collect_cvar_alpha``
gives collection its own level, as IQN's), and the exported planner's probabilities are that
tail's, renormalised, so that the planner's rule (the argmax of ``sum_z z p``) acts on it.

Hyperparameters (:class:`RainbowConfig`): 51 atoms, support ``[-75, 50]``, noisy
``std_init = 0.05``, ``n = 3``, gamma 0.99, priority exponent 0.5, importance exponent
``beta = 0.4`` (fixed; used by the replay sampler), Adam 1e-4, clip 0.5, seed 100.

Replay (``replay_options()``, from the config's
:class:`~marinenav.agents.base.PrioritizedConfig`: prioritized, ``beta = importance_beta``,
``n_step``; ``prioritized=False`` draws uniformly, not Rainbow): ``"priority"`` already
carries the exponent (``loss ** 0.5``, the original's stored mass), so the trainer's replay
learner builds the prioritized sampler with ``alpha = 1``
(``DevicePrioritizedSampler(capacity, alpha=1.0, beta=config.importance_beta)``,
``marinenav.training.prioritized``); ``alpha=0.5`` there would sample by ``loss ** 0.25``.

Two ablations, off by default (not Rainbow): ``prioritized=False`` draws the replay uniformly;
``noisy=False`` uses the noisy streams' mean weights on every call (no parameter noise: the
policy's epsilon-greedy is the only exploration) and draws no noise (the runs of docs/results.md,
trained at 14f1510, still drew it unused; the same command now draws other random numbers after
the first exploring action).

Deviations from the original (standard Rainbow instead of its quirks; docs/training.md,
"Deviations from the original trainer and agents"):

* the support is ``[-75, 50]`` by default, which holds every discounted return-to-go that
  ``benchmarks/rainbow_support.py`` finds on the paper's 60 episodes (a return from 40 m out is
  35-45, one heading away -15 to -70); the original's ``[-1, 1]`` clamps almost every return
  (docs/results.md, "Rainbow's value support"). ``v_min`` / ``v_max`` are configurable,
  ``RainbowConfig(v_min=-1, v_max=1)`` is the original;
* the online network's noise is resampled at every update (the original sampled it once at
  construction and never again); the target noise is resampled at every update as in
  the original;
* n-step returns are per robot (``marinenav.training.nstep``), not the original's interleaving
  of all robots in one sequential memory; truncated returns bootstrap (the original stores
  timeouts as terminal);
* exploring actions resample the noise per call from the policy's generator, so acting is
  reproducible from the policy seed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn
from torchrl.objectives import LossModule

from marinenav.agents.base import (
    Agent,
    Objective,
    ParameterGroup,
    PlannerCall,
    PrioritizedConfig,
    check_options,
    planner_output,
)
from marinenav.keys import ACTION, OBSERVATION_KEYS, REWARD, TERMINATED
from marinenav.policy.networks import FEATURES, HIDDEN, ObservationEncoder, seeded
from marinenav.policy.noisy import (
    NOISY_STD,
    NoisyLinear,
    NoisyStream,
    reset_noise,
    reset_online_and_target_noise,
)
from marinenav.policy.selectors import ActionSelector
from marinenav.policy.wrapper import PolicyWrapper
from marinenav.sim.constants import NUM_DISCRETE_ACTIONS


@dataclass
class RainbowConfig(PrioritizedConfig):
    """Rainbow's hyperparameters on top of the shared ones; its replay is prioritized by default
    (``prioritized=False``: uniform draws, unit importance weights; not Rainbow)."""

    atoms: int = 51  # atoms of the categorical return distribution
    v_min: float = -75.0  # support bounds (the original: -1, 1; see the module docstring)
    v_max: float = 50.0
    noisy_std: float = NOISY_STD  # std_init of the factorised-Gaussian noisy layers
    noisy: bool = True  # False: the streams' mean weights alone (epsilon-greedy exploration only)
    n_step: int = 3  # n of the n-step returns (default discount gamma ** n_step)
    prioritized: bool = True  # proportional prioritized replay (PrioritizedConfig's options)
    cvar_alpha: float = 1.0  # act on CVaR_alpha of the return distribution; 1: the mean
    # the level of the greedy action while collecting in training; null: cvar_alpha
    collect_cvar_alpha: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(
            self, finite=("v_min", "v_max"), non_negative=("noisy_std",),
            positive=("cvar_alpha",), unit_interval=("cvar_alpha",),
            optional_levels=("collect_cvar_alpha",),
        )  # fmt: skip
        if self.atoms < 2:
            raise ValueError(f"agent.atoms must be at least 2, got {self.atoms}")
        if not self.v_max > self.v_min:
            raise ValueError(
                f"agent.v_max must be above agent.v_min, got v_min={self.v_min}, v_max={self.v_max}"
            )


class RainbowNetwork(nn.Module):
    """Dueling C51 network with noisy streams: log-probabilities ``[..., 25, atoms]``.

    Args:
        seed: initialisation seed (parameters and the first noise sample).
        normalize: scale the observation inputs (see ``ObservationEncoder``).
        atoms, v_min, v_max: the support ``z = linspace(v_min, v_max, atoms)`` (a buffer).
        noisy_std: ``std_init`` of the noisy layers.
        noisy: ``False`` uses the streams' mean weights on every call, whatever ``noise`` asks
            (an ablation, not Rainbow: the ``sigma`` parameters exist, get no gradient and
            stay at their initial values; exploration is the policy's epsilon-greedy alone).
    """

    def __init__(
        self,
        seed: int | None = None,
        normalize: bool = False,
        atoms: int = 51,
        v_min: float = -75.0,
        v_max: float = 50.0,
        noisy_std: float = NOISY_STD,
        noisy: bool = True,
    ) -> None:
        super().__init__()
        if atoms < 2 or not v_max > v_min:
            raise ValueError("need atoms >= 2 and v_max > v_min")
        self.atoms = atoms
        self.noisy = bool(noisy)
        self.v_min, self.v_max = float(v_min), float(v_max)
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.value = NoisyStream(FEATURES, HIDDEN, HIDDEN, atoms, std_init=noisy_std)
            self.advantage = NoisyStream(
                FEATURES, HIDDEN, HIDDEN, NUM_DISCRETE_ACTIONS * atoms, std_init=noisy_std
            )
        self.register_buffer("support", torch.linspace(v_min, v_max, atoms))

    def forward(
        self,
        self_state: torch.Tensor,
        objects: torch.Tensor,
        objects_mask: torch.Tensor,
        noise: bool | None = None,
    ) -> torch.Tensor:
        """Log-probabilities ``[..., 25, atoms]`` of the return distribution of every action
        (``noise``: see :class:`NoisyLinear`; never with ``noisy=False``)."""
        if not self.noisy:
            noise = False
        features = self.encoder(self_state, objects, objects_mask)
        value = self.value(features, noise).unsqueeze(-2)  # [..., 1, atoms]
        advantage = self.advantage(features, noise)
        advantage = advantage.unflatten(-1, (NUM_DISCRETE_ACTIONS, self.atoms))
        q = value + advantage - advantage.mean(dim=-2, keepdim=True)
        return torch.log_softmax(q, dim=-1)

    def expected_value(self, log_probs: torch.Tensor) -> torch.Tensor:
        """``sum_z z p(s, a)``: ``[..., 25, atoms]`` log-probabilities -> ``[..., 25]``."""
        return (log_probs.exp() * self.support.to(log_probs.dtype)).sum(dim=-1)

    @torch.no_grad()
    def reset_noise(self, generator: torch.Generator | None = None) -> None:
        """Resample the noise of every noisy layer (value stream first, in layer order); with
        ``noisy=False`` nothing, and no random draw (no call uses the noise)."""
        if self.noisy:
            reset_noise(self, generator)


def lower_tail(probs: torch.Tensor, level: torch.Tensor | float) -> torch.Tensor:
    """The lowest ``level`` of each categorical distribution's probability mass, renormalised:
    ``probs`` ``[..., atoms]`` over a support in increasing order, ``level`` in (0, 1] (a float
    or a tensor broadcasting against ``probs[..., 0]``) -> ``[..., atoms]``, each row summing to
    1, whose mean on the support is ``CVaR_level`` (the mean of the worst ``level`` of
    outcomes). An atom straddling the level keeps the part below it. Exact (``probs`` itself)
    where ``level`` is 1; no host read-back."""
    if isinstance(level, torch.Tensor):
        level = level.to(probs.dtype).unsqueeze(-1) if level.dim() else level.to(probs.dtype)
    else:
        level = torch.tensor(float(level), dtype=probs.dtype, device=probs.device)
    below = probs.cumsum(dim=-1)  # mass at or below each atom
    tail = below.clamp(max=level) - (below - probs).clamp(max=level)
    return torch.where(level >= 1.0, probs, tail / level)


def project_distribution(
    probs: torch.Tensor,
    target_support: torch.Tensor,
    v_min: float,
    v_max: float,
    atom_index: torch.Tensor | None = None,
) -> torch.Tensor:
    """Categorical projection of C51: probabilities ``probs [B, A]`` sitting at the (unclamped)
    points ``target_support [B, A]`` onto the fixed support ``linspace(v_min, v_max, A)``.

    Returns ``m [B, A]`` with ``m_i = sum_j p_j max(0, 1 - |b_j - i|)``,
    ``b = (clamp(Tz, v_min, v_max) - v_min) / dz``: a point between two atoms is split linearly,
    a point on an atom (including both ends) gives that atom all its mass. ``atom_index``:
    ``arange(A)`` (pass one made once to avoid rebuilding it).
    """
    atoms = probs.shape[-1]
    dz = (v_max - v_min) / (atoms - 1)
    b = (target_support.clamp(v_min, v_max) - v_min) / dz  # [B, A] in [0, A - 1]
    if atom_index is None:
        atom_index = torch.arange(atoms, device=probs.device)
    grid = atom_index.to(b.dtype)
    kernel = (1.0 - (b.unsqueeze(-1) - grid).abs()).clamp(min=0.0)  # [B, A_src, A_dst]
    return (probs.unsqueeze(-1) * kernel).sum(dim=-2)


class RainbowLoss(LossModule):
    """Double-Q C51 cross-entropy with importance weights (see the module docstring).

    ``forward(batch)`` returns a TensorDict (batch size ``[]``) with ``"loss"`` (0-dim, to be
    minimised) and ``"loss_per_sample"`` ``[B]`` (detached, unweighted: what a prioritized
    replay's priorities are made of). It uses the networks' current noise: call
    :meth:`resample_noise` first (as :meth:`RainbowAgent.q_loss` does).
    """

    value_network: RainbowNetwork
    value_network_params: TensorDictParams
    target_value_network_params: TensorDictParams

    def __init__(self, network: RainbowNetwork, *, gamma: float, n_step: int) -> None:
        super().__init__()
        self.convert_to_functional(network, "value_network", create_target_params=True)
        self.default_discount = float(gamma) ** int(n_step)
        self.v_min, self.v_max = network.v_min, network.v_max
        self.register_buffer("support", network.support.detach().clone())
        self.register_buffer("atom_index", torch.arange(network.atoms))

    @torch.no_grad()
    def resample_noise(self, generator: torch.Generator | None = None) -> None:
        """Fresh noise for the online network, then for the target network (none with
        ``noisy=False``)."""
        reset_online_and_target_noise(
            self.value_network, self.target_value_network_params, generator
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        net = self.value_network
        obs = [tensordict.get(key) for key in OBSERVATION_KEYS]
        nxt = tensordict.get("next")
        next_obs = [nxt.get(key) for key in OBSERVATION_KEYS]
        action = tensordict.get(ACTION)  # [B] int64

        log_probs = net(*obs, noise=True)  # online, with gradient: [B, 25, A]
        index = action.view(-1, 1, 1).expand(-1, 1, log_probs.shape[-1])
        log_p_taken = log_probs.gather(-2, index).squeeze(-2)  # [B, A]

        with torch.no_grad():
            best = net.expected_value(net(*next_obs, noise=True)).argmax(dim=-1)  # double Q
            with self.target_value_network_params.to_module(net):
                next_log_probs = net(*next_obs, noise=True)
            index = best.view(-1, 1, 1).expand(-1, 1, next_log_probs.shape[-1])
            next_probs = next_log_probs.gather(-2, index).squeeze(-2).exp()  # [B, A]
            reward = nxt.get(REWARD).reshape(-1, 1).to(next_probs.dtype)
            nonterminal = 1.0 - nxt.get(TERMINATED).reshape(-1, 1).to(next_probs.dtype)
            discount = tensordict.get("discount", None)
            if discount is None:
                discount = self.default_discount
            else:
                discount = discount.reshape(-1, 1).to(next_probs.dtype)
            support = self.support.to(next_probs.dtype)
            target_support = reward + nonterminal * discount * support  # [B, A]
            target = project_distribution(
                next_probs, target_support, self.v_min, self.v_max, self.atom_index
            )

        per_sample = -(target * log_p_taken).sum(dim=-1)  # [B]
        weight = tensordict.get("_weight", None)
        if weight is None:
            loss = per_sample.mean()
        else:
            loss = (weight.reshape(-1).to(per_sample.dtype) * per_sample).mean()
        return TensorDict({"loss": loss, "loss_per_sample": per_sample.detach()}, batch_size=[])


class DistributionalSelector(ActionSelector):
    """``argmax_a sum_z z p(s, a)`` of a :class:`RainbowNetwork`, at ``cvar`` ``[N]`` below 1 on
    the distribution's lower tail (:func:`lower_tail`: ``CVaR_cvar`` instead of the mean).

    Exploring (``explore=True``), the network's noise is resampled from ``generator`` at every
    call (one noise sample shared by the whole batch) and the noisy weights are used; otherwise
    the mean weights (no noise), deterministic. The online network's noise buffers are shared
    with the loss, which resamples them before every update.
    """

    action_kind = "discrete"
    acts_on_cvar = True

    def __init__(self, network: RainbowNetwork) -> None:
        super().__init__()
        self.network = network

    def forward(self, self_state, objects, objects_mask, *, explore, cvar, generator):
        if explore:
            self.network.reset_noise(generator)
        log_probs = self.network(self_state, objects, objects_mask, noise=bool(explore))
        probs = lower_tail(log_probs.exp(), cvar.unsqueeze(-1))  # [N, 25, atoms]
        return (probs * self.network.support.to(probs.dtype)).sum(dim=-1).argmax(dim=-1)


class MeanProbabilities(nn.Module):
    """Atom probabilities ``[..., 25, atoms]`` of a :class:`RainbowNetwork` with the noisy
    layers' mean weights (what the exported planner computes); below ``cvar_alpha = 1`` those
    of the lower tail (:func:`lower_tail`), so that the planner's rule acts on CVaR."""

    def __init__(self, network: RainbowNetwork, cvar_alpha: float = 1.0) -> None:
        super().__init__()
        self.network = network
        self.register_buffer("cvar_alpha", torch.tensor(float(cvar_alpha)))

    def forward(self, self_state, objects, objects_mask) -> torch.Tensor:
        probs = self.network(self_state, objects, objects_mask, noise=False).exp()
        return lower_tail(probs, self.cvar_alpha.to(probs.dtype))


@functools.cache
def _planner_support(v_min: float, v_max: float, atoms: int, dtype: torch.dtype) -> torch.Tensor:
    """``linspace(v_min, v_max, atoms)`` on the CPU, made once per support (never written)."""
    return torch.linspace(v_min, v_max, atoms, dtype=dtype)


class RainbowAgent(Agent):
    """Rainbow: one objective, ``"q"`` (:meth:`q_loss`: resample the online and target noise,
    the C51 loss), reporting ``{"loss_q": 0-dim, "priority": [B]}`` (``priority`` only with
    ``prioritized``, the default; the learner feeds it to the prioritized replay at the batch's
    ``"index"``)."""

    name = "rainbow"
    action_kind = "discrete"
    config_class = RainbowConfig
    model_type = "Rainbow"  # the original ships no Rainbow file: its trainer's spelling
    export_outputs = ("probabilities",)
    # the support, recorded by export_metadata; and a caller's CVaR level (PlannerPolicy)
    planner_options = ("v_min", "v_max", "cvar")
    cudagraph_update = False  # the update noise comes from noise_generator, not the default one

    def __init__(self, config: RainbowConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.network = RainbowNetwork(
            seed=cfg.seed, normalize=cfg.normalize_observations, atoms=cfg.atoms,
            v_min=cfg.v_min, v_max=cfg.v_max, noisy_std=cfg.noisy_std, noisy=cfg.noisy,
        )  # fmt: skip
        self.loss_module = RainbowLoss(self.network, gamma=cfg.gamma, n_step=cfg.n_step)
        self.policy = PolicyWrapper(DistributionalSelector(self.network), seed=cfg.seed)
        # the level the agent acts at, and the one its greedy action uses while collecting
        self.policy.set_cvar(cfg.cvar_alpha, exploring=cfg.collect_cvar_alpha)
        self._noise_seed = cfg.seed + 1  # the update noise stream, apart from the policy's
        self._generators: dict[torch.device, torch.Generator] = {}

    def noise_generator(self, device: torch.device) -> torch.Generator:
        """The random stream of the update noise on ``device`` (made once per device)."""
        if device not in self._generators:
            generator = torch.Generator(device=device).manual_seed(self._noise_seed)
            self._generators[device] = generator
        return self._generators[device]

    def training_state_dict(self) -> dict:
        """Adds the update-noise streams to the base checkpoint state (exact resume)."""
        state = super().training_state_dict()
        state["noise_generators"] = {str(d): g.get_state() for d, g in self._generators.items()}
        return state

    def load_training_state_dict(self, state: dict) -> None:
        super().load_training_state_dict(state)
        for device, generator_state in state.get("noise_generators", {}).items():
            self.noise_generator(torch.device(device)).set_state(generator_state)

    def objectives(self) -> tuple[Objective, ...]:
        """One step of the network on ``loss_q``."""
        network = ParameterGroup("q", self.network.parameters())
        return (Objective("q", self.q_loss, "loss_q", network),)

    def q_loss(self, batch: TensorDictBase) -> TensorDict:
        """Fresh online and target noise (:meth:`noise_generator`), then ``loss_q``
        (:class:`RainbowLoss`) and, when ``prioritized``, the new ``priority`` ``[B]``
        (:meth:`~marinenav.agents.base.PrioritizedConfig.priorities` of the per-transition
        loss)."""
        self.loss_module.resample_noise(self.noise_generator(self.network.support.device))
        losses = self.loss_module(batch)
        if not self.config.prioritized:
            return TensorDict({"loss_q": losses["loss"]})
        priority = self.config.priorities(losses["loss_per_sample"])
        return TensorDict({"loss_q": losses["loss"], "priority": priority})

    def export_network(self) -> PlannerCall:
        """Atom probabilities ``(N, 25, atoms)`` with the mean weights (no noise), of the lower
        tail at ``agent.cvar_alpha`` below 1."""
        return PlannerCall(MeanProbabilities(self.network, self.config.cvar_alpha))

    @classmethod
    def export_output_shapes(cls) -> tuple[tuple[int | None, ...], ...]:
        """Atom probabilities ``(25, atoms)`` (``atoms`` in the file's record)."""
        return ((NUM_DISCRETE_ACTIONS, None),)

    def export_metadata(self) -> dict[str, Any]:
        """The support the planner needs: ``atoms``, ``v_min``, ``v_max``; and, for the record,
        the CVaR level the file's probabilities already hold (``cvar_alpha``)."""
        network = self.network
        return {"atoms": int(network.atoms), "v_min": network.v_min, "v_max": network.v_max,
                "cvar_alpha": self.config.cvar_alpha}  # fmt: skip

    @classmethod
    def planner_action(
        cls,
        outputs: Any,
        *,
        v_min: float = RainbowConfig.v_min,
        v_max: float = RainbowConfig.v_max,
        cvar: float = 1.0,
        **options: Any,
    ) -> torch.Tensor:
        """Argmax of ``sum_z z p`` on the support ``linspace(v_min, v_max, atoms)`` (default
        this repo's [-75, 50]; the original planner's is [-1, 1]); ``cvar`` below 1 on the
        lower tail of the file's probabilities (:func:`lower_tail`; a file exported at
        ``agent.cvar_alpha`` holds a tail already, so the levels multiply)."""
        probs = planner_output(outputs)
        if cvar != 1.0:
            probs = lower_tail(probs, cvar)
        support = _planner_support(float(v_min), float(v_max), probs.shape[-1], probs.dtype)
        return (probs * support.to(probs.device)).sum(dim=-1).argmax(dim=-1)


__all__ = [
    "DistributionalSelector",
    "MeanProbabilities",
    "NoisyLinear",
    "RainbowAgent",
    "RainbowConfig",
    "RainbowLoss",
    "RainbowNetwork",
    "lower_tail",
    "project_distribution",
]
