"""COLREGs head-on and crossing zones and the turn-angle penalty
(docs/simulator.md, "The model in equations").

For each of a robot's (up to 5) perceived objects, nearest first, the robot is placed in the
frame of the other vessel (origin at the vessel, x along its velocity). If the robot is in the
head-on zone or the left-crossing (give-way) zone, the turn angle ``phi`` from the robot's
course to the tangent that passes the inflated object on its port side is computed; the rule
applies if ``phi > 0`` (a starboard turn is still needed). The first object for which it
applies decides ``phi``. A ``NaN`` angle (robot inside the inflated radius) compares false and
gives no penalty, as in the original (docs/simulator.md, "Faithful quirks").
"""

from __future__ import annotations

import math

import torch

from marinenav.sim.dynamics import world_to_body

STATIC_SPEED = 0.5  # m/s: objects (and an ego) slower than this are ignored
HEAD_ON_X = (0.0, 17.0)  # m, ahead of the other vessel
HEAD_ON_Y = (-4.5, 4.5)
HEAD_ON_COURSE = 0.75 * math.pi  # |beta| above this: roughly opposing courses
CROSSING_X = (-9.0, 12.0)
CROSSING_Y = (-17.0, 0.0)
CROSSING_FRONT_SLOPE = -7.0 / 12.0  # cuts the triangle (0, 0), (12, 0), (12, -7)
CROSSING_COURSE = (0.25 * math.pi, 0.75 * math.pi)
PASSING_MARGIN = 1.0  # m added to the object's radius


def wrap_once_to_pi(angle: torch.Tensor) -> torch.Tensor:
    """One wrap into ``[-pi, pi)``, as the original's: exact for the sums of two wrapped angles used
    here (``marinenav.angles.wrap_to_pi`` wraps any angle)."""
    two_pi = 2 * math.pi
    return torch.where(
        angle < -math.pi, angle + two_pi, torch.where(angle >= math.pi, angle - two_pi, angle)
    )


def colregs_turn(
    objects: torch.Tensor,
    objects_mask: torch.Tensor,
    ego_velocity: torch.Tensor,
    ego_radius: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Whether COLREGs apply and the turn angle, per robot.

    Args:
        objects: ``[E, R, 5, 5]`` perceived objects, robot frame (x, y, vx, vy, radius).
        objects_mask: ``[E, R, 5]`` bool.
        ego_velocity: ``[E, R, 2]`` over-ground velocity in the robot frame (m/s).
        ego_radius: ``[E, R]`` m.

    Returns:
        ``apply [E, R]`` bool and ``phi [E, R]`` (rad, 0 where not applied).
    """
    px, py, vx, vy, obj_radius = objects.unbind(-1)
    ego = ego_velocity.unsqueeze(2)  # [E, R, 1, 2]
    moving = (torch.hypot(vx, vy) >= STATIC_SPEED) & (
        torch.linalg.vector_norm(ego, dim=-1) >= STATIC_SPEED
    )
    # Ego position and velocity in the other vessel's frame.
    alpha = torch.atan2(vy, vx)
    cos_a, sin_a = torch.cos(alpha), torch.sin(alpha)
    position = -world_to_body(torch.stack((px, py), dim=-1), cos_a, sin_a)
    course_vec = world_to_body(ego.expand_as(position), cos_a, sin_a)
    beta = torch.atan2(course_vec[..., 1], course_vec[..., 0])
    x, y = position.unbind(-1)
    head_on = (
        (x >= HEAD_ON_X[0])
        & (x <= HEAD_ON_X[1])
        & (y >= HEAD_ON_Y[0])
        & (y <= HEAD_ON_Y[1])
        & (beta.abs() > HEAD_ON_COURSE)
    )
    crossing = (
        (x >= CROSSING_X[0])
        & (x <= CROSSING_X[1])
        & (y >= CROSSING_Y[0])
        & (y <= CROSSING_Y[1])
        & ~(y > CROSSING_FRONT_SLOPE * x)
        & (beta >= CROSSING_COURSE[0])
        & (beta <= CROSSING_COURSE[1])
    )
    # Turn angle to the port-side tangent of the inflated object.
    course = torch.atan2(ego[..., 1], ego[..., 0])
    bearing = torch.atan2(py, px)
    inflated = obj_radius + PASSING_MARGIN
    dist = torch.hypot(px, py)
    delta1 = torch.asin(inflated / dist)
    delta2 = torch.atan2(
        ego_radius.unsqueeze(-1).expand_as(dist), torch.sqrt(dist**2 - inflated**2)
    )
    desired = wrap_once_to_pi(bearing + delta1 + delta2)
    phi = wrap_once_to_pi(desired - course)
    applies = objects_mask & moving & (head_on | crossing) & (phi > 0)  # NaN > 0 is false
    first = applies & (torch.cumsum(applies.to(torch.int8), dim=-1) == 1)
    apply = applies.any(dim=-1)
    phi_first = torch.where(first, phi, torch.zeros_like(phi)).sum(dim=-1)
    return apply, phi_first
