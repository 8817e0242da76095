"""Perception: self state, sector detection with noise, collision and goal tests,
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

# compact perception computes the picked (robot, candidate) pairs only when they are at most
# this share of all: picking costs about a tenth of a dense perception (measured, E = 1024 and
# 8192, 2-core CPU), so it pays below about 85% (docs/benchmarks.md)
COMPACT_FRACTION = 0.8


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
    """The 7-number self observation ``[E, R, 7]`` in the robot frame, no noise.

    ``(goal - pos)`` and the over-ground velocity (one sub-step lagged) are rotated by
    ``R(theta)^T``; yaw rate and thrusts (N, unnormalised) are appended.
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
    compact: bool = False,
) -> PerceptionResult:
    """Perceive for every robot slot at once.

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
        compact: work only where it is needed: the robots that perceive (``active``: not
            finished, not absent, environment not done) and the candidate slots some of them
            can see, picked with ``nonzero`` (data-dependent shapes: for eager CPU code, where
            picking reads nothing back from a device). Otherwise every (robot, candidate) pair
            is computed and masked: fixed shapes, for compiled and CUDA code. Both give the
            same numbers from the same noise (drawn for every pair either way).
    """
    pos, theta, velocity, thrust = state.pos, state.theta, state.velocity, state.thrust
    s = scenario
    goal, radius, obstacle_pos = s.goal, s.radius, s.obstacle_pos
    E, R = theta.shape
    O = obstacle_pos.shape[1]  # noqa: E741
    K = O + R
    cos, sin = torch.cos(theta), torch.sin(theta)

    # Candidates of each environment [E, K, ...], and which ones each robot may see [E, R, K].
    cand_pos = torch.cat((obstacle_pos, pos), dim=1)
    cand_vel = torch.cat((torch.zeros_like(obstacle_pos), velocity[..., :2]), dim=1)
    cand_radius = torch.cat((s.obstacle_radius, radius), dim=1)
    not_self = robot_index.view(1, R, 1) != robot_index.view(1, 1, R)  # [1, R, R]
    robot_visible = active.unsqueeze(1) & not_self  # [E, R(ego), R(other)]
    cand_valid = torch.cat((s.obstacle_present.unsqueeze(1).expand(E, R, O), robot_visible), dim=2)
    ego = _Ego(pos=pos, cos=cos, sin=sin, radius=radius, active=active, scenario=s)
    candidates = _Candidates(pos=cand_pos, vel=cand_vel, radius=cand_radius)

    if compact:
        rows = active.reshape(-1).nonzero().squeeze(-1)  # [N] robots that perceive
        picked_valid = cand_valid.reshape(E * R, K).index_select(0, rows)
        columns = picked_valid.any(dim=0).nonzero().squeeze(-1)  # [K'] slots someone may see
        # keep the dense path unless the picked pairs are few enough (only shapes are read)
        compact = rows.numel() * columns.numel() <= COMPACT_FRACTION * E * R * K
    if compact:
        env = torch.div(rows, R, rounding_mode="floor")
        gauss = noise.gauss.reshape(E * R, K, 4).index_select(0, rows)
        uniform = noise.radius_uniform.reshape(E * R, K).index_select(0, rows)
        if columns.numel() < K:
            picked_valid = picked_valid.index_select(1, columns)
            gauss, uniform = gauss.index_select(1, columns), uniform.index_select(1, columns)
        seen = _nearest_objects(
            ego.rows(rows), candidates.rows(env, columns), picked_valid, gauss, uniform,
            radius_noise, slot_index,
        )  # fmt: skip
        objects = seen.objects.new_zeros(E * R, MAX_OBJECTS, 5).index_copy_(0, rows, seen.objects)
        objects_mask = active.new_zeros(E * R, MAX_OBJECTS).index_copy_(0, rows, seen.mask)
        collision = active.new_zeros(E * R).index_copy_(0, rows, seen.collision)
        objects, objects_mask = objects.view(E, R, MAX_OBJECTS, 5), objects_mask.view(E, R, -1)
        collision = collision.view(E, R)
    else:
        seen = _nearest_objects(
            ego, candidates.per_robot(), cand_valid, noise.gauss, noise.radius_uniform,
            radius_noise, slot_index,
        )  # fmt: skip
        objects, objects_mask, collision = seen.objects, seen.mask, seen.collision
    reach_goal = active & (torch.linalg.vector_norm(goal - pos, dim=-1) <= s.goal_dis)

    own = self_state(pos, cos, sin, velocity, thrust, goal)
    own = torch.where(active.unsqueeze(-1), own, torch.zeros_like(own))
    return PerceptionResult(
        observation=Observation(self_state=own, objects=objects, objects_mask=objects_mask),
        collision=collision,
        reach_goal=reach_goal,
    )


@dataclass
class _Ego:
    """The perceiving robots, batch shape ``B`` (``[E, R]``, or ``[N]`` picked rows): position
    ``B + [2]``, heading cos / sin, collision radius, activity and their scenario's per-robot
    perception constants (``pos_std`` ... ``max_obj_num``, read from ``scenario``)."""

    pos: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor
    radius: torch.Tensor
    active: torch.Tensor
    scenario: Scenario | None = None
    constants: dict[str, torch.Tensor] | None = None

    CONSTANTS = ("pos_std", "vel_std", "r_kappa", "r_mean_ratio", "perception_range",
                 "perception_angle", "max_obj_num")  # fmt: skip

    def constant(self, name: str) -> torch.Tensor:
        return getattr(self.scenario, name) if self.constants is None else self.constants[name]

    def rows(self, rows: torch.Tensor) -> _Ego:
        """The robots at flat indices ``rows`` ``[N]`` of ``[E * R]``."""

        def pick(value: torch.Tensor) -> torch.Tensor:
            E, R = self.active.shape
            return value.reshape(E * R, *value.shape[2:]).index_select(0, rows)

        constants = {name: pick(self.constant(name)) for name in self.CONSTANTS}
        return _Ego(pick(self.pos), pick(self.cos), pick(self.sin), pick(self.radius),
                    pick(self.active), constants=constants)  # fmt: skip


