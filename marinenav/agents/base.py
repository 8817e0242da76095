"""What every agent is, and what it declares to the trainer and the exporter.

An agent holds its networks, a TorchRL ``LossModule`` (online and target parameters), its
*objectives* and a ``PolicyWrapper`` for acting. It owns no optimiser: the trainer's
:class:`~marinenav.training.updater.Updater` builds one fused Adam per parameter group the
objectives name and runs every update (backward, gradient-norm clipping, the optimiser steps,
learning-rate schedule, hard or Polyak target updates, ``torch.compile`` / CUDA graphs), as
BenchMARL's ``Experiment`` runs its algorithms' losses. Its class says what the rest of the
library needs to know about it (capabilities on the class, as in BenchMARL's algorithm classes;
the registry in :mod:`marinenav.agents` only maps names to classes):

========================  ==========================================================================
attribute / method        what it tells
========================  ==========================================================================
``name``                  registry name (``agent=<name>``)
``action_kind``           ``"discrete"`` (25 indices) or ``"continuous"`` (``[2]`` in [-1, 1])
``config_class``          the hyperparameter dataclass (Hydra schema of ``conf/agent/<name>.yaml``)
``learning``              which learner the trainer builds (``training.learners.LEARNERS``)
``epsilon_greedy``        whether the trainer drives ``policy.set_epsilon`` with its linear schedule
``replay_options()``      the replay the ``"replay"`` learner builds (:class:`ReplayOptions`)
``objectives()``          the gradient steps of one update, in order (:class:`Objective`): each a
                          loss function of the batch, the losses it minimises and the
                          :class:`ParameterGroup` s it steps
``loss_module``           the TorchRL ``LossModule``; its ``target_<name>_params`` are the target
                          networks, paired with ``<name>_params`` (:meth:`Agent.target_pairs`)
``check_batch(batch)``    shape and key checks of a training batch (no values read)
``rng_state()``           the acting policy's random streams (checkpoints), ``load_rng_state``
``model_type``            the original's file-name spelling (``traced_<model_type>_model.pt``)
``export_outputs``        names of the exported module's outputs
``export_output_shapes``  their shapes after the batch dimension (the planner loader checks them)
``export_extra_inputs``   exported inputs after the state tuple (IQN: ``("taus",)``)
``export_network()``      the acting network in the C++ planner's calling convention
``planner_action()``      the C++ planner's action rule on the exported outputs (a classmethod)
``planner_options``       keyword options ``planner_action`` takes (default none; SAC: ``noise``)
``export_metadata()``     extra entries of the exported file's record (Rainbow: its support)
``cudagraph_update``      whether an update can be captured as a CUDA graph (see below)
========================  ==========================================================================

Training batches are flat TensorDicts ``[B]`` of robot transitions (one robot, one step):

==============================  ===============  ==========================================
key                             shape            meaning
==============================  ===============  ==========================================
``"self_state"``                ``[B, 7]``       observation before the step (robot frame)
``"objects"``                   ``[B, 5, 5]``
``"objects_mask"``              ``[B, 5]``       bool
``"action"``                    ``[B]`` / ``[B, 2]``  int64 index or the executed continuous action
``("next", "self_state")`` ...  as above         observation after the step
``("next", "reward")``          ``[B, 1]``       reward (n-step replay: the n-step return)
``("next", "terminated")``      ``[B, 1]``       bool: no bootstrapping from ``next``
``("next", "done")``            ``[B, 1]``       bool: terminated or truncated
``"discount"``                  ``[B, 1]``       optional: ``gamma ** n`` of an n-step return
``"_weight"``                   ``[B]``          optional: importance weights (prioritized replay)
==============================  ===============  ==========================================

Timeouts are truncations: targets bootstrap from ``next`` unless ``terminated`` (the original
stores timeouts as terminal; we implement the standard rule:
docs/training.md, "Deviations from the original trainer and agents").

One update (the original's ``train()``) takes the objectives in order; an objective's loss
function sees the parameters its predecessors just stepped (actor-critic agents: the critic,
then the actor against the updated critic). Each returns its losses as a TensorDict of 0-dim
tensors (and any other value to report, never read back to the host); an agent with a
prioritized replay adds ``"priority"`` ``[B]``, which the learner hands to the sampler.

A CUDA graph replays fixed kernels on fixed buffers, so an agent whose update draws random
numbers from a generator of its own (CudaGraphModule registers only the default CUDA generator
with the graph), or which has an objective stepped only on some updates (TD3's delayed actor: a
branch on a host counter), sets ``cudagraph_update = False`` and is refused at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.objectives import LossModule

from marinenav.keys import ACTION, OBSERVATION_KEYS
from marinenav.policy.networks import ACTION_DIM, QCritic
from marinenav.policy.wrapper import PolicyWrapper
from marinenav.sim.constants import NUM_DISCRETE_ACTIONS


@dataclass
class AgentConfig:
    """Hyperparameters shared by all agents: the original's values (README.md, "The agents")."""

    gamma: float = 0.99  # discount
    lr: float = 1e-4  # Adam learning rate, one optimiser per parameter group (network)
    grad_clip_norm: float = 0.5  # global L2 norm per parameter group, before each step
    seed: int = 100  # network initialisation seed (the original: run seed + 100)
    normalize_observations: bool = False  # scale positions / 10 m, thrusts / 1000 N (not original)

    def __post_init__(self) -> None:
        check_options(self, unit_interval=("gamma",), positive=("lr", "grad_clip_norm"))


