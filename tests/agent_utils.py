"""Shared helpers for the agents' tests: random training batches."""

from __future__ import annotations

import torch
from tensordict import TensorDict


def observation(batch: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A random robot observation batch (robot frame, raw SI-like magnitudes)."""
    return {
        "self_state": torch.randn(batch, 7, generator=generator) * 5,
        "objects": torch.randn(batch, 5, 5, generator=generator) * 5,
        "objects_mask": torch.rand(batch, 5, generator=generator) > 0.4,
    }


def training_batch(batch: int, action_kind: str, seed: int = 0) -> TensorDict:
    """A random flat batch with the keys of ``marinenav.agents.base`` (some terminal, some
    truncated transitions)."""
    gen = torch.Generator().manual_seed(seed)
    if action_kind == "discrete":
        action = torch.randint(0, 25, (batch,), generator=gen)
    else:
        action = torch.rand(batch, 2, generator=gen) * 2 - 1
    terminated = torch.rand(batch, 1, generator=gen) < 0.25
    truncated = (torch.rand(batch, 1, generator=gen) < 0.25) & ~terminated
    nxt = TensorDict(
        {
            **observation(batch, gen),
            "reward": torch.randn(batch, 1, generator=gen),
            "terminated": terminated,
            "done": terminated | truncated,
        },
        batch_size=[batch],
    )
    return TensorDict({**observation(batch, gen), "action": action, "next": nxt}, [batch])
