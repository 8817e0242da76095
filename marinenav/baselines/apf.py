"""The original's artificial potential field (APF) planner, batched (docs/baselines.md).

All geometry in the ROS robot frame (x forward, y to port; m, m/s). The field at the own ship:
attraction ``F_att = 50 g`` to the goal ``g``, plus, for every object closing in
(``(v - w) . p / |p| > 0``) and each of its points ``q`` (the object itself, and its four COLREGs
virtual obstacles when the own ship is in its left-crossing or head-on zone), with the
clearance ``d = |q| - r_own - r_obj``, ``d_g = |g|``:

- ``F1 = k_rep (1/d - 1/d0) d_g^n / d^2 * (-q/|q|)`` (away from the point),
- ``F2 = (n/2) k_rep (1/d - 1/d0)^2 d_g^(n-1) * (-g/d_g)``,

with ``k_rep = 500``, ``d0 = 15`` m, ``n = 2``. Each candidate scores
``0.15 F . V_next / |F| - |wrap(heading_next - atan2(F))|``; the highest wins.

Variants: ``"textbook"`` (default) repels only points with ``d < d0``, floors ``d`` at
``min_clearance`` (a point at or inside contact repels as one at that clearance rather than
flipping sign) and predicts each candidate with its thrusts clamped to the motor limits;
``"original"`` is the node's arithmetic, applying the repulsion at every distance, where
``1/d - 1/d0 < 0`` turns it into an attraction beyond ``d0``, and predicting with the unclamped
thrusts (up to 1,500 N, down to -1,000 N).
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

APF_VARIANTS = ("textbook", "original")


class APFPolicy(BaselinePolicy):
    """Artificial potential field over the 25 discrete thrust changes.

    Args:
        variant: ``"textbook"`` (every approached object repels, within
            ``influence_distance`` only; candidates predicted with clamped thrusts) or
            ``"original"`` (the node: repel, or attract, at every distance, and only from
            objects that move while the own ship moves, both at 0.5 m/s or more: its
            check_COLREGs gives a static object no point; candidates predicted with the
            unclamped thrusts).
        k_att: attraction gain (N/m in the node's units, a pure weight here).
        k_rep: repulsion gain.
        influence_distance: ``d0`` (m).
        power: ``n``, the goal-distance exponent of the repulsion.
        speed_weight: weight of the velocity projection in the score (s/m per rad).
        min_clearance: the textbook variant's floor of ``d`` (m).
        **kwargs: :class:`BaselinePolicy` arguments (own radius, planning period, keys).
    """

    name = "apf"

    def __init__(
        self,
        variant: Literal["textbook", "original"] = "textbook",
        k_att: float = 50.0,
        k_rep: float = 500.0,
        influence_distance: float = 15.0,
        power: float = 2.0,
        speed_weight: float = 0.15,
        min_clearance: float = 0.1,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if variant not in APF_VARIANTS:
            raise ValueError(f"APF variant must be one of {APF_VARIANTS}, got {variant!r}")
        if not influence_distance > 0 or not min_clearance > 0:
            raise ValueError("influence_distance and min_clearance must be positive")
        self.variant = variant
        self.clamp_thrust = variant == "textbook"
        self.k_att, self.k_rep = float(k_att), float(k_rep)
        self.influence_distance, self.power = float(influence_distance), float(power)
        self.speed_weight, self.min_clearance = float(speed_weight), float(min_clearance)

    def force(self, obs: RosObservation) -> torch.Tensor:
        """``B + [2]`` the total force ``F_att + sum (F1 + F2)`` (ROS frame)."""
        tiny = torch.finfo(obs.goal.dtype).tiny
        goal = obs.goal
        goal_dist = torch.linalg.vector_norm(goal, dim=-1).clamp_min(tiny)  # B
        p, w = obs.objects_pos, obs.objects_vel  # B + [K, 2]
        dist = torch.linalg.vector_norm(p, dim=-1).clamp_min(tiny)  # B + [K]
        closing = ((obs.velocity.unsqueeze(-2) - w) * p).sum(-1) / dist > 0
        zones = colregs_points(obs)
        points = torch.cat((p.unsqueeze(-2), zones.virtual), dim=-2)  # B + [K, 5, 2]
        # the object itself: always in the textbook form; in the node's only when the object
        # and the own ship both move (its check_COLREGs returns no point otherwise)
        itself = torch.ones_like(zones.in_zone) if self.variant == "textbook" else zones.moving
        counted = torch.cat(
            (itself.unsqueeze(-1), zones.in_zone.unsqueeze(-1)
             .expand(*zones.in_zone.shape, zones.virtual.shape[-2])), dim=-1,
        ) & (obs.mask & closing).unsqueeze(-1)  # fmt: skip
        point_dist = torch.linalg.vector_norm(points, dim=-1)  # B + [K, 5]
        clearance = point_dist - self.own_radius - obs.objects_radius.unsqueeze(-1)
        d0 = self.influence_distance
        if self.variant == "textbook":
            counted = counted & (clearance < d0)
            clearance = clearance.clamp_min(self.min_clearance)
        gap = 1 / clearance - 1 / d0
        n = self.power
        dg = goal_dist[..., None, None]  # B + [1, 1]
        f1 = (self.k_rep * gap * dg**n / clearance**2).unsqueeze(-1) * (
            -points / point_dist.clamp_min(tiny).unsqueeze(-1)
        )
        away_from_goal = (-goal / goal_dist.unsqueeze(-1))[..., None, None, :]  # B + [1, 1, 2]
        f2 = (n / 2 * self.k_rep * gap**2 * dg ** (n - 1)).unsqueeze(-1) * away_from_goal
        repulsion = torch.where(counted.unsqueeze(-1), f1 + f2, 0.0).sum(dim=(-3, -2))
        return self.k_att * goal + repulsion

    def scores(self, obs: RosObservation, pred: CandidatePrediction) -> torch.Tensor:
        """``B + [C]``: ``0.15 F . V_next / |F| - |wrap(heading_next - atan2(F))|``."""
        force = self.force(obs).unsqueeze(-2)  # B + [1, 2]
        norm = torch.linalg.vector_norm(force, dim=-1).clamp_min(torch.finfo(force.dtype).tiny)
        projection = (force * pred.velocity).sum(-1) / norm
        angle = wrap_to_pi(pred.heading - torch.atan2(force[..., 1], force[..., 0])).abs()
        return self.speed_weight * projection - angle

    def extra_repr(self) -> str:
        return f"variant={self.variant!r}, {super().extra_repr()}"
