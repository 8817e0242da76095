"""The original's classical planners, APF and MPC, as batched discrete policies
(docs/baselines.md).

``baseline_policy("apf" | "mpc", variant=...)`` gives a TorchRL policy that reads
``("agents", self_state | objects | objects_mask)`` and writes the int64 discrete action index
``("agents", "action")``, like a discrete agent's policy.
"""

from __future__ import annotations

from typing import Any

from marinenav.baselines.apf import APF_VARIANTS, APFPolicy
from marinenav.baselines.mpc import MPC_VARIANTS, MPCPolicy
from marinenav.baselines.policy import BaselinePolicy

BASELINES: dict[str, type[BaselinePolicy]] = {"apf": APFPolicy, "mpc": MPCPolicy}
VARIANTS: dict[str, tuple[str, ...]] = {"apf": APF_VARIANTS, "mpc": MPC_VARIANTS}


def baseline_policy(name: str, variant: str = "textbook", **kwargs: Any) -> BaselinePolicy:
    """The baseline ``name`` (``"apf"`` or ``"mpc"``) with ``variant`` and keyword arguments of
    its class; raises ``ValueError`` for an unknown name or variant."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    return BASELINES[name](variant=variant, **kwargs)


__all__ = ["APFPolicy", "BASELINES", "BaselinePolicy", "MPCPolicy", "VARIANTS", "baseline_policy"]
