"""What both classical baselines share: the observation in the node's frame, the 25 candidate
thrust pairs and the one-step maneuvering prediction of each (docs/baselines.md).

Frames. The RL observation (``MarineNavEnv``) is in the *RL robot frame*: x forward, y to
starboard, yaw rate clockwise (seen from above). The original's planner node does its geometry in
the *ROS robot frame*: x forward, y to port, yaw rate counter-clockwise, i.e. the same quantities
with every y component and the yaw rate negated. :func:`ros_frame` turns an observation into the
ROS frame; the dynamics prediction (:func:`predict_candidates`) runs in the RL frame, as the
node's, and hands back ROS-frame results.

Shapes: ``B`` is any batch shape (``[]``, ``[N]``, ``[E, R]``, ...), ``K`` the object slots of
an observation (5), ``C = 25`` the candidates, indexed as the discrete agents' actions:
``a = 5 i + j`` means left change ``THRUST_CHANGES[i]``, right change ``THRUST_CHANGES[j]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from marinenav.sim.constants import (
    HYDRO_KEYS,
    NUM_DISCRETE_ACTIONS,
    OBJECT_DIM,
    ROBOT_DEFAULTS,
    SELF_STATE_DIM,
)
from marinenav.sim.dynamics import body_acceleration, mass_matrix_inverse

THRUST_CHANGES = tuple(ROBOT_DEFAULTS["left_thrust_change"])  # N/s, the discrete table
OWN_RADIUS = float(ROBOT_DEFAULTS["r"])  # m, the simulator's collision radius of a WAM-V
MIN_THRUST = float(ROBOT_DEFAULTS["min_thrust"])  # N
MAX_THRUST = float(ROBOT_DEFAULTS["max_thrust"])  # N
HULL_WIDTH = float(ROBOT_DEFAULTS["width"])  # m, the thrusters' moment arm is half of it
ACTION_DURATION = float(ROBOT_DEFAULTS["dt"]) * int(ROBOT_DEFAULTS["N"])  # s, one env step
PLANNING_PERIOD = ACTION_DURATION  # s; the node's is 0.25 s (4 Hz in Gazebo), ours acts at 0.5 s


def candidate_changes(dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``[C, 2]`` (left, right) thrust change rates (N/s) of the 25 discrete actions."""
    table = torch.tensor(THRUST_CHANGES, dtype=dtype)
    left, right = torch.meshgrid(table, table, indexing="ij")
    return torch.stack((left, right), dim=-1).reshape(NUM_DISCRETE_ACTIONS, 2)


