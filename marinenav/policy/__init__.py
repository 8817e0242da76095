"""The agents' networks, action selectors, and the batched acting module ``PolicyWrapper``."""

from marinenav.policy.action_space import ActionSpace
from marinenav.policy.selectors import (
    ActionSelector,
    DeterministicSelector,
    GaussianSelector,
    GreedyQSelector,
    QuantileSelector,
)
from marinenav.policy.wrapper import PolicyWrapper

__all__ = [
    "ActionSelector",
    "ActionSpace",
    "DeterministicSelector",
    "GaussianSelector",
    "GreedyQSelector",
    "PolicyWrapper",
    "QuantileSelector",
]