def check_options(
    config: Any,
    *,
    unit_interval: tuple[str, ...] = (),
    positive: tuple[str, ...] = (),
    non_negative: tuple[str, ...] = (),
    finite: tuple[str, ...] = (),
    counts: tuple[str, ...] = (),
    optional_levels: tuple[str, ...] = (),
) -> None:
    """Range checks of an agent config's fields, run when the config is built (start-up, never
    in the hot path): ``unit_interval`` in [0, 1]; ``positive`` (> 0), ``non_negative`` (>= 0)
    and ``finite`` numbers finite; ``counts`` integers >= 1; ``optional_levels`` (a CVaR level
    that may be unset) in (0, 1] or ``None``. NaN fails every check. Raises
    ``ValueError("agent.<key> must be ..., got <value>")``, the key as the run config spells
    it."""

    def refuse(key: str, rule: str) -> None:
        raise ValueError(f"agent.{key} {rule}, got {getattr(config, key)}")

    for key in unit_interval:
        if not 0.0 <= getattr(config, key) <= 1.0:
            refuse(key, "must be in [0, 1]")
    for key in (*positive, *non_negative, *finite):
        if not math.isfinite(getattr(config, key)):
            refuse(key, "must be finite")
    for key in positive:
        if getattr(config, key) <= 0:
            refuse(key, "must be positive")
    for key in non_negative:
        if getattr(config, key) < 0:
            refuse(key, "must not be negative")
    for key in counts:
        if not getattr(config, key) >= 1:
            refuse(key, "must be at least 1")
    for key in optional_levels:
        level = getattr(config, key)
        if level is not None and not 0.0 < level <= 1.0:
            refuse(key, "must be in (0, 1] or null")


def cudagraph_refusal(agent: type[Agent], device: torch.device | str | None) -> str | None:
    """Why ``cudagraphs=true`` cannot run ``agent``'s update on ``device`` (``None``: it can).
    The one statement of the preconditions, used by the run's start-up validation (before
    anything is built) and by ``Updater.compile`` (for direct users): a CUDA device, and an
    update that one graph can capture (``cudagraph_update``)."""
    if device is None or torch.device(device).type != "cuda":
        where = "no CUDA device is available" if device is None else f"device={device}"
        return (
            f"cudagraphs=true needs a CUDA device, but {where}; run with cudagraphs=false "
            "(compile=true is the CPU accelerator)"
        )
    if not agent.cudagraph_update:
        return (
            f"cudagraphs=true: agent {agent.name}'s update cannot be one CUDA graph (it draws "
            "from a random generator of its own, or steps an objective on some updates only); "
            "use compile=true alone"
        )
    return None


