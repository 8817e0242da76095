"""The update loop, owned by the trainer for every agent: optimisers, gradient clipping, the
learning-rate schedule, target-network updates and the opt-in accelerators.

An agent only declares what it learns (``marinenav.agents.base``): its TorchRL loss module (the
target networks live in it) and its :class:`~marinenav.agents.base.Objective` s, the gradient
steps of one update, each a loss function, the losses it minimises and the
:class:`~marinenav.agents.base.ParameterGroup` s it steps. The :class:`Updater` does the rest,
the same way for every agent (BenchMARL's ``Experiment`` and TorchRL's sota scripts split losses
from optimisation the same way)::

    updater = Updater(agent, target_tau=None)   # one fused Adam per parameter group
    losses = updater.update(batch)              # every objective due, in order; detached losses
    updater.update_targets()                    # hard copy of the targets (or Polyak: target_tau)
    updater.set_lr_fraction(0.5)                # the trainer's linear decay
    updater.compile(compile=True)               # torch.compile and / or CUDA graphs, opt-in

One objective's step is: its loss function on the batch, ``zero_grad`` of its groups'
optimisers, one backward of the sum of its minimised losses, then for each group in order the
gradient-norm clip (``agent.config.grad_clip_norm``; stacked networks one by one) and the Adam
step. No host read-back: the losses stay on the device.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import CudaGraphModule
from torch import Tensor
from torchrl._utils import compile_with_warmup
from torchrl.objectives import HardUpdate, SoftUpdate
from torchrl.objectives.utils import TargetNetUpdater

from marinenav.agents.base import Agent, Objective, ParameterGroup, cudagraph_refusal


def make_adam(parameters, lr: float) -> torch.optim.Adam:
    """Adam with the original's settings. ``fused=True``: one kernel per step, and no host read
    of the step counters (the default implementation calls ``item()`` on each of them)."""
    return torch.optim.Adam(parameters, lr=lr, fused=True)


def clip_stacked_grad_norm_(parameters, max_norm: float) -> None:
    """Clip the gradients of K networks whose parameters are stacked ``[K, ...]`` (TorchRL's
    ``num_qvalue_nets``): network ``k``'s gradient (the ``[k]`` slices) is scaled to global L2
    norm at most ``max_norm``, separately for each ``k``, as ``clip_grad_norm_`` does per network.
    In place, no host read."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    squares = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0)  # [K]
    coef = (max_norm / (squares.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))


def target_updater(agent: Agent, tau: float | None) -> TargetNetUpdater | None:
    """TorchRL's updater of the agent's target networks (:meth:`Agent.target_pairs`):
    ``SoftUpdate`` (each step: ``target <- (1 - tau) target + tau online``) when ``tau`` is
    given, else ``HardUpdate`` copying on every step; ``None`` for an agent without targets.
    The targets are left as they are (TorchRL's updaters copy the online parameters into them
    when built; an agent restored from a checkpoint keeps its own)."""
    if tau is not None and not 0.0 < tau <= 1.0:
        raise ValueError(f"tau must be in (0, 1], got {tau}")
    pairs = agent.target_pairs()
    if not pairs:
        return None
    loss = agent.loss_module
    targets = dict(loss.named_children())  # not getattr: TorchRL warns before an updater exists
    kept = {target: targets[target].data.clone() for _, target in pairs}
    if tau is not None:
        updater = SoftUpdate(loss, tau=tau)
    else:  # HardUpdate copies when its counter reaches the interval: 0 copies on every step
        updater = HardUpdate(loss, value_network_update_interval=0)
    for target, values in kept.items():
        targets[target].data.update_(values)
    return updater


def polyak_pairs(updater: SoftUpdate) -> tuple[list[Tensor], list[Tensor], float]:
    """``(targets, sources, weight)``: every target tensor of a TorchRL ``SoftUpdate`` beside
    its online tensor, and the weight its step uses (``1 - eps``, ``eps = 1 - tau``, as TorchRL
    computes it). ``torch._foreach_lerp_(targets, sources, weight)`` is then its step exactly
    (each tensor's ``lerp_``, as ``SoftUpdate._step``), without walking the TensorDicts on
    every update (a seventh of an AC-IQN update on one CPU thread). The tensors are the
    parameters' own storage: loading a checkpoint copies into them, so the lists stay valid."""
    targets, sources = [], []
    for key, source in updater._sources.items():  # TorchRL's registry of (online, target)
        target = updater._targets.get(f"target_{key}")
        for leaf in source.keys(include_nested=True, leaves_only=True):
            targets.append(target.get(leaf).data)
            sources.append(source.get(leaf).data)
    return targets, sources, 1 - updater.eps


