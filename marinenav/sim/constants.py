"""Default constants of the original simulator (environment, vessel, perception) and the
info-state codes.

Every value here is a default for *generated* scenarios. A scenario loaded from the original's
JSON layout carries its own copy of each per-environment and per-robot constant, and those win.
Units: metres, seconds, radians, newtons, kilograms.
"""

from __future__ import annotations

import enum
import math

# --- environment ------------------------------------------------------------------------------
ENV_DEFAULTS: dict[str, float | list[float]] = {
    "width": 55.0,  # map x-extent (m)
    "height": 55.0,  # map y-extent (m)
    "r": 0.5,  # vortex core radius (m)
    "v_rel_max": 1.0,  # same-direction core separation speed (m/s)
    "p": 0.8,  # opposite-direction core separation ratio
    "v_range": [3.0, 3.0],  # tangential speed at the core edge (m/s)
    "obs_r_range": [1.0, 1.0],  # obstacle radius range (m)
    "clear_r": 10.0,  # clearance around starts and goals (m)
    "timestep_penalty": -0.1,  # reward per step
    "COLREGs_penalty": -0.1,  # multiplied by the turn angle (rad)
    "collision_penalty": -5.0,
    "goal_reward": 10.0,
    "angular_speed_max": math.pi / 2,  # unused by the original, kept for JSON round trips
    "angular_speed_penalty": -1.0,  # unused by the original, kept for JSON round trips
}

MAX_EPISODE_STEPS = 1000  # the env flags timeout when the pre-increment counter reaches this
SCENARIO_ATTEMPTS = 500  # shared attempt budget per entity kind in scenario generation
START_GOAL_MARGIN = 2.0  # starts and goals are drawn from [2, W-2] x [2, H-2]
OBSTACLE_MARGIN = 5.0  # obstacle centres are drawn from [5, W-5] x [5, H-5]

# --- WAM-V 16 vessel ---------------------------------------------------------------------------
_LENGTH, _WIDTH = 5.0, 2.5
ROBOT_DEFAULTS: dict[str, float | list[float]] = {
    "dt": 0.05,  # sub-step (s)
    "N": 10,  # sub-steps per environment step
    "length": _LENGTH,
    "width": _WIDTH,
    "detect_r": 0.5 * math.sqrt(_LENGTH**2 + _WIDTH**2),  # circumscribed circle (m)
    "r": 0.5 * math.sqrt(_LENGTH**2 + _WIDTH**2),  # collision radius (m)
    "goal_dis": 2.0,  # goal reached within this distance (m)
    "power_coefficient": 1.0,
    "min_thrust": -500.0,  # N
    "max_thrust": 1000.0,  # N
    "left_thrust_change": [0.0, -500.0, -1000.0, 500.0, 1000.0],  # N/s, discrete table
    "right_thrust_change": [0.0, -500.0, -1000.0, 500.0, 1000.0],
    "m": 400.0,
    "Izz": 450.0,
    "xDotU": 20.0,
    "yDotV": 0.0,
    "yDotR": 0.0,
    "nDotR": -980.0,
    "nDotV": 0.0,
    "xU": -100.0,
    "xUU": -150.0,
    "yV": -100.0,
    "yVV": -150.0,
    "yR": 0.0,
    "yRV": 0.0,
    "yVR": 0.0,
    "yRR": 0.0,
    "nR": -980.0,
    "nRR": -950.0,
    "nV": 0.0,
    "nVV": 0.0,
    "nRV": 0.0,
    "nVR": 0.0,
}

# Hydrodynamic coefficient names, in the order of the last axis of ``Scenario.hydro``.
HYDRO_KEYS: tuple[str, ...] = (
    "m", "Izz", "xDotU", "yDotV", "yDotR", "nDotR", "nDotV", "xU", "xUU", "yV", "yVV",
    "yR", "yRV", "yVR", "yRR", "nR", "nRR", "nV", "nVV", "nRV", "nVR",
)  # fmt: skip

# Continuous actions in [-1, 1] map to thrust change rates of 1000 * a N/s.
CONTINUOUS_THRUST_RATE = 1000.0
NUM_DISCRETE_ACTIONS = 25  # 5 x 5 thrust-change pairs

# --- perception -------------------------------------------------------------------------------
PERCEPTION_DEFAULTS: dict[str, float] = {
    "range": 20.0,  # m
    "angle": 2 * math.pi,  # sector width (rad)
    "max_obj_num": 5,
    "pos_std": 0.05,  # m
    "vel_std": 0.05,  # m/s
    "r_kappa": 1.0,  # von Mises concentration of the radius noise
    "r_mean_ratio": 0.8,
}
MAX_OBJECTS = 5  # observation slots per robot
SELF_STATE_DIM = 7
OBJECT_DIM = 5


class InfoState(enum.IntEnum):
    """Per-robot outcome of a step, the original's ``info["state"]`` strings as integers."""

    NORMAL = 0
    COLLISION = 1
    REACH_GOAL = 2
    TOO_LONG_EPISODE = 3
    DEACTIVATED_AFTER_COLLISION = 4
    DEACTIVATED_AFTER_REACHING_GOAL = 5
    EMPTY_SLOT = 6  # padding: no robot in this slot
    TRAFFIC = 7  # a vessel the policy does not steer (docs/simulator.md, "Traffic")


INFO_LABELS: dict[str, InfoState] = {
    "normal": InfoState.NORMAL,
    "collision": InfoState.COLLISION,
    "reach goal": InfoState.REACH_GOAL,
    "too long episode": InfoState.TOO_LONG_EPISODE,
    "deactivated after collision": InfoState.DEACTIVATED_AFTER_COLLISION,
    "deactivated after reaching goal": InfoState.DEACTIVATED_AFTER_REACHING_GOAL,
}
INFO_NAMES: dict[InfoState, str] = {state: label for label, state in INFO_LABELS.items()}
INFO_NAMES[InfoState.EMPTY_SLOT] = "empty slot"
INFO_NAMES[InfoState.TRAFFIC] = "traffic"


class VesselRole(enum.IntEnum):
    """Who steers a vessel (docs/simulator.md, "Traffic"). Every vessel of the paper's
    scenarios is ``POLICY``; the others are traffic that does not give way."""

    POLICY = 0  # steered by the policy: it acts, learns and counts for success
    HOLD = 1  # holds course and speed: keeps the thrusts it starts with
    ROUTE = 2  # steers for its route's waypoints in turn, then holds its course


ROLE_NAMES: dict[str, VesselRole] = {role.name.lower(): role for role in VesselRole}
MAX_WAYPOINTS = 4  # waypoints of a route vessel (the route's padded length)
