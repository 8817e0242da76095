"""``PolicyWrapper``: the batched acting module, usable in any TorchRL project.

It reads a robot observation (self state, objects, object mask) from a TensorDict of any batch
shape, runs one batched forward pass of an agent's :class:`ActionSelector` on the batch's
device, mixes in epsilon-random actions with one ``rand < eps`` mask and ``torch.where``, and
writes the action. No ``item()`` read-back, no Python branch on tensor values, no loop over samples.

Modes: exploration (epsilon and stochastic policies) when TorchRL's exploration type is
``RANDOM``, or, outside any ``set_exploration_type`` context, when the module is in training
mode (``policy.train()``); deterministic evaluation otherwise (``policy.eval()`` or
``set_exploration_type(ExplorationType.DETERMINISTIC)``).

Random numbers come from the wrapper's own ``torch.Generator`` on the batch's device, drawn in
the flattened batch order, so the same inputs and seed give the same actions whether the batch
is ``[E, R]`` or flattened to ``[E * R]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import nn
from torchrl.envs.utils import ExplorationType, exploration_type

from marinenav.policy.selectors import ActionSelector
from marinenav.sim.constants import NUM_DISCRETE_ACTIONS

DEFAULT_IN_KEYS: tuple[NestedKey, ...] = (
    ("agents", "self_state"),
    ("agents", "objects"),
    ("agents", "objects_mask"),
)
DEFAULT_OUT_KEY: NestedKey = ("agents", "action")


class PolicyWrapper(TensorDictModuleBase):
    """Acting module: observations in, actions out, for a batch of any shape.

    Args:
        selector: the agent's action selector (greedy / deterministic / stochastic action).
        in_keys: keys of ``(self_state [..., 7], objects [..., 5, 5], objects_mask [..., 5])``;
            default the ``("agents", ...)`` keys of ``MarineNavEnv``.
        out_key: where the action goes: int64 ``[...]`` (discrete) or ``[..., 2]``.
        cvar_key: optional key of a CVaR level ``[...]`` in (0, 1] (risk-sensitive IQN
            acting); absent entries use the ``cvar`` buffer (1.0: risk neutral).
        epsilon: initial exploration rate (a buffer; change it with :meth:`set_epsilon`).
        seed: seed of the wrapper's random stream.
    """

    def __init__(
        self,
        selector: ActionSelector,
        *,
        in_keys: Sequence[NestedKey] = DEFAULT_IN_KEYS,
        out_key: NestedKey = DEFAULT_OUT_KEY,
        cvar_key: NestedKey | None = "cvar",
        epsilon: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if len(in_keys) != 3:
            raise ValueError("in_keys must name (self_state, objects, objects_mask)")
        self.selector = selector
        self.in_keys = list(in_keys)
        self.out_keys = [out_key]
        self.cvar_key = cvar_key
        self.register_buffer("epsilon", torch.tensor(float(epsilon)))
        self.register_buffer("cvar", torch.tensor(1.0))
        self.seed = seed
        self._generators: dict[torch.device, torch.Generator] = {}

    @property
    def action_kind(self) -> Literal["discrete", "continuous"]:
        return self.selector.action_kind

    def set_epsilon(self, value: float | torch.Tensor) -> None:
        """Change the exploration rate in place (no recompilation, no host read)."""
        if isinstance(value, torch.Tensor):
            self.epsilon.copy_(value)
        else:
            self.epsilon.fill_(value)

    def set_seed(self, seed: int) -> None:
        """Restart the random stream on every device."""
        self.seed = seed
        for generator in self._generators.values():
            generator.manual_seed(seed)

    def generator(self, device: torch.device) -> torch.Generator:
        """The wrapper's random stream on ``device`` (made once per device)."""
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[device]

    def exploring(self) -> bool:
        """Whether actions are exploratory now (see the module docstring)."""
        mode = exploration_type()
        if mode is None:
            return self.training
        return mode == ExplorationType.RANDOM

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        self_state = tensordict.get(self.in_keys[0])
        objects = tensordict.get(self.in_keys[1])
        objects_mask = tensordict.get(self.in_keys[2])
        batch = self_state.shape[:-1]
        flat = (
            self_state.reshape(-1, self_state.shape[-1]),
            objects.reshape(-1, *objects.shape[-2:]),
            objects_mask.reshape(-1, objects_mask.shape[-1]),
        )
        n, device = flat[0].shape[0], self_state.device
        cvar = tensordict.get(self.cvar_key, None) if self.cvar_key is not None else None
        cvar = self.cvar.expand(n) if cvar is None else cvar.reshape(n).to(self.cvar.dtype)
        explore = self.exploring()
        generator = self.generator(device)
        with torch.no_grad():
            action = self.selector(*flat, explore=explore, cvar=cvar, generator=generator)
            if explore:
                draw = torch.rand(n, generator=generator, device=device)
                random_action = self._random_action(n, action.dtype, device, generator)
                take = (draw < self.epsilon).view(n, *([1] * (action.dim() - 1)))
                action = torch.where(take, random_action, action)
        tensordict.set(self.out_keys[0], action.reshape(*batch, *action.shape[1:]))
        return tensordict

    def _random_action(
        self, n: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
    ) -> torch.Tensor:
        """Uniform random actions: an index in 0..24, or ``U[-1, 1]^2`` (spec B2, C3)."""
        if self.action_kind == "discrete":
            return torch.randint(0, NUM_DISCRETE_ACTIONS, (n,), generator=generator,
                                 device=device, dtype=dtype)  # fmt: skip
        return torch.rand((n, 2), generator=generator, device=device, dtype=dtype) * 2 - 1


def module_device(module: nn.Module) -> torch.device:
    """The device of a module's first parameter (CPU for a module without parameters)."""
    return next((p.device for p in module.parameters()), torch.device("cpu"))
