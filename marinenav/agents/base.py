"""What every agent is: networks, a TorchRL ``LossModule``, optimisers, a target update, and a
``PolicyWrapper`` for acting. One module per algorithm builds on this.

Training batches are flat TensorDicts ``[B]`` of robot transitions (one robot, one step):

==============================  ===============  ==========================================
key                             shape            meaning
==============================  ===============  ==========================================
``"self_state"``                ``[B, 7]``       observation before the step (robot frame)
``"objects"``                   ``[B, 5, 5]``
``"objects_mask"``              ``[B, 5]``       bool
``"action"``                    ``[B]`` / ``[B, 2]``  int64 index or the executed continuous action
``("next", "self_state")`` ...  as above         observation after the step
``("next", "reward")``          ``[B, 1]``       reward (Rainbow: the n-step return)
``("next", "terminated")``      ``[B, 1]``       bool: no bootstrapping from ``next``
``("next", "done")``            ``[B, 1]``       bool: terminated or truncated
``"discount"``                  ``[B, 1]``       optional: ``gamma ** n`` of an n-step return
``"_weight"``                   ``[B]``          optional: importance weights (prioritized replay)
==============================  ===============  ==========================================

Timeouts are truncations: targets bootstrap from ``next`` unless ``terminated`` (the original
stores timeouts as terminal, quirk A8; we implement the standard rule).

``update(batch)`` takes one gradient step on every network of the agent (the original's
``train()``), clipping each network's gradient norm to ``grad_clip_norm``, and returns the
losses as a TensorDict of 0-dim tensors (never read back to the host here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from marinenav.policy.wrapper import PolicyWrapper

OBSERVATION_KEYS = ("self_state", "objects", "objects_mask")


@dataclass
class AgentConfig:
    """Hyperparameters shared by all agents (spec B1.3, B9): the original's values."""

    gamma: float = 0.99  # discount
    lr: float = 1e-4  # Adam learning rate, one optimiser per network
    grad_clip_norm: float = 0.5  # global L2 norm per network, before each step
    seed: int = 100  # network initialisation seed (the original: run seed + 100)
    normalize_observations: bool = False  # scale positions / 10 m, thrusts / 1000 N (not original)


class Agent(nn.Module):
    """Base class. Subclasses set the class attributes and build, in ``__init__``:
    ``self.policy`` (a :class:`PolicyWrapper` over the online acting network),
    ``self.loss_module`` (a TorchRL ``LossModule`` holding online and target parameters),
    ``self.optimizers`` (name -> optimiser) and implement :meth:`update` and
    :meth:`update_targets`."""

    name: ClassVar[str]
    action_kind: ClassVar[Literal["discrete", "continuous"]]
    config_class: ClassVar[type[AgentConfig]] = AgentConfig

    policy: PolicyWrapper
    optimizers: dict[str, torch.optim.Optimizer]

    def __init__(self, config: AgentConfig | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else self.config_class()
        if not isinstance(self.config, self.config_class):
            raise ValueError(
                f"{type(self).__name__} takes a {self.config_class.__name__}, "
                f"got {type(self.config).__name__}"
            )

    def update(self, batch: TensorDictBase) -> TensorDict:
        """One gradient step on every network; returns detached losses (0-dim tensors)."""
        raise NotImplementedError

    def update_targets(self) -> None:
        """Copy the online parameters into the target networks (tau = 1)."""
        raise NotImplementedError

    def step_optimizer(self, name: str, loss: torch.Tensor, parameters) -> None:
        """Backward, clip the gradient norm of ``parameters`` and step optimiser ``name``."""
        optimizer = self.optimizers[name]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, self.config.grad_clip_norm)
        optimizer.step()

    def training_state_dict(self) -> dict[str, Any]:
        """Networks (online and target) and optimiser states, for checkpoints."""
        return {
            "modules": self.state_dict(),
            "optimizers": {k: opt.state_dict() for k, opt in self.optimizers.items()},
        }

    def load_training_state_dict(self, state: dict[str, Any]) -> None:
        self.load_state_dict(state["modules"])
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state["optimizers"][name])


def make_adam(parameters, lr: float) -> torch.optim.Adam:
    """Adam with the original's settings. ``fused=True``: one kernel per step, and no host read
    of the step counters (the default implementation calls ``item()`` on each of them)."""
    return torch.optim.Adam(parameters, lr=lr, fused=True)


def check_batch(batch: TensorDictBase, action_kind: str) -> None:
    """Shape and dtype checks of a training batch (free: no values are read)."""
    for key in OBSERVATION_KEYS:
        for full in (key, ("next", key)):
            if full not in batch.keys(include_nested=True):
                raise ValueError(f"training batch is missing {full!r}")
    action = batch.get("action")
    if action_kind == "discrete" and (action.dtype != torch.int64 or action.dim() != 1):
        raise ValueError(f"discrete actions must be int64 [B], got {action.dtype} {action.shape}")
    if action_kind == "continuous" and (not action.is_floating_point() or action.shape[-1] != 2):
        raise ValueError(f"continuous actions must be float [B, 2], got {tuple(action.shape)}")
