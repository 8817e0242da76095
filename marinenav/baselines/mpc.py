"""The original's sampling model-predictive controller (MPC), batched (docs/baselines.md).

All geometry in the ROS robot frame (x forward, y to port; m, m/s). Every candidate's cost:

- goal term ``20 (|wrap(heading_next - atan2(g))| - 0.15 g . V_next / |g|)``;
- a horizon of ``T = 5`` steps of 0.2 s: the own ship starts at the origin with its velocity
  ``v`` and the candidate's linear acceleration ``a`` and moves ``p += 0.2 v; v += 0.2 a``; at
  the horizon's end (the node scores that one position, not each step), for every object moved
  to ``p_obj + 1.0 s * w`` (constant velocity over the horizon) with clearance
  ``dis = |p - p_obj| - r_own - r_obj < 10``:
  ``(1 / (T 0.2)) (10 / max(dis, 9))^4 ((10 - dis) + 50 [dis < 0])``, and for each of the
  object's COLREGs points ``q`` (its four virtual obstacles when the own ship is in its zone,
  else the object's unmoved position; none when the object or the own ship moves slower than
  0.5 m/s) that the own ship overlaps, ``10 + 2``;
- energy ``0.0005 (|l| + |r_t|) * 1.0 s`` of the candidate's thrusts.

The lowest cost wins. Variants: ``"textbook"`` (default) predicts each candidate, and charges
its energy, with its thrusts clamped to the motor limits; ``"original"`` is the node's, with the
unclamped thrusts (up to 1,500 N, down to -1,000 N). The node reads stale object radii after its
first call (a list it never clears); both variants use the current observed radii
(docs/baselines.md#mpc says why).
"""

from __future__ import annotations

from typing import Literal

import torch

from marinenav.angles import wrap_to_pi
from marinenav.baselines.policy import BaselinePolicy
from marinenav.baselines.prediction import (
    CandidatePrediction,
    RosObservation,
    colregs_points,
)

MPC_VARIANTS = ("textbook", "original")


