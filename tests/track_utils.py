"""Hand-built ship tracks for the COLREGs checks' and the give-way terms' tests."""

from __future__ import annotations

import math

import torch

F64 = torch.float64


def straight_legs(
    points: list[tuple[float, float]], steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions ``[steps, 2]`` (m, world: x North, y East) along straight legs through
    ``points`` (equal time per leg) and the headings (rad, clockwise from North) of each leg."""
    legs = len(points) - 1
    per_leg = (steps - 1) // legs
    pos, heading = [], []
    for k in range(legs):
        a, b = torch.tensor(points[k], dtype=F64), torch.tensor(points[k + 1], dtype=F64)
        d = b - a
        h = math.atan2(float(d[1]), float(d[0])) % (2 * math.pi)
        for i in range(per_leg):
            pos.append(a + d * i / per_leg)
            heading.append(h)
    pos.append(torch.tensor(points[-1], dtype=F64))
    heading.append(heading[-1])
    return torch.stack(pos), torch.tensor(heading, dtype=F64)