def check_n_step(n_step: int) -> None:
    """An n-step return needs at least one step."""
    if n_step < 1:
        raise ValueError(f"n_step must be at least 1, got {n_step}")


@dataclass
class NStepConfig(AgentConfig):
    """:class:`AgentConfig` plus ``n_step`` for a one-step agent that can learn from the
    trainer's per-robot n-step replay (off by default: the original's one-step returns)."""

    n_step: int = 1  # per-robot n-step returns (the original: 1)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self, counts=("n_step",))


@dataclass
class PrioritizedConfig(NStepConfig):
    """:class:`NStepConfig` plus proportional prioritized replay (Schaul et al. 2016), for an
    agent whose objective reports a per-transition loss: with ``prioritized`` the replay draws
    each transition in proportion to its last loss to ``priority_exponent``
    (:meth:`priorities`, reported under ``"priority"``, which the learner hands to the sampler)
    and the loss is weighted by the importance weights at exponent ``importance_beta``
    (``"_weight"``). The one statement of these options for Rainbow (on by default) and IQN
    (off by default)."""

    prioritized: bool = False  # proportional prioritized replay (False: uniform draws)
    priority_exponent: float = 0.5  # priorities are loss ** priority_exponent
    importance_beta: float = 0.4  # importance-sampling exponent of the replay (fixed)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self, unit_interval=("priority_exponent", "importance_beta"))

    def priorities(self, loss_per_sample: torch.Tensor) -> torch.Tensor:
        """New priorities ``[B]`` from the per-transition losses ``[B]``: ``loss **
        priority_exponent`` (detached, a negative loss counted as 0); the sampler takes them as
        they are (its own exponent is 1)."""
        return loss_per_sample.detach().clamp(min=0.0).pow(self.priority_exponent)


@dataclass(frozen=True)
class ReplayOptions:
    """The replay an off-policy agent learns from (built by the trainer's ``ReplayLearner``).

    ``prioritized``: proportional prioritized sampling (the agent's ``update`` returns the new
    priorities, already raised to its priority exponent, under ``"priority"``); ``beta``: the
    importance-sampling exponent of that sampler (fixed); ``n_step``: per-robot n-step returns
    when above 1 (transitions then carry ``"discount"``), one-step transitions otherwise.
    """

    prioritized: bool = False
    beta: float = 0.4
    n_step: int = 1

    def __post_init__(self) -> None:
        check_n_step(self.n_step)
        if self.beta < 0:
            raise ValueError(f"beta must not be negative, got {self.beta}")


@dataclass(frozen=True)
class ParameterGroup:
    """Parameters one optimiser steps: the trainer's fused Adam at ``lr`` (``None``: the agent's
    ``config.lr``), after clipping their gradient to global L2 norm ``config.grad_clip_norm``.

    ``name`` names the optimiser (its key in checkpoints: ``"critic"``, ``"actor"``, ``"q"``).
    ``stacked``: the parameters hold K networks stacked ``[K, ...]`` (TorchRL's
    ``num_qvalue_nets``), and each network's gradient is clipped on its own.
    """

    name: str
    parameters: tuple[torch.Tensor, ...]
    stacked: bool = False
    lr: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", tuple(self.parameters))  # e.g. .parameters()


@dataclass(frozen=True)
class Objective:
    """One gradient step of an agent's update.

    ``loss(batch [B]) -> TensorDict`` (batch size ``[]``): 0-dim losses with their gradients,
    and any other value to report (``"priority"`` ``[B]``, SAC's ``"alpha"``). The trainer sums
    the entries named in ``minimise`` (one name or several, summed in that order) into one
    backward, clips the gradient of each of ``groups`` (one group or several) and steps their
    optimisers in order, and reports everything ``loss`` returned, detached. ``every``: the
    objective is stepped on every ``every``-th update only, the first included (TD3's delayed
    actor), and reports the losses of its last step in between. ``name`` says which step it is
    (``Updater.step(name, batch)``).
    """

    name: str
    loss: Callable[[TensorDictBase], TensorDictBase]
    minimise: str | tuple[str, ...]
    groups: ParameterGroup | tuple[ParameterGroup, ...]
    every: int = 1

    def __post_init__(self) -> None:
        for field, kind in (("minimise", str), ("groups", ParameterGroup)):
            if isinstance(getattr(self, field), kind):
                object.__setattr__(self, field, (getattr(self, field),))
        if not self.minimise or not self.groups:
            raise ValueError(f"objective {self.name!r} needs a loss to minimise and a group")
        if self.every < 1:
            raise ValueError(f"objective {self.name!r}: every must be at least 1")


