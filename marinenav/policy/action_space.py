"""``ActionSpace``: what a TorchRL action spec says about acting, cached once as buffers.

Built from a leaf spec (``Categorical``, ``OneHot``, ``Bounded``) or from a ``Composite`` that
holds one (``env.full_action_spec``, multi-agent groups included). It knows the action's event
shape (the spec's shape without the environment's batch and the agents' group dimensions), its
dtype and its bounds, and turns a network output into an action (the head) or draws uniform
random actions inside the spec (exploration), batched, with no host read-back.

Shapes: ``batch`` is whatever precedes the event shape in the data (``[]`` unbatched, ``[B]``,
``[E, R]`` for ``E`` environments of ``R`` agents, ...); ``event`` is ``ActionSpace.event_shape``.
"""

from __future__ import annotations

from typing import Literal

import torch
from tensordict.utils import NestedKey
from torch import nn
from torchrl.data import Bounded, Categorical, Composite, OneHot, TensorSpec

Kind = Literal["categorical", "one_hot", "box"]


def action_leaf(
    spec: TensorSpec, key: NestedKey | None = None
) -> tuple[NestedKey, TensorSpec, int]:
    """The action leaf of ``spec``, its key and how many leading dims are not its event shape.

    A ``Composite`` (``env.full_action_spec``) must hold exactly one leaf unless ``key`` names
    one; the leaf's event shape is its shape without the shape of the ``Composite`` that holds
    it (environment batch and agent group). A leaf spec given alone is its event shape.
    """
    if not isinstance(spec, Composite):
        return ("action" if key is None else key), spec, 0
    if key is None:
        keys = list(spec.keys(True, True))
        if len(keys) != 1:
            raise ValueError(f"the action spec holds {keys}: say which is the action (out_key=)")
        key = keys[0]
    parent = spec[key[:-1]] if isinstance(key, tuple) and len(key) > 1 else spec
    return key, spec[key], len(parent.shape)


class ActionSpace(nn.Module):
    """Event shape, dtype and bounds of an action spec, and the head and sampler they imply.

    Args:
        spec: a ``Categorical`` (index ``0..n-1``), ``OneHot`` (``n`` flags) or ``Bounded``
            (box ``[low, high]``, any shape, float or integer dtype) leaf, or a ``Composite``
            holding one (see :func:`action_leaf`).
        key: the action's key inside a ``Composite`` with several leaves.

    Bounds that differ between agents keep the group dimension (``low``, ``high``:
    ``[*group, *event]``, broadcast against ``[*batch, *group, *event]``); equal ones are stored
    once, ``[*event]``. Buffers are not saved in ``state_dict`` (they come from the spec).
    """

    def __init__(self, spec: TensorSpec, key: NestedKey | None = None) -> None:
        super().__init__()
        self.key, leaf, batch_dims = action_leaf(spec, key)
        self.event_shape = leaf.shape[batch_dims:]
        self.dtype = leaf.dtype
        if isinstance(leaf, OneHot):
            self.kind: Kind = "one_hot"
            self.n = leaf.space.n
        elif isinstance(leaf, Categorical):
            self.kind = "categorical"
            self.n = leaf.space.n
        elif isinstance(leaf, Bounded):
            self.kind = "box"
            root_dims = len(spec.shape) if isinstance(spec, Composite) else 0
            first = (0,) * root_dims  # bounds are the same for every environment of a batch
            low, high = leaf.space.low[first], leaf.space.high[first]
            group = (0,) * (low.dim() - len(self.event_shape))
            if torch.equal(low, low[group].expand_as(low)) and torch.equal(
                high, high[group].expand_as(high)
            ):  # construction time: host reads are fine here
                low, high = low[group], high[group]
            self.register_buffer("low", low.clone(), persistent=False)
            self.register_buffer("high", high.clone(), persistent=False)
        else:
            raise TypeError(
                f"PolicyWrapper acts in Categorical, OneHot and Bounded action specs, not "
                f"{type(leaf).__name__}"
            )

    @property
    def discrete(self) -> bool:
        return self.kind != "box"

    @property
    def head_size(self) -> int:
        """Features a network feeds the head: ``n`` logits per index (categorical), ``n`` per
        one-hot vector, one value per box entry."""
        event = self.event_shape[:-1] if self.kind == "one_hot" else self.event_shape
        size = event.numel()
        return size * self.n if self.discrete else size

    def head(self, output: torch.Tensor) -> torch.Tensor:
        """Network output ``[*batch, head_size]`` -> action ``[*batch, *event]``: the argmax
        index (or its one-hot vector) of the logits, or ``tanh`` squashed into ``[low, high]``."""
        batch = output.shape[:-1]
        if output.shape[-1] != self.head_size:
            raise ValueError(
                f"the network gives {output.shape[-1]} features; the action spec needs "
                f"{self.head_size}"
            )
        if self.kind == "categorical":
            logits = output.reshape((*batch, *self.event_shape, self.n))
            return logits.argmax(dim=-1).to(self.dtype)
        if self.kind == "one_hot":
            logits = output.reshape((*batch, *self.event_shape[:-1], self.n))
            return nn.functional.one_hot(logits.argmax(dim=-1), self.n).to(self.dtype)
        unit = (torch.tanh(output.reshape((*batch, *self.event_shape))) + 1) / 2
        return self._inside(self.low + (self.high - self.low) * unit, output.dtype)

    def sample(
        self, batch: torch.Size, generator: torch.Generator, dtype: torch.dtype
    ) -> torch.Tensor:
        """Uniform random actions ``[*batch, *event]`` of ``dtype``, one per batch element,
        inside the spec, drawn from ``generator`` on the buffers' device."""
        device = generator.device
        if self.kind == "categorical":
            return torch.randint(0, self.n, (*batch, *self.event_shape), generator=generator,
                                 device=device, dtype=dtype)  # fmt: skip
        if self.kind == "one_hot":
            index = torch.randint(0, self.n, (*batch, *self.event_shape[:-1]),
                                  generator=generator, device=device)  # fmt: skip
            return nn.functional.one_hot(index, self.n).to(dtype)
        if dtype.is_floating_point:
            unit = torch.rand((*batch, *self.event_shape), generator=generator, device=device,
                              dtype=dtype)  # fmt: skip
            return self._inside(self.low + (self.high - self.low) * unit, dtype)
        unit = torch.rand((*batch, *self.event_shape), generator=generator, device=device)
        return self._inside(torch.floor(self.low + (self.high - self.low + 1) * unit), dtype)

    def _inside(self, action: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Clamped into ``[low, high]`` (float rounding of ``low + span * u``), as ``dtype``."""
        return torch.minimum(torch.maximum(action, self.low), self.high).to(dtype)
