"""Perception (spec A5): self state, sector detection with noise, collision and goal tests,
and the 5 nearest objects in the robot frame.

Every robot slot sees the same candidate list: the obstacle slots in order, then the robot
slots in order (itself and robots that are absent or deactivated masked out), as the original
walks obstacles then robots. Noise is drawn for every candidate, detected or not, as the
original does (undetected objects still consume random numbers).

Shapes: ``E`` environments, ``R`` robot slots, ``O`` obstacle slots, ``K = O + R`` candidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from marinenav.sim.constants import MAX_OBJECTS
from marinenav.sim.dynamics import VesselState, world_to_body
from marinenav.sim.noise import VonMisesTable
from marinenav.sim.scenario import Scenario


@dataclass
class Observation:
    """What every robot slot perceives; zeros for inactive slots."""

    self_state: torch.Tensor  # [E, R, 7] (goal_x, goal_y, u, v, omega, T_L, T_R), robot frame
    objects: torch.Tensor  # [E, R, 5, 5] (x, y, vx, vy, radius), robot frame, nearest first
    objects_mask: torch.Tensor  # [E, R, 5] bool, true for a real object


@dataclass
class PerceptionNoise:
    """The random numbers one perception consumes, drawn apart from the arithmetic so that a
    compiled perception uses exactly the eager random stream."""

    gauss: torch.Tensor  # [E, R, K, 4] standard normal: position (x, y), velocity (x, y)
    radius_uniform: torch.Tensor  # [E, R, K] uniform in [0, 1), mapped to von Mises angles

    @classmethod
    def draw(
        cls,
        shape: tuple[int, int, int],
        dtype: torch.dtype,
        device: torch.device,
        generator: torch.Generator | None,
    ) -> PerceptionNoise:
        """Noise for ``shape = (E, R, K)``, drawn for every candidate, detected or not."""
        gauss = torch.randn((*shape, 4), generator=generator, dtype=dtype, device=device)
        uniform = torch.rand(shape, generator=generator, dtype=dtype, device=device)
        return cls(gauss=gauss, radius_uniform=uniform)


@dataclass
class PerceptionResult:
    observation: Observation
    collision: torch.Tensor  # [E, R] bool, contact with a detected object (true geometry)
    reach_goal: torch.Tensor  # [E, R] bool, within goal_dis of the goal


def self_state(
    pos: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    velocity: torch.Tensor,
    thrust: torch.Tensor,
    goal: torch.Tensor,
) -> torch.Tensor:
    """The 7-number self observation ``[E, R, 7]`` in the robot frame, no noise (A5.1).

    ``(goal - pos)`` and the over-ground velocity (lagged, A4.4) are rotated by ``R(theta)^T``;
    yaw rate and thrusts (N, unnormalised) are appended.
    """
    goal_body = world_to_body(goal - pos, cos, sin)
    velocity_body = world_to_body(velocity[..., :2], cos, sin)
    return torch.cat((goal_body, velocity_body, velocity[..., 2:3], thrust), dim=-1)


def perceive(
    state: VesselState,
    scenario: Scenario,
    active: torch.Tensor,
    noise: PerceptionNoise,
    radius_noise: VonMisesTable,
    robot_index: torch.Tensor,
    slot_index: torch.Tensor,
) -> PerceptionResult:
    """Perceive for every robot slot at once (A5 steps 1-5).

    Args:
        state: the robots' state, ``[E, R, ...]``: position, heading, over-ground velocity
            (one sub-step lagged) and thrusts are read.
        scenario: the same ``E`` environments' scenario; read are the robots' ``goal``,
            collision ``radius`` and ``goal_dis``, the obstacles (``obstacle_pos [E, O, 2]``,
            ``obstacle_radius``, ``obstacle_present [E, O]``) and the per-robot perception
            constants ``perception_range`` ... ``r_mean_ratio`` (``[E, R]``).
        active: ``[E, R]`` bool, robots present and not deactivated (others are invisible and
            get zero observations).
        noise: the random numbers, from :meth:`PerceptionNoise.draw` with ``(E, R, O + R)``.
        radius_noise: inverse-CDF tables covering every value of ``scenario.r_kappa``.
        robot_index: ``[R]`` int64 ``arange(R)``, made once by the caller.
        slot_index: ``[5]`` int64 ``arange(5)``, made once by the caller.
    """
    pos, theta, velocity, thrust = state.pos, state.theta, state.velocity, state.thrust
    s = scenario
    goal, radius, obstacle_pos = s.goal, s.radius, s.obstacle_pos
    E, R = theta.shape
    O = obstacle_pos.shape[1]  # noqa: E741
    K = O + R
    cos, sin = torch.cos(theta), torch.sin(theta)

    # Candidates as every robot sees them: [E, R, K, ...].
    cand_pos = torch.cat((obstacle_pos, pos), dim=1).unsqueeze(1).expand(E, R, K, 2)
    cand_vel = torch.cat((torch.zeros_like(obstacle_pos), velocity[..., :2]), dim=1)
    cand_vel = cand_vel.unsqueeze(1).expand(E, R, K, 2)
    cand_radius = torch.cat((s.obstacle_radius, radius), dim=1).unsqueeze(1).expand(E, R, K)
    not_self = robot_index.view(1, R, 1) != robot_index.view(1, 1, R)  # [1, R, R]
    robot_visible = active.unsqueeze(1) & not_self  # [E, R(ego), R(other)]
    cand_valid = torch.cat((s.obstacle_present.unsqueeze(1).expand(E, R, O), robot_visible), dim=2)

    # Noise, world frame (A5): position, velocity, then von Mises radius factor.
    gauss = noise.gauss
    noisy_pos = cand_pos + gauss[..., 0:2] * s.pos_std.view(E, R, 1, 1)
    noisy_vel = cand_vel + gauss[..., 2:4] * s.vel_std.view(E, R, 1, 1)
    x = radius_noise.angles(s.r_kappa.view(E, R, 1), noise.radius_uniform)
    rho = s.r_mean_ratio.view(E, R, 1)
    noisy_radius = cand_radius * (rho + (1 - rho) * x / math.pi)

    # Detection in the ego frame with noisy values.
    ego_cos, ego_sin = cos.unsqueeze(-1), sin.unsqueeze(-1)
    rel = world_to_body(noisy_pos - pos.unsqueeze(2), ego_cos, ego_sin)  # [E, R, K, 2]
    rel_dist = torch.linalg.vector_norm(rel, dim=-1)
    # |atan2(q_y, q_x)| <= angle / 2  <=>  q_x >= |q| cos(angle / 2), for angle in [0, 2 pi]
    sector_cos = torch.cos(0.5 * s.perception_angle.clamp(max=2 * math.pi)).unsqueeze(-1)
    detected = (
        cand_valid
        & (rel_dist <= s.perception_range.unsqueeze(-1) + noisy_radius)
        & (rel[..., 0] >= rel_dist * sector_cos)
        & active.unsqueeze(-1)
    )

    # Collision with true values, for detected objects only (A5.3, quirk A12.9).
    true_dist = torch.linalg.vector_norm(cand_pos - pos.unsqueeze(2), dim=-1)
    ego_radius = radius.unsqueeze(-1)
    collision = (detected & (true_dist - cand_radius - ego_radius <= 0)).any(dim=-1)
    reach_goal = active & (torch.linalg.vector_norm(goal - pos, dim=-1) <= s.goal_dis)

    # The 5 detected objects with the smallest noisy clearance, nearest first, stable order.
    clearance = rel_dist - noisy_radius - ego_radius
    key = torch.where(detected, clearance, torch.full_like(clearance, math.inf))
    if K < MAX_OBJECTS:
        pad = MAX_OBJECTS - K
        key = torch.nn.functional.pad(key, (0, pad), value=math.inf)
        detected = torch.nn.functional.pad(detected, (0, pad), value=False)
    order = torch.sort(key, dim=-1, stable=True).indices[..., :MAX_OBJECTS]  # [E, R, 5]
    vel_body = world_to_body(noisy_vel, ego_cos, ego_sin)
    record = torch.cat((rel, vel_body, noisy_radius.unsqueeze(-1)), dim=-1)  # [E, R, K, 5]
    if K < MAX_OBJECTS:
        record = torch.nn.functional.pad(record, (0, 0, 0, MAX_OBJECTS - K))
    objects = torch.gather(record, 2, order.unsqueeze(-1).expand(E, R, MAX_OBJECTS, 5))
    objects_mask = torch.gather(detected, 2, order) & (slot_index < s.max_obj_num.unsqueeze(-1))
    objects = torch.where(objects_mask.unsqueeze(-1), objects, torch.zeros_like(objects))

    own = self_state(pos, cos, sin, velocity, thrust, goal)
    own = torch.where(active.unsqueeze(-1), own, torch.zeros_like(own))
    return PerceptionResult(
        observation=Observation(self_state=own, objects=objects, objects_mask=objects_mask),
        collision=collision,
        reach_goal=reach_goal,
    )