def default_hydro(dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``[21]`` the WAM-V's hydrodynamic coefficients in ``HYDRO_KEYS`` order (the simulator's
    robot defaults, the node's model)."""
    return torch.tensor([float(ROBOT_DEFAULTS[key]) for key in HYDRO_KEYS], dtype=dtype)


@dataclass
class RosObservation:
    """An observation in the ROS robot frame (x forward, y to port).

    Attributes:
        goal: ``B + [2]`` goal position relative to the own ship (m).
        velocity: ``B + [2]`` own velocity over ground (m/s).
        objects_pos: ``B + [K, 2]`` object positions relative to the own ship (m).
        objects_vel: ``B + [K, 2]`` object velocities over ground (m/s).
        objects_radius: ``B + [K]`` observed object radii (m).
        mask: ``B + [K]`` bool, a real object.
    """

    goal: torch.Tensor
    velocity: torch.Tensor
    objects_pos: torch.Tensor
    objects_vel: torch.Tensor
    objects_radius: torch.Tensor
    mask: torch.Tensor


def check_observation(
    self_state: torch.Tensor, objects: torch.Tensor, objects_mask: torch.Tensor
) -> None:
    """Raise ``ValueError`` unless ``self_state B + [7]``, ``objects B + [K, 5]`` and
    ``objects_mask B + [K]`` agree (shapes only: no device read)."""
    batch = self_state.shape[:-1]
    if self_state.dim() < 1 or self_state.shape[-1] != SELF_STATE_DIM:
        raise ValueError(
            f"self_state must have shape [..., {SELF_STATE_DIM}], got {tuple(self_state.shape)}"
        )
    if objects.dim() < 2 or objects.shape[-1] != OBJECT_DIM or objects.shape[:-2] != batch:
        raise ValueError(
            f"objects must have shape [..., K, {OBJECT_DIM}] with the batch shape "
            f"{tuple(batch)} of self_state, got {tuple(objects.shape)}"
        )
    if tuple(objects_mask.shape) != tuple(objects.shape[:-1]):
        raise ValueError(
            f"objects_mask must have shape {tuple(objects.shape[:-1])} (objects' without the "
            f"last dimension), got {tuple(objects_mask.shape)}"
        )
    if not self_state.is_floating_point() or objects.dtype != self_state.dtype:
        raise ValueError(
            f"self_state and objects must share one floating dtype, got {self_state.dtype} "
            f"and {objects.dtype}"
        )


def ros_frame(
    self_state: torch.Tensor, objects: torch.Tensor, objects_mask: torch.Tensor
) -> RosObservation:
    """The RL observation (``self_state B + [7]``: goal x, y, u, v, r, thrust left, right;
    ``objects B + [K, 5]``: x, y, vx, vy, radius; ``objects_mask B + [K]``) in the ROS frame."""
    flip = self_state.new_tensor([1.0, -1.0])
    return RosObservation(
        goal=self_state[..., 0:2] * flip,
        velocity=self_state[..., 2:4] * flip,
        objects_pos=objects[..., 0:2] * flip,
        objects_vel=objects[..., 2:4] * flip,
        objects_radius=objects[..., 4],
        mask=objects_mask.bool(),
    )


@dataclass
class CandidatePrediction:
    """The one-step prediction of every candidate, ``B + [C, ...]``.

    Attributes:
        thrust: ``B + [C, 2]`` (left, right) thrusts after the change (N), clamped to the
            motor limits or not (:func:`predict_candidates`).
        velocity: ``B + [C, 2]`` predicted ROS-frame velocity ``(u_next, -v_next)`` (m/s).
        heading: ``B + [C]`` predicted ROS-frame heading change ``-r_next * planning_period``
            (rad, counter-clockwise).
        acceleration: ``B + [C, 2]`` ROS-frame linear acceleration ``(acc_u, -acc_v)`` (m/s^2).
    """

    thrust: torch.Tensor
    velocity: torch.Tensor
    heading: torch.Tensor
    acceleration: torch.Tensor


def predict_candidates(
    self_state: torch.Tensor,
    changes: torch.Tensor,
    hydro: torch.Tensor,
    planning_period: float = PLANNING_PERIOD,
    action_duration: float = ACTION_DURATION,
    clamp_thrust: bool = True,
) -> CandidatePrediction:
    """One Euler step of the Fossen 3-DOF model for each candidate thrust change.

    With the RL-frame velocity ``V = (u, v, r)`` (``self_state[..., 2:5]``; water at rest: the
    node ignores the current), the candidate's thrusts ``T + change * action_duration``
    (clamped to the motors' ``[-500, 1000]`` N when ``clamp_thrust``) give
    ``tau = (l + r_t, 0, (l - r_t) width / 2)``,
    ``acc = A^-1 (-C_RB V - (C_A + D + D_n) V + tau)`` and ``V_next = V + acc * planning_period``.

    Args:
        self_state: ``B + [7]`` RL observation (RL frame).
        changes: ``[C, 2]`` candidate (left, right) change rates (N/s).
        hydro: ``[21]`` coefficients in ``HYDRO_KEYS`` order.
        planning_period: the prediction step (s).
        action_duration: how long a change rate acts before the thrust is held (s).
        clamp_thrust: predict with the thrust the motors can give (the textbook choice); the
            node predicts, and its MPC charges energy, with the unclamped sum, which may lie
            up to 500 N beyond a limit (docs/baselines.md#the-one-step-prediction-both).
    """
    velocity = self_state[..., 2:5].unsqueeze(-2)  # B + [1, 3] (u, v, r), RL frame
    thrust = self_state[..., 5:7].unsqueeze(-2) + changes * action_duration  # B + [C, 2]
    if clamp_thrust:
        thrust = thrust.clamp(MIN_THRUST, MAX_THRUST)
    left, right = thrust[..., 0], thrust[..., 1]
    tau = torch.stack(
        (left + right, torch.zeros_like(left), (left - right) * (HULL_WIDTH / 2)), dim=-1
    )
    mass_inv = mass_matrix_inverse(hydro)
    planar = velocity[..., :2]
    acc = body_acceleration(planar, planar, velocity[..., 2], hydro, tau, mass_inv)  # B+[C,3]
    nxt = velocity + acc * planning_period
    flip = acc.new_tensor([1.0, -1.0])
    return CandidatePrediction(
        thrust=thrust,
        velocity=nxt[..., :2] * flip,
        heading=-nxt[..., 2] * planning_period,
        acceleration=acc[..., :2] * flip,
    )


# --- COLREGs virtual obstacles -------------------------------------------------------------------
STATIC_SPEED = 0.5  # m/s: a slower object, or a slower own ship, gets no COLREGs zone
VIRTUAL_SPACING = 5.0  # m between the virtual obstacles laid along the object's path
NUM_VIRTUAL = 4


@dataclass
class ColregsPoints:
    """The COLREGs virtual obstacles of every object.

    Attributes:
        virtual: ``B + [K, 4, 2]`` ROS-frame positions ``p + k 5 d``, ``k = 1..4`` (m); ``d``
            is the object's heading (left crossing) or its starboard side (head-on).
        in_zone: ``B + [K]`` bool, the own ship is in the object's left-crossing or head-on
            zone (then the virtual obstacles count).
        moving: ``B + [K]`` bool, the object and the own ship both move at 0.5 m/s or more.
            The node's ``check_COLREGs`` returns no point at all otherwise, not even the
            object's own position: its APF then gets no repulsion from that object, and its
            MPC no COLREGs cost.
    """

    virtual: torch.Tensor
    in_zone: torch.Tensor
    moving: torch.Tensor


def colregs_points(obs: RosObservation) -> ColregsPoints:
    """The virtual obstacles of each object seen by a ship with ``obs.velocity`` (ROS frame).

    The own ship in the object's frame: ``phi = atan2(w)``, ``p_own = -R(phi)^T p``,
    ``v_own = R(phi)^T v``. Left crossing: ``-9 <= x <= 12``, ``-17 <= y <= 0``, outside the
    corner triangle ``y + 7 > -(7/12)(x - 12)``, ``pi/4 < atan2(v_own) <= 3pi/4``; head-on:
    ``0 <= x <= 17``, ``|y| <= 4.5``, ``|atan2(v_own)| > 3pi/4``. Objects or own ships slower
    than 0.5 m/s are in no zone.
    """
    p, w, v = obs.objects_pos, obs.objects_vel, obs.velocity.unsqueeze(-2)  # v: B + [1, 2]
    speed = torch.linalg.vector_norm(w, dim=-1)  # B + [K]
    own_speed = torch.linalg.vector_norm(v, dim=-1)  # B + [1]
    unit = w / speed.clamp_min(torch.finfo(w.dtype).tiny).unsqueeze(-1)  # (cos phi, sin phi)
    c, s = unit[..., 0], unit[..., 1]
    px, py = -(c * p[..., 0] + s * p[..., 1]), -(-s * p[..., 0] + c * p[..., 1])
    vx, vy = c * v[..., 0] + s * v[..., 1], -s * v[..., 0] + c * v[..., 1]
    bearing = torch.atan2(vy, vx)
    crossing = (
        (px >= -9) & (px <= 12) & (py >= -17) & (py <= 0)
        & ~(py + 7 > (-7 / 12) * (px - 12))
        & (bearing > math.pi / 4) & (bearing <= 3 * math.pi / 4)
    )  # fmt: skip
    head_on = (px >= 0) & (px <= 17) & (py.abs() <= 4.5) & (bearing.abs() > 3 * math.pi / 4)
    moving = (speed >= STATIC_SPEED) & (own_speed >= STATIC_SPEED)
    crossing, head_on = crossing & moving, head_on & moving
    starboard = torch.stack((s, -c), dim=-1)  # rot(-90 deg) of the heading
    direction = torch.where(head_on.unsqueeze(-1), starboard, unit)  # B + [K, 2]
    steps = VIRTUAL_SPACING * torch.arange(1, NUM_VIRTUAL + 1, dtype=p.dtype, device=p.device)
    virtual = p.unsqueeze(-2) + steps.unsqueeze(-1) * direction.unsqueeze(-2)
    return ColregsPoints(
        virtual=virtual, in_zone=(crossing | head_on) & obs.mask, moving=moving & obs.mask
    )
