"""TorchRL environment over the simulator, and Gymnasium adapters."""

from marinenav.envs.gym_adapter import (
    MarineNavSingleEnv,
    MarineNavVectorEnv,
    flatten_observation,
    register,
)
from marinenav.envs.marinenav_env import GROUP, MarineNavEnv, step_and_reset, transition

register()  # gymnasium.make("marinenav/MarineNav-v0") / gymnasium.make_vec(...)

__all__ = [
    "GROUP",
    "MarineNavEnv",
    "MarineNavSingleEnv",
    "MarineNavVectorEnv",
    "flatten_observation",
    "register",
    "step_and_reset",
    "transition",
]
