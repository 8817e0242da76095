"""WAM-V 16 three-degree-of-freedom vessel dynamics, batched over ``[E, R]``
(docs/simulator.md, "The model in equations").

Fossen's maneuvering model with rigid-body and added-mass Coriolis terms, linear and quadratic
damping, and twin stern thrusters. One environment step is ``N`` sub-steps of ``dt`` with the
original's exact order of operations:

1. current sampled at the position *before* the move;
2. over-ground velocity ``velocity = velocity_r + current``;
3. explicit Euler move with that velocity, heading wrapped to ``[0, 2pi)``;
4. sub-step 0 only: thrust change applied and clipped;
5. dynamics in the body frame of the *new* heading, ``velocity_r`` updated.

After the last sub-step ``velocity`` is not recomputed: observations see a velocity one sub-step
old (docs/simulator.md, "Faithful quirks"), and so do we.

Body frame: x forward (surge), y starboard (sway). ``R(theta)`` maps body to world.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from marinenav.sim.constants import HYDRO_KEYS
from marinenav.sim.scenario import Scenario

_H = {name: i for i, name in enumerate(HYDRO_KEYS)}
TWO_PI = 2 * math.pi


def wrap_to_2pi(angle: torch.Tensor) -> torch.Tensor:
    """One wrap into ``[0, 2pi)``, exact for angles within one turn of that range.

    The original adds or subtracts 2pi in a loop; a heading changes by ``omega * dt`` (far less
    than a turn) per sub-step, so a single correction gives bit-identical results.
    """
    return torch.where(
        angle < 0, angle + TWO_PI, torch.where(angle >= TWO_PI, angle - TWO_PI, angle)
    )


def world_to_body(vec: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``R(theta)^T v`` for ``vec [..., 2]`` and heading cos/sin ``[...]``."""
    x, y = vec[..., 0], vec[..., 1]
    return torch.stack((cos * x + sin * y, -sin * x + cos * y), dim=-1)


