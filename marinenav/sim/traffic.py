"""Traffic that does not give way: how vessels the policy does not steer choose their thrusts
(docs/simulator.md, "Traffic").

A vessel's :class:`~marinenav.sim.constants.VesselRole` (``Scenario.robot_role``) says who steers
it. ``HOLD`` vessels hold course and speed: their thrusts stay what they start with (a steady
speed through the water on a fixed heading; a current still sets them off course, as it would a
ship on autopilot without track control). ``ROUTE`` vessels steer for the waypoints of their
route in turn, as a target ship follows its route in a ship-handling simulator: a proportional
rudder on the heading error with yaw-rate damping, made of a thrust difference around their
starting (cruise) thrust; a waypoint counts as passed within :data:`WAYPOINT_REACHED` metres, and
after the last one the vessel holds its course. Either kind changes its thrusts no faster than
the policy's own continuous actions may (``CONTINUOUS_THRUST_RATE``).

Pure tensor code over ``[E, R]`` robot slots: no host read, no loop over vessels.
"""

from __future__ import annotations

import math

import torch

from marinenav.sim.colregs import wrap_once_to_pi
from marinenav.sim.constants import CONTINUOUS_THRUST_RATE, ROBOT_DEFAULTS, VesselRole
from marinenav.sim.dynamics import VesselState
from marinenav.sim.scenario import Scenario

WAYPOINT_REACHED = 3.0  # m: a route vessel this close to its waypoint steers for the next
HEADING_GAIN = 1000.0  # N of thrust difference per rad of heading error
YAW_DAMPING = 200.0  # N of thrust difference per rad/s of yaw rate (against overshoot)
MAX_THRUST_DIFFERENCE = 600.0  # N, the largest difference a route vessel steers with

ROUTE = int(VesselRole.ROUTE)  # a plain int: torch.compile does not trace IntEnum compares


def cruise_thrust(speed: torch.Tensor) -> torch.Tensor:
    """Thrust per thruster (N) that holds ``speed`` (m/s) straight ahead through still water:
    the default vessel's surge damping ``-(X_u u + X_uu u |u|)`` shared by its two thrusters
    (a layout starts a vessel under way with it)."""
    x_u, x_uu = float(ROBOT_DEFAULTS["xU"]), float(ROBOT_DEFAULTS["xUU"])
    return -0.5 * (x_u * speed + x_uu * speed * speed.abs())


def under_way(
    heading: torch.Tensor, speed: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """How a layout starts vessels under way: on ``heading [...]`` (rad from x, North, toward y,
    East; any value) at ``speed [...]`` (m/s through the water), steady and straight ahead.

    Returns ``(init_theta [...], init_velocity_r [..., 3], init_thrust [..., 2])``: the heading
    in ``[0, 2 pi)``, the world-frame velocity relative to the water with no yaw rate, and the
    :func:`cruise_thrust` on both thrusters (the starting fields of
    :class:`~marinenav.sim.scenario.Scenario`)."""
    theta = torch.remainder(heading, 2 * math.pi)
    velocity = torch.stack(
        (speed * heading.cos(), speed * heading.sin(), torch.zeros_like(speed)), dim=-1
    )
    thrust = cruise_thrust(speed).unsqueeze(-1).expand(*speed.shape, 2)
    return theta, velocity, thrust


def advance_waypoints(
    scenario: Scenario, pos: torch.Tensor, waypoint: torch.Tensor
) -> torch.Tensor:
    """The waypoint each route vessel steers for now ``[E, R]`` int64: the one it steered for
    (``waypoint [E, R]``), or the next once it is within :data:`WAYPOINT_REACHED` of it
    (``pos [E, R, 2]`` m, world frame). ``route_length`` means "past the last one". Other
    vessels keep 0."""
    length = scenario.route_length
    index = waypoint.clamp(max=(length - 1).clamp(min=0)).unsqueeze(-1)  # [E, R, 1]
    target = scenario.route.gather(2, index.unsqueeze(-1).expand(*index.shape, 2)).squeeze(2)
    near = torch.linalg.vector_norm(target - pos, dim=-1) <= WAYPOINT_REACHED
    passing = near & (waypoint < length) & (scenario.robot_role == ROUTE)
    return waypoint + passing.to(waypoint.dtype)


def traffic_thrust_rate(
    scenario: Scenario, state: VesselState, waypoint: torch.Tensor, step_time: torch.Tensor
) -> torch.Tensor:
    """Thrust change rates ``[E, R, 2]`` (N/s, left and right) of the traffic vessels: zero for
    ``HOLD`` vessels and for ``ROUTE`` vessels past their last waypoint once their thrusts are
    back at cruise; toward ``cruise +- difference / 2`` for a route vessel steering.

    Args:
        scenario: the vessels' roles, routes and starting thrusts (the cruise thrust is the
            mean of a vessel's two ``init_thrust``).
        state: positions, headings, yaw rates and thrusts now (world frame).
        waypoint: ``[E, R]`` int64, the waypoint each route vessel steers for
            (:func:`advance_waypoints`).
        step_time: ``[E, R]`` s, one environment step (``dt * N``): the rates reach their
            target thrusts within a step where the rate limit allows.
    """
    length = scenario.route_length
    index = waypoint.clamp(max=(length - 1).clamp(min=0)).unsqueeze(-1)
    target = scenario.route.gather(2, index.unsqueeze(-1).expand(*index.shape, 2)).squeeze(2)
    to_target = target - state.pos
    bearing = torch.atan2(to_target[..., 1], to_target[..., 0])  # from x (North) toward y
    error = wrap_once_to_pi(bearing - state.theta)  # > 0: the waypoint lies to starboard
    difference = HEADING_GAIN * error - YAW_DAMPING * state.velocity_r[..., 2]
    steering = (scenario.robot_role == ROUTE) & (waypoint < length)
    difference = torch.where(steering, difference, torch.zeros_like(difference)).clamp(
        -MAX_THRUST_DIFFERENCE, MAX_THRUST_DIFFERENCE
    )
    cruise = scenario.init_thrust.mean(dim=-1, keepdim=True)  # [E, R, 1] N
    # the left thruster pushing harder turns the bow to starboard (theta grows)
    wanted = cruise + 0.5 * torch.stack((difference, -difference), dim=-1)
    rate = ((wanted - state.thrust) / step_time.unsqueeze(-1)).clamp(
        -CONTINUOUS_THRUST_RATE, CONTINUOUS_THRUST_RATE
    )
    route = (scenario.robot_role == ROUTE).unsqueeze(-1)
    return torch.where(route, rate, torch.zeros_like(rate))


__all__ = [
    "HEADING_GAIN",
    "MAX_THRUST_DIFFERENCE",
    "WAYPOINT_REACHED",
    "YAW_DAMPING",
    "advance_waypoints",
    "cruise_thrust",
    "traffic_thrust_rate",
    "under_way",
]
