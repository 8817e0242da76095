"""Angle wrapping: the general wraps land in their half-open ranges from any angle; the
simulator's one-step wrap stays the original's (one 2 pi at most)."""

import math

import torch

from marinenav.angles import wrap_to_180, wrap_to_360, wrap_to_pi
from marinenav.sim.colregs import wrap_once_to_pi


def test_wrap_to_pi_lands_in_half_open_range_from_any_angle():
    angle = torch.tensor(
        [0.0, math.pi, -math.pi, 3 * math.pi, -7.5, 7.5, 100.0], dtype=torch.float64
    )
    wrapped = wrap_to_pi(angle)
    expected = torch.tensor(
        [
            0.0,
            -math.pi,
            -math.pi,
            -math.pi,
            -7.5 + 2 * math.pi,
            7.5 - 2 * math.pi,
            100.0 - 32 * math.pi,
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(wrapped, expected)
    assert bool(((wrapped >= -math.pi) & (wrapped < math.pi)).all())


def test_degree_wraps():
    angle = torch.tensor([180.0, -180.0, 540.0, -10.0, 359.0, 725.0])
    torch.testing.assert_close(
        wrap_to_180(angle), torch.tensor([-180.0, -180.0, -180.0, -10.0, -1.0, 5.0])
    )
    torch.testing.assert_close(
        wrap_to_360(angle), torch.tensor([180.0, 180.0, 180.0, 350.0, 359.0, 5.0])
    )


def test_once_wrap_is_the_originals_single_step():
    # agrees with the general wrap on sums of two wrapped angles ...
    a = torch.linspace(-math.pi, math.pi - 1e-3, 41, dtype=torch.float64)
    s = a.unsqueeze(0) + a.unsqueeze(1)
    torch.testing.assert_close(wrap_once_to_pi(s), wrap_to_pi(s))
    # ... and moves any other angle by one turn at most, as the original does
    far = torch.tensor([5 * math.pi], dtype=torch.float64)
    torch.testing.assert_close(
        wrap_once_to_pi(far), torch.tensor([3 * math.pi], dtype=torch.float64)
    )