@contextmanager
def frozen(module: nn.Module) -> Iterator[nn.Module]:
    """``module`` with every parameter's ``requires_grad`` off inside the block, restored after
    (also on an exception): a forward through it passes gradients on to its inputs (an actor's
    action) but records none for its own weights. What a loss's ``params.detach()`` swapped into
    the module gives, without building and swapping a detached copy (two tensordict passes over
    the parameters, about a tenth of an AC-IQN update on a CPU). Parameters already frozen stay
    frozen."""
    trainable = [p for p in module.parameters() if p.requires_grad]
    for parameter in trainable:
        parameter.requires_grad_(False)
    try:
        yield module
    finally:
        for parameter in trainable:
            parameter.requires_grad_(True)


def critic_then_actor(
    agent: Any, critic: ParameterGroup, actor: ParameterGroup, actor_every: int = 1
) -> tuple[Objective, Objective]:
    """The actor-critic update (DDPG, TD3, AC-IQN): ``agent.critic_loss(batch)`` (reporting
    ``loss_critic``) steps ``critic``, then ``agent.actor_loss(batch)`` (``loss_actor``), against
    the updated critic, steps ``actor`` on every ``actor_every``-th update. Each objective is
    named after its group."""
    return (
        Objective(critic.name, agent.critic_loss, "loss_critic", critic),
        Objective(actor.name, agent.actor_loss, "loss_actor", actor, every=actor_every),
    )


class PlannerCall(nn.Module):
    """An acting network in the C++ planner's calling convention
    (docs/migrating.md, "The node's call, from C++"):
    ``forward((self_state [N, 7], object_states [N, 5, 5], object_masks [N, 5]))`` calls
    ``network(self_state, object_states, object_masks)``."""

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor]):
        self_state, object_states, object_masks = x
        return self.network(self_state, object_states, object_masks)


def planner_output(outputs: Any) -> torch.Tensor:
    """The one output tensor of an exported module (also from a 1-tuple or list, e.g. ONNX
    Runtime's result; NumPy arrays are taken as tensors)."""
    if isinstance(outputs, (tuple, list)):
        if len(outputs) != 1:
            raise ValueError(f"expected one output, got {len(outputs)}")
        outputs = outputs[0]
    return torch.as_tensor(outputs)


