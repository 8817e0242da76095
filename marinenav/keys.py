"""The tensordict vocabulary every layer shares: the robot group and its observation fields,
and the config's dtype names.

A MarineNavEnv step's tensordict holds the per-robot entries under one group,
``td[GROUP]`` with batch shape ``[E, R]`` (environments, robot slots), as TorchRL's
multi-agent environments do. The network inputs are the three fields of
:data:`OBSERVATION_KEYS` in that group (``self_state`` ``[E, R, 7]`` in the robot frame,
``objects`` ``[E, R, K, 5]``, ``objects_mask`` ``[E, R, K]``; docs/environment.md).
This module imports nothing of marinenav, so the simulator, environments, policies, agents
and the trainer can all read their names from here.
"""

from __future__ import annotations

import torch

GROUP = "agents"
"""The tensordict group holding the per-robot entries (batch ``[E, R]``)."""

OBSERVATION_KEYS = ("self_state", "objects", "objects_mask")
"""The observation fields inside :data:`GROUP`, in the networks' argument order."""

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float64": torch.float64}
"""The config's ``env.dtype`` names and the floating-point types they stand for."""


def dtype_named(name: str) -> torch.dtype:
    """The torch dtype of a config dtype name (``"float32"`` or ``"float64"``); a clear error
    for any other name."""
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {name!r}") from None