def body_to_world(vec: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``R(theta) v`` for ``vec [..., 2]`` and heading cos/sin ``[...]``."""
    x, y = vec[..., 0], vec[..., 1]
    return torch.stack((cos * x - sin * y, sin * x + cos * y), dim=-1)


@dataclass
class VesselState:
    """Kinematic state of every robot slot; every field ``[E, R, ...]``, world frame."""

    pos: torch.Tensor  # [E, R, 2] m
    theta: torch.Tensor  # [E, R] rad in [0, 2pi)
    velocity_r: torch.Tensor  # [E, R, 3] (vx, vy, omega) relative to the water
    velocity: torch.Tensor  # [E, R, 3] (vx, vy, omega) over ground, one sub-step lagged
    thrust: torch.Tensor  # [E, R, 2] (left, right) N


def step_energy(thrust: torch.Tensor, vessel: Scenario, num_substeps: int) -> torch.Tensor:
    """Thrust energy of one environment step ``[E, R]`` (an evaluation metric, not a reward).

    ``power_coefficient * (|T_L| + |T_R|) * dt * N`` from the thrusts after the step's change
    (``thrust [E, R, 2]`` N), i.e. ``0.5 (|T_L| + |T_R|)`` with the defaults.
    """
    return vessel.power_coefficient * thrust.abs().sum(dim=-1) * vessel.dt * num_substeps


def mass_matrix_inverse(hydro: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Non-zero entries of ``A^-1`` with ``A = M_RB + M_A``, each ``[E, R]``.

    ``A = [[m - X_u', 0, 0], [0, m - Y_v', -Y_r'], [0, -N_v', Izz - N_r']]`` is block diagonal,
    so ``A^-1`` has the entries ``(i11, i22, i23, i32, i33)`` returned here. The original solves
    ``(A^T A)^-1 A^T b``, equal to ``A^-1 b`` for an invertible ``A`` (and ill-defined
    otherwise; the scenario loader rejects a singular ``A``).
    """
    h = hydro
    a11 = h[..., _H["m"]] - h[..., _H["xDotU"]]
    a22 = h[..., _H["m"]] - h[..., _H["yDotV"]]
    a23 = -h[..., _H["yDotR"]]
    a32 = -h[..., _H["nDotV"]]
    a33 = h[..., _H["Izz"]] - h[..., _H["nDotR"]]
    det = a22 * a33 - a23 * a32
    return 1 / a11, a33 / det, -a23 / det, -a32 / det, a22 / det


def mass_matrix_determinant(hydro: torch.Tensor) -> torch.Tensor:
    """``det(A)`` per robot ``[E, R]``; zero means the original's solve is singular."""
    h = hydro
    a11 = h[..., _H["m"]] - h[..., _H["xDotU"]]
    a22 = h[..., _H["m"]] - h[..., _H["yDotV"]]
    a33 = h[..., _H["Izz"]] - h[..., _H["nDotR"]]
    return a11 * (a22 * a33 - h[..., _H["yDotR"]] * h[..., _H["nDotV"]])


def thruster_forces(
    thrust: torch.Tensor, thruster_angle: torch.Tensor, length: torch.Tensor, width: torch.Tensor
) -> torch.Tensor:
    """Propulsion ``tau = (F_x, F_y, M_n)`` in the body frame, ``[E, R, 3]`` (N, N, N m).

    Args:
        thrust: ``[E, R, 2]`` (left, right) thrust (N).
        thruster_angle: ``[E, R, 2]`` (left, right) thruster angle (rad).
        length, width: ``[E, R]`` hull length and width (m), the moment arms.
    """
    cos_a, sin_a = torch.cos(thruster_angle), torch.sin(thruster_angle)
    along = thrust * cos_a  # [E, R, 2]
    across = thrust * sin_a
    force_x = along[..., 0] + along[..., 1]
    force_y = across[..., 0] + across[..., 1]
    moment = 0.5 * width * (along[..., 0] - along[..., 1]) - 0.5 * length * force_y
    return torch.stack((force_x, force_y, moment), dim=-1)


def body_acceleration(
    rel: torch.Tensor,
    ground: torch.Tensor,
    yaw_rate: torch.Tensor,
    hydro: torch.Tensor,
    tau: torch.Tensor,
    mass_inv: tuple[torch.Tensor, ...],
) -> torch.Tensor:
    """``nu_dot = A^-1 (-C_RB V - (C_A + D + D_n) V_r + tau)``, ``[E, R, 3]``.

    Args:
        rel: ``[E, R, 2]`` body-frame velocity relative to water ``(u_r, v_r)`` (m/s).
        ground: ``[E, R, 2]`` body-frame velocity over ground ``(u, v)`` (m/s).
        yaw_rate: ``[E, R]`` ``r`` (rad/s).
        hydro: ``[E, R, 21]`` coefficients in ``HYDRO_KEYS`` order.
        tau: ``[E, R, 3]`` propulsion, body frame.
        mass_inv: the entries of ``A^-1`` from :func:`mass_matrix_inverse`.
    """
    h = lambda key: hydro[..., _H[key]]  # noqa: E731
    u_r, v_r = rel[..., 0], rel[..., 1]
    u, v = ground[..., 0], ground[..., 1]
    r = yaw_rate
    abs_u_r, abs_v_r, abs_r = u_r.abs(), v_r.abs(), r.abs()
    # Rigid-body Coriolis on the over-ground vector V = (u, v, r).
    crb = (-h("m") * r * v, h("m") * r * u, torch.zeros_like(r))
    # Added-mass Coriolis on V_r.
    sway_added = h("yDotV") * v_r + h("yDotR") * r
    ca = (sway_added * r, -h("xDotU") * u_r * r, -sway_added * u_r + h("xDotU") * u_r * v_r)
    # Linear damping D and nonlinear damping D_n on V_r.
    damp = (
        -h("xU") * u_r - h("xUU") * abs_u_r * u_r,
        -h("yV") * v_r
        - h("yR") * r
        - (h("yVV") * abs_v_r + h("yRV") * abs_r) * v_r
        - (h("yVR") * abs_v_r + h("yRR") * abs_r) * r,
        -h("nV") * v_r
        - h("nR") * r
        - (h("nVV") * abs_v_r + h("nRV") * abs_r) * v_r
        - (h("nVR") * abs_v_r + h("nRR") * abs_r) * r,
    )
    b = [-crb[i] - ca[i] - damp[i] + tau[..., i] for i in range(3)]
    i11, i22, i23, i32, i33 = mass_inv
    return torch.stack((i11 * b[0], i22 * b[1] + i23 * b[2], i32 * b[1] + i33 * b[2]), dim=-1)


def integrate_step(
    state: VesselState,
    thrust_rate: torch.Tensor,
    num_substeps: int,
    vessel: Scenario,
    current_at: Callable[[torch.Tensor], torch.Tensor],
) -> VesselState:
    """Advance every robot slot by one environment step (``num_substeps`` sub-steps of ``dt``).

    Args:
        state: current state, ``[E, R, ...]``.
        thrust_rate: ``[E, R, 2]`` thrust change rates (N/s) applied at sub-step 0.
        num_substeps: ``N`` (10 in the original).
        vessel: the scenario batch whose vessel constants are used: ``dt`` (s),
            ``min_thrust`` / ``max_thrust`` (N), ``hydro`` coefficients,
            ``init_thruster_angle`` (rad), hull ``length`` and ``width_hull`` (m), all
            ``[E, R, ...]``.
        current_at: maps positions ``[E, R, 2]`` to the current ``[E, R, 2]`` (m/s, world).

    Returns:
        The new state. Robots are integrated whether active or not; the caller freezes the
        inactive ones.
    """
    pos, theta, velocity_r, thrust = state.pos, state.theta, state.velocity_r, state.thrust
    velocity = state.velocity
    dt, hydro = vessel.dt, vessel.hydro
    min_thrust, max_thrust = vessel.min_thrust, vessel.max_thrust
    mass_inv = mass_matrix_inverse(hydro)
    dt3 = dt.unsqueeze(-1)
    tau = None
    for k in range(num_substeps):
        current = current_at(pos)  # sampled before the move
        velocity = torch.cat((velocity_r[..., :2] + current, velocity_r[..., 2:]), dim=-1)
        pos = pos + velocity[..., :2] * dt3
        theta = wrap_to_2pi(theta + velocity[..., 2] * dt)
        if k == 0:
            change = thrust_rate * (dt * num_substeps).unsqueeze(-1)
            thrust = torch.minimum(
                torch.maximum(thrust + change, min_thrust.unsqueeze(-1)), max_thrust.unsqueeze(-1)
            )
            tau = thruster_forces(
                thrust, vessel.init_thruster_angle, vessel.length, vessel.width_hull
            )
        cos, sin = torch.cos(theta), torch.sin(theta)
        rel = world_to_body(velocity_r[..., :2], cos, sin)
        ground = world_to_body(velocity[..., :2], cos, sin)
        yaw_rate = velocity[..., 2]
        accel = body_acceleration(rel, ground, yaw_rate, hydro, tau, mass_inv)
        rel = rel + accel[..., :2] * dt3
        yaw_rate = yaw_rate + accel[..., 2] * dt
        velocity_r = torch.cat((body_to_world(rel, cos, sin), yaw_rate.unsqueeze(-1)), dim=-1)
    return VesselState(
        pos=pos, theta=theta, velocity_r=velocity_r, velocity=velocity, thrust=thrust
    )
