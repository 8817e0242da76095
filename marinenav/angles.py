"""Angle wrapping, the one place for it, and the relative bearing it gives.

Every function works element-wise on a tensor of any shape and keeps its dtype and device.
The simulator's own one-step wrap (the original's, exact only for sums of two wrapped angles)
is :func:`marinenav.sim.colregs.wrap_once_to_pi`; it is not this and must not become it.
"""

from __future__ import annotations

import math

import torch

__all__ = ["bearing", "wrap_to_pi", "wrap_to_180", "wrap_to_360"]


def wrap_to_pi(angle: torch.Tensor) -> torch.Tensor:
    """``angle`` (rad, any value) wrapped into ``[-pi, pi)``."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def wrap_to_180(angle: torch.Tensor) -> torch.Tensor:
    """``angle`` (deg, any value) wrapped into ``[-180, 180)``."""
    return torch.remainder(angle + 180.0, 360.0) - 180.0


def wrap_to_360(angle: torch.Tensor) -> torch.Tensor:
    """``angle`` (deg, any value) wrapped into ``[0, 360)``."""
    return torch.remainder(angle, 360.0)


def bearing(frm: torch.Tensor, heading: torch.Tensor, to: torch.Tensor) -> torch.Tensor:
    """Relative bearing (deg in [0, 360), clockwise from the bow) of point ``to [..., 2]`` from a
    ship at ``frm [..., 2]`` heading ``heading [...]`` (rad, clockwise from North; world x is
    North, y East)."""
    d = to - frm
    absolute = torch.rad2deg(torch.atan2(d[..., 1], d[..., 0]))
    return wrap_to_360(absolute - torch.rad2deg(heading))