@dataclass
class _Candidates:
    """Every environment's candidate objects ``[E, K, ...]`` (obstacle slots, then robot
    slots): true position and velocity (world frame) and radius."""

    pos: torch.Tensor
    vel: torch.Tensor
    radius: torch.Tensor

    def per_robot(self) -> _Candidates:
        """Views ``[E, 1, K, ...]`` that broadcast over the robot slots."""
        return _Candidates(self.pos.unsqueeze(1), self.vel.unsqueeze(1), self.radius.unsqueeze(1))

    def rows(self, env: torch.Tensor, columns: torch.Tensor) -> _Candidates:
        """The candidates ``columns`` ``[K']`` of environments ``env`` ``[N]``: ``[N, K', ...]``."""

        def pick(value: torch.Tensor) -> torch.Tensor:
            if columns.numel() < value.shape[1]:
                value = value.index_select(1, columns)
            return value.index_select(0, env)

        return _Candidates(pick(self.pos), pick(self.vel), pick(self.radius))


@dataclass
class _Seen:
    objects: torch.Tensor  # B + [5, 5]
    mask: torch.Tensor  # B + [5]
    collision: torch.Tensor  # B


def _nearest_objects(
    ego: _Ego,
    cand: _Candidates,
    cand_valid: torch.Tensor,
    gauss: torch.Tensor,
    radius_uniform: torch.Tensor,
    radius_noise: VonMisesTable,
    slot_index: torch.Tensor,
) -> _Seen:
    """Detection, collision and the 5 nearest detected objects of robots with batch shape
    ``B``, against ``K`` candidates (``cand``: ``B + [K, ...]`` or broadcastable to it;
    ``cand_valid``, ``radius_uniform``: ``B + [K]``; ``gauss``: ``B + [K, 4]``)."""
    c = ego.constant
    pos_std, vel_std = c("pos_std").unsqueeze(-1), c("vel_std").unsqueeze(-1)
    # Noise, world frame: position, velocity, then von Mises radius factor.
    noisy_pos = cand.pos + gauss[..., 0:2] * pos_std.unsqueeze(-1)
    noisy_vel = cand.vel + gauss[..., 2:4] * vel_std.unsqueeze(-1)
    x = radius_noise.angles(c("r_kappa").unsqueeze(-1), radius_uniform)
    rho = c("r_mean_ratio").unsqueeze(-1)
    noisy_radius = cand.radius * (rho + (1 - rho) * x / math.pi)

    # Detection in the ego frame with noisy values.
    ego_cos, ego_sin = ego.cos.unsqueeze(-1), ego.sin.unsqueeze(-1)
    rel = world_to_body(noisy_pos - ego.pos.unsqueeze(-2), ego_cos, ego_sin)  # B + [K, 2]
    rel_dist = torch.linalg.vector_norm(rel, dim=-1)
    # |atan2(q_y, q_x)| <= angle / 2  <=>  q_x >= |q| cos(angle / 2), for angle in [0, 2 pi]
    sector_cos = torch.cos(0.5 * c("perception_angle").clamp(max=2 * math.pi)).unsqueeze(-1)
    detected = (
        cand_valid
        & (rel_dist <= c("perception_range").unsqueeze(-1) + noisy_radius)
        & (rel[..., 0] >= rel_dist * sector_cos)
        & ego.active.unsqueeze(-1)
    )

    # Collision with true values, for detected objects only (a kept quirk).
    true_dist = torch.linalg.vector_norm(cand.pos - ego.pos.unsqueeze(-2), dim=-1)
    ego_radius = ego.radius.unsqueeze(-1)
    collision = (detected & (true_dist - cand.radius - ego_radius <= 0)).any(dim=-1)

    # The 5 detected objects with the smallest noisy clearance, nearest first, stable order.
    clearance = rel_dist - noisy_radius - ego_radius
    key = torch.where(detected, clearance, torch.full_like(clearance, math.inf))
    K = key.shape[-1]
    if K < MAX_OBJECTS:
        key = torch.nn.functional.pad(key, (0, MAX_OBJECTS - K), value=math.inf)
        detected = torch.nn.functional.pad(detected, (0, MAX_OBJECTS - K), value=False)
    order = torch.sort(key, dim=-1, stable=True).indices[..., :MAX_OBJECTS]  # B + [5]
    vel_body = world_to_body(noisy_vel, ego_cos, ego_sin)
    noisy_radius = noisy_radius.expand(rel_dist.shape)
    record = torch.cat((rel, vel_body, noisy_radius.unsqueeze(-1)), dim=-1)  # B + [K, 5]
    if K < MAX_OBJECTS:
        record = torch.nn.functional.pad(record, (0, 0, 0, MAX_OBJECTS - K))
    index = order.unsqueeze(-1).expand(*order.shape, 5)
    objects = torch.gather(record, -2, index)
    mask = torch.gather(detected, -1, order) & (slot_index < c("max_obj_num").unsqueeze(-1))
    objects = torch.where(mask.unsqueeze(-1), objects, torch.zeros_like(objects))
    return _Seen(objects=objects, mask=mask, collision=collision)