class Updater:
    """Learns with ``agent``: one fused Adam per parameter group of its objectives (at the
    group's ``lr``, else ``agent.config.lr``), its objectives stepped in order on every
    :meth:`update`, and its targets moved by TorchRL's ``HardUpdate`` (:meth:`update_targets`,
    called by the trainer every ``training.target_update_interval`` timesteps) or, with
    ``target_tau``, by one Polyak step after every update (``training.target_tau``; not the
    original, which copies every 10,000 steps).

    Build it before loading a checkpoint into it (:meth:`load_state_dict`) and before
    :meth:`compile`; building it leaves the agent's parameters as they are.

    Attributes:
        optimizers: group name -> its Adam, in the objectives' order.
        updates: updates taken (a host counter; decides the objectives stepped on some updates
            only; the trainer restores it from its own count on resume).
    """

    def __init__(self, agent: Agent, target_tau: float | None = None) -> None:
        self.agent = agent
        self.objectives: tuple[Objective, ...] = tuple(agent.objectives())
        self.grad_clip_norm = agent.config.grad_clip_norm
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        for group in self.groups():
            if group.name in self.optimizers:
                raise ValueError(f"agent {agent.name}: two parameter groups named {group.name!r}")
            lr = agent.config.lr if group.lr is None else group.lr
            self.optimizers[group.name] = make_adam(group.parameters, lr)
        self.targets = target_updater(agent, target_tau)
        self.soft_targets = target_tau is not None and self.targets is not None
        self._polyak = polyak_pairs(self.targets) if self.soft_targets else None
        self.updates = 0
        self._steps: dict[str, Callable[[TensorDictBase], TensorDict]] = {
            objective.name: functools.partial(self._step, objective)
            for objective in self.objectives
        }
        self._step_all: Callable[[TensorDictBase], TensorDict] = self._step_objectives
        # an objective stepped on some updates only reports its last losses in between
        self.delayed = any(objective.every > 1 for objective in self.objectives)
        self._last: dict[str, TensorDict] = {
            objective.name: TensorDict(
                {key: torch.zeros((), device=objective.groups[0].parameters[0].device)
                 for key in objective.minimise},
                batch_size=[],
            )  # fmt: skip
            for objective in self.objectives
            if objective.every > 1
        }

    def groups(self) -> list[ParameterGroup]:
        """Every parameter group of the objectives, in order."""
        return [group for objective in self.objectives for group in objective.groups]

    # ------------------------------------------------------------------ one update
    def update(self, batch: TensorDictBase) -> TensorDict:
        """One update on ``batch`` (the agent's batch layout): every objective due, in order,
        then the Polyak step of the targets when ``target_tau`` was given. Returns what the
        objectives report, detached (0-dim losses; ``"priority"`` ``[B]`` of a prioritized
        agent), never read back to the host."""
        self.agent.check_batch(batch)
        if self.delayed:
            reported = TensorDict({}, batch_size=[])
            for objective in self.objectives:
                if objective.every == 1:
                    reported.update(self._steps[objective.name](batch))
                    continue
                if self.updates % objective.every == 0:
                    losses = self._steps[objective.name](batch)
                    self._last[objective.name] = losses.select(*objective.minimise)
                reported.update(self._last[objective.name].clone())
        else:
            reported = self._step_all(batch)
        self.updates += 1
        if self._polyak is not None:
            self.polyak_step()
        return reported

    def polyak_step(self) -> None:
        """One Polyak step of every target toward its online network (``target_tau``): TorchRL
        ``SoftUpdate``'s step, as one ``torch._foreach_lerp_`` (:func:`polyak_pairs`)."""
        targets, sources, weight = self._polyak
        torch._foreach_lerp_(targets, sources, weight)

    def step(self, name: str, batch: TensorDictBase) -> TensorDict:
        """One gradient step of objective ``name`` alone (whatever its ``every``); returns what
        it reports, detached."""
        return self._steps[name](batch)

    def _step_objectives(self, batch: TensorDictBase) -> TensorDict:
        """Every objective's step, in order; what they report, in one TensorDict."""
        reported = TensorDict({}, batch_size=[])
        for objective in self.objectives:
            reported.update(self._steps[objective.name](batch))
        return reported

    def _step(self, objective: Objective, batch: TensorDictBase) -> TensorDict:
        losses = objective.loss(batch)
        minimised = functools.reduce(operator.add, (losses.get(k) for k in objective.minimise))
        for group in objective.groups:
            self.optimizers[group.name].zero_grad(set_to_none=True)
        minimised.backward()
        for group in objective.groups:
            if group.stacked:
                clip_stacked_grad_norm_(group.parameters, self.grad_clip_norm)
            else:
                torch.nn.utils.clip_grad_norm_(group.parameters, self.grad_clip_norm)
            self.optimizers[group.name].step()
        return losses.detach()

    # ------------------------------------------------------------------ targets and rates
    def update_targets(self) -> None:
        """Move the target networks to the online ones: a hard copy, or one Polyak step with
        ``target_tau`` (which :meth:`update` already takes after every update); nothing for an
        agent without targets. The Polyak step is :meth:`polyak_step`, the one :meth:`update`
        takes."""
        if self._polyak is not None:
            self.polyak_step()
        elif self.targets is not None:
            self.targets.step()

    def set_lr_fraction(self, fraction: float) -> None:
        """Set every optimiser's learning rate to ``fraction`` times the rate it was built with
        (kept in each parameter group's ``initial_lr``, torch's scheduler convention). Host
        arithmetic on Python floats, no device read; a learning rate held as a tensor (CUDA
        graphs: :meth:`compile`) is filled in place, so a captured optimiser step reads the new
        rate. The trainer's linear decay (``training.final_lr_fraction``) calls it once per
        batched step."""
        for optimizer in self.optimizers.values():
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
                value = group["initial_lr"] * fraction
                if isinstance(group["lr"], torch.Tensor):
                    group["lr"].fill_(value)
                else:
                    group["lr"] = value

    # ------------------------------------------------------------------ accelerators (opt-in)
    def compile(self, compile: bool = True, cudagraphs: bool = False) -> None:
        """Run the updates compiled and / or as a CUDA graph, TorchRL's sota pattern:
        ``compile_with_warmup(step, warmup=1)`` (the first update runs eagerly and creates the
        optimisers' state before tracing) and ``CudaGraphModule(step, in_keys=[], out_keys=[],
        warmup=5)`` (eager warm-up updates on a side stream, then one capture; every later
        update copies the batch into the captured inputs and replays). What is wrapped is the
        objectives' steps together, or, where an objective is stepped on some updates only
        (TD3), each objective's step on its own (no CUDA graph then). Both need fixed batch keys
        and shapes (the replay's samples have them); the graph also needs the parameters,
        optimiser states and target networks updated in place (they are: fused Adam, TorchRL's
        target updaters, ``load_state_dict``). Call it after loading a checkpoint: the
        optimisers are marked ``capturable`` here, a flag their ``load_state_dict`` resets."""
        if cudagraphs:
            device = self.groups()[0].parameters[0].device
            refusal = cudagraph_refusal(type(self.agent), device)
            if refusal is not None:
                raise ValueError(refusal)
            # Adam refuses a capture unless capturable; fused Adam keeps its step counts on the
            # device anyway, so the flag changes no arithmetic. The learning rate becomes a
            # device tensor, so that a decay (set_lr_fraction) reaches the captured step.
            for optimizer in self.optimizers.values():
                for group in optimizer.param_groups:
                    group["capturable"] = True
                    group.setdefault("initial_lr", float(group["lr"]))
                    group["lr"] = torch.as_tensor(group["lr"], dtype=torch.float32, device=device)
        if self.delayed:
            if compile:
                self._steps = {k: compile_with_warmup(s, warmup=1) for k, s in self._steps.items()}
            return
        step = self._step_all
        if compile:
            step = compile_with_warmup(step, warmup=1)
        if cudagraphs:
            step = CudaGraphModule(step, in_keys=[], out_keys=[], warmup=5)
        self._step_all = step

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """``{"optimizers": {name: optimiser state}, "updates": count}``."""
        return {
            "optimizers": {k: opt.state_dict() for k, opt in self.optimizers.items()},
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state["optimizers"][name])
        self.updates = int(state["updates"])
