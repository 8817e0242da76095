"""Current field and vessel dynamics against worked numbers of the equations in
docs/simulator.md, "The model in equations"."""

from __future__ import annotations

import math

import pytest
import torch

from marinenav.sim.current import current_velocity
from marinenav.sim.dynamics import VesselState, integrate_step, wrap_to_2pi
from marinenav.sim.scenario import default_scenario

GAMMA = 2 * math.pi * 0.5 * 3.0  # generated cores: 2 pi r v_edge


def _field(points, cores, clockwise, present=None):
    pts = torch.tensor(points, dtype=torch.float64).view(1, -1, 2)
    pos = torch.tensor(cores, dtype=torch.float64).view(1, -1, 2)
    C = pos.shape[1]
    cw = torch.tensor(clockwise).view(1, C)
    gamma = torch.full((1, C), GAMMA, dtype=torch.float64)
    present = torch.ones(1, C, dtype=torch.bool) if present is None else torch.tensor([present])
    return current_velocity(pts, pos, cw, gamma, present, torch.tensor([0.5], dtype=torch.float64))


def test_clockwise_core_example_from_spec() -> None:
    # a clockwise core at the origin gives (0, -1.5) at (1, 0) and (1.5, 0) at (0, 1)
    v = _field([[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0]], [True])
    torch.testing.assert_close(v[0], torch.tensor([[0.0, -1.5], [1.5, 0.0]], dtype=torch.float64))


def test_counter_clockwise_core_reverses_the_field() -> None:
    cw = _field([[1.0, 0.0]], [[0.0, 0.0]], [True])
    ccw = _field([[1.0, 0.0]], [[0.0, 0.0]], [False])
    torch.testing.assert_close(ccw, -cw)


def test_inside_core_is_solid_body_rotation() -> None:
    # s(d) = Gamma / (2 pi r^2) d: at d = 0.25 the speed is 1.5, at the edge 3.0
    v = _field([[0.25, 0.0], [0.5, 0.0]], [[0.0, 0.0]], [True])
    speeds = torch.linalg.vector_norm(v[0], dim=-1)
    torch.testing.assert_close(speeds, torch.tensor([1.5, 3.0], dtype=torch.float64))


def test_all_cores_are_summed_behind_rule_is_a_noop() -> None:
    # two same-sense cores on a line give 0.4 m/s where "first core only" gives 0.3
    v = _field([[0.0, 0.0]], [[5.0, 0.0], [15.0, 0.0]], [True, True])
    assert torch.linalg.vector_norm(v[0, 0]).item() == pytest.approx(0.3 + 0.1)


def test_padded_cores_and_core_centre_contribute_nothing() -> None:
    v = _field([[1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]], [True, True], present=[True, False])
    torch.testing.assert_close(v[0, 0], torch.tensor([0.0, -1.5], dtype=torch.float64))
    centre = _field([[0.0, 0.0]], [[0.0, 0.0]], [True])
    assert torch.isfinite(centre).all() and (centre == 0).all()


def _steady(thrust_left: float, thrust_right: float, steps: int = 300) -> VesselState:
    s = default_scenario(1, 1, 0, 0, dtype=torch.float64)
    state = VesselState(
        pos=torch.zeros(1, 1, 2, dtype=torch.float64),
        theta=torch.zeros(1, 1, dtype=torch.float64),
        velocity_r=torch.zeros(1, 1, 3, dtype=torch.float64),
        velocity=torch.zeros(1, 1, 3, dtype=torch.float64),
        thrust=torch.tensor([[[thrust_left, thrust_right]]], dtype=torch.float64),
    )
    no_current = lambda p: torch.zeros_like(p)  # noqa: E731
    rate = torch.zeros(1, 1, 2, dtype=torch.float64)
    for _ in range(steps):
        state = integrate_step(state, rate, 10, s, no_current)
    return state


def test_steady_surge_speed_at_full_thrust() -> None:
    # T_L = T_R = 1000 gives exactly 3.333 m/s (100 u + 150 u^2 = 2000)
    state = _steady(1000.0, 1000.0)
    assert torch.linalg.vector_norm(state.velocity_r[0, 0, :2]).item() == pytest.approx(
        10.0 / 3.0, abs=1e-6
    )


def test_steady_reverse_speed() -> None:
    # T_L = T_R = -500 gives 2.27 m/s astern
    state = _steady(-500.0, -500.0)
    speed = torch.linalg.vector_norm(state.velocity_r[0, 0, :2]).item()
    assert speed == pytest.approx((-100 + math.sqrt(100**2 + 4 * 150 * 1000)) / 300, abs=1e-6)
    assert speed == pytest.approx(2.27, abs=0.005)


def test_differential_thrust_turns_to_starboard() -> None:
    # T_L = 1000, T_R = -500 gives a positive yaw rate near 0.98 rad/s
    state = _steady(1000.0, -500.0)
    assert state.velocity_r[0, 0, 2].item() == pytest.approx(0.98, abs=0.02)


def test_thrust_change_is_clipped_to_bounds() -> None:
    s = default_scenario(1, 2, 0, 0, dtype=torch.float64)
    zeros = torch.zeros(1, 2, 3, dtype=torch.float64)
    state = VesselState(
        pos=torch.zeros(1, 2, 2, dtype=torch.float64),
        theta=torch.zeros(1, 2, dtype=torch.float64),
        velocity_r=zeros,
        velocity=zeros,
        thrust=torch.tensor([[[900.0, -400.0], [0.0, 0.0]]], dtype=torch.float64),
    )
    rate = torch.tensor([[[1000.0, -1000.0], [500.0, -500.0]]], dtype=torch.float64)
    out = integrate_step(state, rate, 10, s, lambda p: torch.zeros_like(p))
    torch.testing.assert_close(
        out.thrust, torch.tensor([[[1000.0, -500.0], [250.0, -250.0]]], dtype=torch.float64)
    )


def test_heading_wrap_matches_repeated_subtraction() -> None:
    angles = torch.tensor([-0.1, 0.0, 3.0, 2 * math.pi, 2 * math.pi + 0.2], dtype=torch.float64)
    expected = []
    for a in angles.tolist():
        while a < 0:
            a += 2 * math.pi
        while a >= 2 * math.pi:
            a -= 2 * math.pi
        expected.append(a)
    assert wrap_to_2pi(angles).tolist() == expected