class MPCPolicy(BaselinePolicy):
    """Sampling MPC over the 25 discrete thrust changes.

    Args:
        variant: ``"textbook"`` (candidates predicted and charged with clamped thrusts) or
            ``"original"`` (the node: with the unclamped thrusts); both use current radii.
        horizon_steps: ``T``.
        horizon_step: the rollout's step (s).
        object_lookahead: how far ahead objects are moved, once (s; the node's 1.0).
        goal_weight, speed_weight: the goal term's factors (20, 0.15).
        safe_distance: clearance under which an object costs (m; 10).
        near_floor: clearance floor of the ``(safe / max(dis, floor))^4`` factor (m; 9).
        collision_cost: extra cost of a negative clearance (50).
        colregs_cost: cost of overlapping a COLREGs point (10 + 2).
        energy_weight, energy_time: energy term ``w (|l| + |r_t|) t`` (0.0005 per N, 1.0 s).
        **kwargs: :class:`BaselinePolicy` arguments (own radius, planning period, keys).
    """

    name = "mpc"

    def __init__(
        self,
        variant: Literal["textbook", "original"] = "textbook",
        horizon_steps: int = 5,
        horizon_step: float = 0.2,
        object_lookahead: float = 1.0,
        goal_weight: float = 20.0,
        speed_weight: float = 0.15,
        safe_distance: float = 10.0,
        near_floor: float = 9.0,
        collision_cost: float = 50.0,
        colregs_cost: float = 12.0,
        energy_weight: float = 0.0005,
        energy_time: float = 1.0,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if variant not in MPC_VARIANTS:
            raise ValueError(f"MPC variant must be one of {MPC_VARIANTS}, got {variant!r}")
        if horizon_steps < 1 or not horizon_step > 0:
            raise ValueError("horizon_steps must be at least 1 and horizon_step positive")
        self.variant = variant
        self.clamp_thrust = variant == "textbook"
        self.horizon_steps, self.horizon_step = int(horizon_steps), float(horizon_step)
        self.object_lookahead = float(object_lookahead)
        self.goal_weight, self.speed_weight = float(goal_weight), float(speed_weight)
        self.safe_distance, self.near_floor = float(safe_distance), float(near_floor)
        self.collision_cost, self.colregs_cost = float(collision_cost), float(colregs_cost)
        self.energy_weight, self.energy_time = float(energy_weight), float(energy_time)
        # elapsed steps t = 1..T, and t (t - 1) / 2: the Euler rollout in closed form
        steps = torch.arange(1, self.horizon_steps + 1, dtype=torch.float64)
        self.register_buffer("_steps", steps, persistent=False)
        self.register_buffer("_accel_steps", steps * (steps - 1) / 2, persistent=False)

    def costs(self, obs: RosObservation, pred: CandidatePrediction) -> torch.Tensor:
        """``B + [C]`` the candidates' costs (lower is better)."""
        dtype, device = obs.goal.dtype, obs.goal.device
        tiny = torch.finfo(dtype).tiny
        goal = obs.goal.unsqueeze(-2)  # B + [1, 2]
        goal_dist = torch.linalg.vector_norm(goal, dim=-1).clamp_min(tiny)
        turn = wrap_to_pi(pred.heading - torch.atan2(goal[..., 1], goal[..., 0])).abs()
        progress = (goal * pred.velocity).sum(-1) / goal_dist
        cost = self.goal_weight * (turn - self.speed_weight * progress)  # B + [C]

        # own positions after t = 1..T steps: p_t = h t v + h^2 t (t - 1) / 2 a; B + [C, T, 2]
        h = self.horizon_step
        t = self._steps.to(device=device, dtype=dtype).unsqueeze(-1)
        tt = self._accel_steps.to(device=device, dtype=dtype).unsqueeze(-1)
        own = (h * t) * obs.velocity[..., None, None, :] + (h * h * tt) * pred.acceleration[
            ..., None, :
        ]  # fmt: skip
        # the node scores the horizon's end only (computeCost after the rollout): B + [C, 1, 2]
        own = own[..., -1:, :]
        radii = self.own_radius + obs.objects_radius  # B + [K]

        # x and y apart: broadcasting over a trailing dimension of 2 is several times slower
        own_x, own_y = own[..., 0].unsqueeze(-1), own[..., 1].unsqueeze(-1)  # B + [C, T, 1]
        moved = obs.objects_pos + self.object_lookahead * obs.objects_vel  # B + [K, 2]
        dx = own_x - moved[..., None, None, :, 0]  # B + [C, T, K]
        dy = own_y - moved[..., None, None, :, 1]
        dis = torch.sqrt(dx * dx + dy * dy) - radii[..., None, None, :]
        near = self.safe_distance / dis.clamp_min(self.near_floor)
        penalty = (self.safe_distance - dis) + torch.where(dis < 0, self.collision_cost, 0.0)
        duration = self.horizon_steps * h
        near_cost = near**4 * penalty / duration
        counted = (dis < self.safe_distance) & obs.mask[..., None, None, :]
        cost = cost + torch.where(counted, near_cost, 0.0).sum(dim=(-2, -1))

        zones = colregs_points(obs)
        # the virtual obstacles in a zone, else the object's own (unmoved) position
        points = torch.cat((obs.objects_pos.unsqueeze(-2), zones.virtual), dim=-2)  # B+[K,5,2]
        in_zone = zones.in_zone.unsqueeze(-1)
        # the node's check_COLREGs gives an object no point unless it and the own ship move
        itself = (~zones.in_zone & zones.moving).unsqueeze(-1)
        use = torch.cat(
            (itself, in_zone.expand(*zones.in_zone.shape, zones.virtual.shape[-2])), dim=-1
        ) & obs.mask.unsqueeze(-1)  # B + [K, 5]
        reach = radii.unsqueeze(-1).expand(use.shape)  # B + [K, 5] r_own + r_obj
        use = (use & (reach > 0)).flatten(-2)  # B + [K * 5]; no overlap with a reach <= 0
        px, py = points[..., 0].flatten(-2), points[..., 1].flatten(-2)  # B + [K * 5]
        dx = own_x - px[..., None, None, :]  # B + [C, T, K * 5]
        dy = own_y - py[..., None, None, :]
        # |own - q| - reach < 0, squared (reach > 0)
        overlap = dx * dx + dy * dy < (reach * reach).flatten(-2)[..., None, None, :]
        hits = (overlap & use[..., None, None, :]).sum(dim=(-2, -1))
        cost = cost + self.colregs_cost * hits.to(dtype)

        energy = self.energy_weight * pred.thrust.abs().sum(-1) * self.energy_time
        return cost + energy

    def scores(self, obs: RosObservation, pred: CandidatePrediction) -> torch.Tensor:
        """``B + [C]`` the negated costs."""
        return -self.costs(obs, pred)

    def extra_repr(self) -> str:
        return (
            f"variant={self.variant!r}, horizon={self.horizon_steps} x {self.horizon_step} s, "
            f"{super().extra_repr()}"
        )
