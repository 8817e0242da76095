"""Vortex-core current field (docs/simulator.md, "The model in equations").

Each core at ``c`` with circulation ``Gamma`` and radius ``r`` induces, at a query point ``q`` at
distance ``d`` from the centre, a tangential speed

* ``Gamma / (2 pi r^2) * d`` inside the core (``d <= r``, solid-body rotation),
* ``Gamma / (2 pi d)`` outside (irrotational decay),

along ``(-delta_y, delta_x)`` for a clockwise core and ``(delta_y, -delta_x)`` otherwise, where
``delta = (c - q) / d``. The original meant to skip cores "behind" nearer ones, but its skip is a
no-op (docs/simulator.md, "Faithful quirks"), so the field is the plain sum over every core,
which is what we compute.

Deviation: at exactly a core centre the original divides by zero (NaN); there we return the
limit of the solid-body law, zero. Padded core slots contribute nothing.
"""

from __future__ import annotations

import math

import torch


def current_velocity(
    points: torch.Tensor,
    core_pos: torch.Tensor,
    core_clockwise: torch.Tensor,
    core_gamma: torch.Tensor,
    core_present: torch.Tensor,
    core_radius: torch.Tensor,
) -> torch.Tensor:
    """Current velocity over ground at query points.

    Args:
        points: ``[E, P, 2]`` query positions, world frame (m).
        core_pos: ``[E, C, 2]`` core centres, world frame (m).
        core_clockwise: ``[E, C]`` bool, rotation sense.
        core_gamma: ``[E, C]`` circulation (m^2/s).
        core_present: ``[E, C]`` bool, padding mask.
        core_radius: ``[E]`` core radius (m).

    Returns:
        ``[E, P, 2]`` current velocity, world frame (m/s). Zero when ``C == 0``.
    """
    if core_pos.shape[1] == 0:
        return torch.zeros_like(points)
    radial = core_pos.unsqueeze(1) - points.unsqueeze(2)  # [E, P, C, 2], query -> core
    dist = torch.linalg.vector_norm(radial, dim=-1)  # [E, P, C]
    r = core_radius.view(-1, 1, 1)
    gamma = core_gamma.unsqueeze(1)  # [E, 1, C]
    inside = dist <= r
    safe_dist = torch.where(dist > 0, dist, torch.ones_like(dist))
    speed = torch.where(
        inside,
        gamma / (2 * math.pi * r * r) * dist,
        gamma / (2 * math.pi * safe_dist),
    )
    delta = radial / safe_dist.unsqueeze(-1)
    # clockwise: (-dy, dx); counter-clockwise: (dy, -dx)
    sense = torch.where(core_clockwise, -1.0, 1.0).to(points.dtype).unsqueeze(1)  # [E, 1, C]
    tangent = torch.stack((sense * delta[..., 1], -sense * delta[..., 0]), dim=-1)
    weight = torch.where(core_present.unsqueeze(1) & (dist > 0), speed, torch.zeros_like(speed))
    return (weight.unsqueeze(-1) * tangent).sum(dim=2)