class Agent(nn.Module):
    """Base class. Subclasses set the class attributes (see the module docstring) and build, in
    ``__init__``: their networks, ``self.loss_module`` (a TorchRL ``LossModule`` holding online
    and target parameters) and ``self.policy`` (a :class:`PolicyWrapper` over the online acting
    network); they implement :meth:`objectives`, :meth:`export_network` and, where the default
    rule does not fit, :meth:`planner_action`. The trainer's ``Updater`` learns with them."""

    name: ClassVar[str]
    action_kind: ClassVar[Literal["discrete", "continuous"]]
    config_class: ClassVar[type[AgentConfig]] = AgentConfig
    learning: ClassVar[str] = "replay"
    epsilon_greedy: ClassVar[bool] = True
    model_type: ClassVar[str]
    export_outputs: ClassVar[tuple[str, ...]]
    export_extra_inputs: ClassVar[tuple[str, ...]] = ()
    planner_options: ClassVar[tuple[str, ...]] = ()
    cudagraph_update: ClassVar[bool] = True

    policy: PolicyWrapper
    loss_module: LossModule

    def __init__(self, config: AgentConfig | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else self.config_class()
        if not isinstance(self.config, self.config_class):
            raise ValueError(
                f"{type(self).__name__} takes a {self.config_class.__name__}, "
                f"got {type(self.config).__name__}"
            )

    # ------------------------------------------------------------------ learning
    def replay_options(self) -> ReplayOptions:
        """The replay this agent learns from: with the config's ``n_step`` returns when it is
        an :class:`NStepConfig` (one-step transitions otherwise), prioritized as a
        :class:`PrioritizedConfig` asks (uniform otherwise)."""
        cfg = self.config
        if isinstance(cfg, PrioritizedConfig):
            return ReplayOptions(
                prioritized=cfg.prioritized, beta=cfg.importance_beta, n_step=cfg.n_step
            )
        return ReplayOptions(n_step=cfg.n_step if isinstance(cfg, NStepConfig) else 1)

    def objectives(self) -> tuple[Objective, ...]:
        """The gradient steps of one update, in order (see :class:`Objective`)."""
        raise NotImplementedError

    def target_pairs(self) -> tuple[tuple[str, str], ...]:
        """``(online, target)`` attribute names of the loss module's parameter sets that have a
        target copy: TorchRL's ``<name>_params`` / ``target_<name>_params`` (what its target
        updaters move); ``()`` for an agent without targets."""
        return tuple(
            (name.removeprefix("target_"), name)
            for name, _ in self.loss_module.named_children()
            if name.startswith("target_") and name.endswith("_params")
        )

    def check_batch(self, batch: TensorDictBase) -> None:
        """Shape and dtype checks of a training batch (:func:`check_batch`; free: no values are
        read), before every update."""
        check_batch(batch, self.action_kind)

    # ------------------------------------------------------------------ accelerators (opt-in)
    def compile_policy(self) -> None:
        """``torch.compile`` the acting network: ``policy.selector`` in place
        (``nn.Module.compile``: module tree and state dict keep their names). The wrapper's
        exploration and the selectors' draws from the policy's ``torch.Generator`` cannot be
        traced; they run eagerly between compiled pieces, so compiled acting consumes the same
        random stream as eager acting. The first batch shape is specialised; another one (the
        evaluator's compacted batches) compiles one more, dynamic-shape graph."""
        self.policy.selector.compile()

    # ------------------------------------------------------------------ checkpoints
    def training_state_dict(self) -> dict[str, Any]:
        """Networks (online and target) and any other state learning needs, for checkpoints
        (the optimisers' states are the ``Updater``'s)."""
        return {"modules": self.state_dict()}

    def load_training_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`training_state_dict` (other entries, such as the optimisers' states
        of a checkpoint, are left to their owners)."""
        self.load_state_dict(state["modules"])

    def rng_state(self) -> dict[str, Any]:
        """The acting policy's random streams (exploration draws), one per device it has acted
        on: ``{str(device): generator state}`` (the layout of older checkpoints'
        ``"policy_generators"``)."""
        generators = self.policy._generators  # the wrapper's streams, made on first use
        return {str(device): g.get_state() for device, g in generators.items()}

    def load_rng_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`rng_state`."""
        for device, generator_state in state.items():
            self.policy.generator(torch.device(device)).set_state(generator_state)

    # ------------------------------------------------------------------ export
    def export_network(self) -> nn.Module:
        """The live acting network in the C++ planner's calling convention (e.g.
        ``PlannerCall(self.actor)``); :mod:`marinenav.export` copies it to float64 on the CPU
        and traces it. Not registered on the agent (its state dict stays as it is)."""
        raise NotImplementedError

    @classmethod
    def planner_action(cls, outputs: Any, **options: Any) -> torch.Tensor:
        """The C++ planner's action from the exported module's ``outputs`` (tensors or NumPy
        arrays, any leading batch ``[...]``): here the output itself for continuous agents
        (``[..., 2]`` in (-1, 1)) and the argmax of the action values for discrete ones (int64
        ``[...]``). A rule that needs options takes them as keyword parameters and declares
        their names in :attr:`planner_options`; callers
        (``marinenav.planner_convention.planner_action``, the planner loader) pass an option
        only to a rule that declares it: the file's :meth:`export_metadata` entries (Rainbow's
        ``v_min``, ``v_max``) and, for a sampling planner, ``noise`` (standard-normal draws
        shaped like the first output)."""
        values = planner_output(outputs)
        return values.clone() if cls.action_kind == "continuous" else values.argmax(dim=-1)

    @classmethod
    def export_output_shapes(cls) -> tuple[tuple[int | None, ...], ...]:
        """The shape of each exported output (``export_outputs``, in order) after the batch
        dimension, ``None`` for a size the file decides: here ``(2,)`` (actions or Gaussian
        parameters) for continuous agents and ``(25,)`` (action values) for discrete ones."""
        shape = (ACTION_DIM,) if cls.action_kind == "continuous" else (NUM_DISCRETE_ACTIONS,)
        return tuple(shape for _ in cls.export_outputs)

    def export_metadata(self) -> dict[str, Any]:
        """Extra entries of the exported file's ``marinenav_export.json`` record (JSON values);
        the planner loader hands those named in :attr:`planner_options` back to
        :meth:`planner_action`."""
        return {}


class StackedCritics:
    """For an agent whose TorchRL loss holds its Q critics stacked ``[K, ...]`` as
    ``loss_module.qvalue_network_params`` (``num_qvalue_nets``; SAC, TD3), all ``QCritic``."""

    loss_module: Any
    config: AgentConfig

    @staticmethod
    def critic_modules(config: AgentConfig, count: int = 2) -> list[TensorDictModule]:
        """``count`` ``QCritic`` modules for the loss (``[*OBSERVATION_KEYS, "action"]`` ->
        ``"state_action_value"``), seeded ``config.seed + 1``, ``+ 2``, ... so that they start
        from different initialisations."""
        return [
            TensorDictModule(
                QCritic(seed=config.seed + k, normalize=config.normalize_observations),
                in_keys=[*OBSERVATION_KEYS, ACTION],
                out_keys=["state_action_value"],
            )
            for k in range(1, count + 1)
        ]

    def critic_parameters(self) -> list[nn.Parameter]:
        """The stacked ``[K, ...]`` parameters of the online critics."""
        params = self.loss_module.qvalue_network_params.values(True, True)
        return [p for p in params if isinstance(p, nn.Parameter)]

    def critic_network(self, index: int, target: bool = False) -> QCritic:
        """A plain ``QCritic`` holding a copy of online (or target) critic ``index``."""
        params = (
            self.loss_module.target_qvalue_network_params
            if target
            else self.loss_module.qvalue_network_params
        )
        state = {k: v.detach()[index] for k, v in params["module"].flatten_keys(".").items()}
        critic = QCritic(normalize=self.config.normalize_observations)
        critic.load_state_dict(state)
        return critic.to(next(iter(state.values())).device)


def check_batch(batch: TensorDictBase, action_kind: str) -> None:
    """Shape and dtype checks of a training batch (free: no values are read)."""
    for key in OBSERVATION_KEYS:
        for full in (key, ("next", key)):
            if full not in batch.keys(include_nested=True):
                raise ValueError(f"training batch is missing {full!r}")
    action = batch.get(ACTION)
    if action_kind == "discrete" and (action.dtype != torch.int64 or action.dim() != 1):
        raise ValueError(f"discrete actions must be int64 [B], got {action.dtype} {action.shape}")
    if action_kind == "continuous" and (not action.is_floating_point() or action.shape[-1] != 2):
        raise ValueError(f"continuous actions must be float [B, 2], got {tuple(action.shape)}")


def with_steps_to_next_obs(batch: TensorDictBase, gamma: float) -> TensorDictBase:
    """``batch`` with TorchRL's ``"steps_to_next_obs"`` ``[B, 1]`` when it carries an n-step
    ``"discount"`` (``gamma ** m``): ``m = log(discount) / log(gamma)``, so that TorchRL's TD(0)
    estimator discounts each transition by its own ``gamma ** m``. A shallow copy (the caller's
    batch is not written); ``batch`` itself when it has no ``"discount"``."""
    discount = batch.get("discount", None)
    if discount is None:
        return batch
    steps = torch.log(discount) / math.log(gamma)
    return batch.clone(recurse=False).set("steps_to_next_obs", steps)
