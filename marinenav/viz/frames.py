"""Pictures of one environment for people: map, current speed, obstacles, vessels, goals and
the trajectories so far. Headless matplotlib (Agg canvas, no pyplot state).

Like the original's plots, world ``y`` (East) is the horizontal axis and world ``x``
(North) the vertical one, so a heading of 0 points up.

A frame is drawn from host data (:class:`FrameState` and a one-environment CPU
:class:`~marinenav.sim.scenario.Scenario`), so live simulators (:func:`draw_environment`,
:func:`render_environment`) and recorded episodes (``marinenav.viz.episode``) share one drawing
function, :func:`draw_frame`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Polygon

from marinenav.files import save_figure
from marinenav.sim.constants import VesselRole
from marinenav.sim.current import current_velocity
from marinenav.sim.scenario import Scenario
from marinenav.sim.simulator import MarineNavSimulator

ROBOT_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
TRAFFIC_COLOUR = "darkgray"  # vessels the policy does not steer (docs/scenarios.md)
VELOCITY_ARROW_SECONDS = 2.0  # a velocity arrow is as long as the distance covered in 2 s


@dataclass
class FrameState:
    """The robots of one environment at one instant, on the host.

    Attributes:
        pos: ``[R, 2]`` positions, world frame ``(x north, y east)`` (m).
        theta: ``[R]`` headings (rad, 0 = north).
        active: ``[R]`` bool, robot present and still navigating.
        collided: ``[R]`` bool, robot has collided (drawn as a red x).
        reached: ``[R]`` bool, robot has reached its goal (its goal drawn with a green ring).
        step: episode step (one step = ``dt * N`` s, 0.5 s by default).
        time: simulated time since the episode started (s).
        velocity: ``[R, 2]`` optional velocities over ground, world frame (m/s), drawn as
            arrows.
    """

    pos: np.ndarray
    theta: np.ndarray
    active: np.ndarray
    collided: np.ndarray
    reached: np.ndarray
    step: int
    time: float
    velocity: np.ndarray | None = None


@dataclass
class CurrentField:
    """Current speed on a regular grid, for the contour plot.

    Attributes:
        east: ``[G]`` grid coordinates along world y (m).
        north: ``[G]`` grid coordinates along world x (m).
        speed: ``[G, G]`` current speed, indexed ``[north, east]`` (m/s).
    """

    east: np.ndarray
    north: np.ndarray
    speed: np.ndarray


def current_speed_field(scenario: Scenario, grid: int = 56) -> CurrentField | None:
    """The current speed of a one-environment CPU scenario on a ``grid x grid`` lattice over
    the map, or ``None`` when the scenario has no vortex core."""
    s = scenario.to(device="cpu", dtype=torch.float64)
    if not bool(s.core_present.any()):  # host: drawing for people
        return None
    north = torch.linspace(0.0, float(s.width[0]), grid, dtype=torch.float64)
    east = torch.linspace(0.0, float(s.height[0]), grid, dtype=torch.float64)
    points = torch.stack(torch.meshgrid(north, east, indexing="ij"), dim=-1).view(1, -1, 2)
    speed = current_velocity(
        points, s.core_pos, s.core_clockwise, s.core_gamma, s.core_present, s.core_radius
    ).norm(dim=-1)
    return CurrentField(east.numpy(), north.numpy(), speed.view(grid, grid).numpy())


def _hull(x: float, y: float, theta: float, length: float, width: float) -> np.ndarray:
    """Vessel outline (a pointed pentagon) in plot coordinates ``(east, north)``."""
    body = np.array([[0.5, 0.0], [0.2, 0.5], [-0.5, 0.5], [-0.5, -0.5], [0.2, -0.5]]) * np.array(
        [length, width]
    )
    c, s = math.cos(theta), math.sin(theta)
    world = body @ np.array([[c, s], [-s, c]]) + np.array([x, y])
    return world[:, ::-1]  # (north, east) -> (east, north) for plotting


def draw_frame(
    ax: Axes,
    scenario: Scenario,
    frame: FrameState,
    trail: np.ndarray | None = None,
    current: CurrentField | None = None,
    title: str | None = None,
) -> None:
    """Draw one environment on a matplotlib axis from host data.

    Args:
        ax: the axis to draw on (its figure gets the current-speed colour bar).
        scenario: the environment's scenario, one environment (any device and dtype).
        frame: the robots now.
        trail: ``[T, R, 2]`` positions so far, world frame (m), oldest first.
        current: the current speed field (see :func:`current_speed_field`); none drawn if None.
        title: axis title; default ``"step k (t s)"``.
    """
    s = scenario.to(device="cpu", dtype=torch.float64)
    present = s.robot_present[0].numpy()
    width, height = float(s.width[0]), float(s.height[0])

    if current is not None:
        levels = np.linspace(0.0, max(float(current.speed.max()), 1e-6), 12)
        field = ax.contourf(current.east, current.north, current.speed, levels=levels,
                            cmap="Blues", alpha=0.6)  # fmt: skip
        ax.figure.colorbar(field, ax=ax, fraction=0.046, pad=0.04, label="current speed (m/s)")

    for k in np.nonzero(s.obstacle_present[0].numpy())[0]:
        x, y = s.obstacle_pos[0, k].tolist()
        ax.add_patch(Circle((y, x), float(s.obstacle_radius[0, k]), color="dimgray"))
    traffic = s.robot_role[0].numpy() != int(VesselRole.POLICY)
    for r in np.nonzero(present)[0]:
        # traffic (a vessel the policy does not steer) in grey, without a goal to reach
        colour = TRAFFIC_COLOUR if traffic[r] else ROBOT_COLOURS[r % len(ROBOT_COLOURS)]
        start, goal = s.start[0, r].numpy(), s.goal[0, r].numpy()
        ax.plot(start[1], start[0], "o", color=colour, markersize=5, alpha=0.6)
        if not traffic[r]:
            ax.plot(goal[1], goal[0], "*", color=colour, markersize=14,
                    markeredgecolor="black")  # fmt: skip
            goal_dis = float(s.goal_dis[0, r])
            if frame.reached[r]:
                ax.add_patch(Circle((goal[1], goal[0]), goal_dis, fill=False, linewidth=3,
                                    color="limegreen"))  # fmt: skip
            else:
                ax.add_patch(Circle((goal[1], goal[0]), goal_dis, fill=False, linestyle=":",
                                    color=colour))  # fmt: skip
        if trail is not None and len(trail) > 1:
            ax.plot(trail[:, r, 1], trail[:, r, 0], "-", color=colour, linewidth=1.5)
        x, y = frame.pos[r]
        hull = _hull(x, y, float(frame.theta[r]), float(s.length[0, r]),
                     float(s.width_hull[0, r]))  # fmt: skip
        ax.add_patch(Polygon(hull, closed=True, facecolor=colour, edgecolor="black",
                             alpha=1.0 if frame.active[r] else 0.4))  # fmt: skip
        if frame.velocity is not None and frame.active[r]:
            vx, vy = frame.velocity[r] * VELOCITY_ARROW_SECONDS
            ax.arrow(y, x, vy, vx, color="black", width=0.15, length_includes_head=True)
        if frame.collided[r]:
            ax.plot(y, x, "x", color="red", markersize=14, markeredgewidth=3)
    ax.set_xlim(0.0, height)
    ax.set_ylim(0.0, width)
    ax.set_aspect("equal")
    ax.set_xlabel("y, East (m)")
    ax.set_ylabel("x, North (m)")
    ax.set_title(title if title is not None else f"step {frame.step} ({frame.time:.1f} s)")


def simulator_frame(sim: MarineNavSimulator, env_index: int = 0) -> FrameState:
    """Host copy of environment ``env_index`` of a live simulator (collisions and goals of the
    current step only: the simulator keeps no history)."""
    pos = sim.state.pos[env_index].double().cpu().numpy()  # host: drawing for people
    theta = sim.state.theta[env_index].double().cpu().numpy()  # host: drawing for people
    velocity = sim.state.velocity[env_index, :, :2].double().cpu().numpy()  # host: people
    step = int(sim.episode_steps[env_index])  # host: drawing for people
    step_time = float(sim.scenario.dt[env_index, 0]) * sim.num_substeps  # host: people
    return FrameState(
        pos=pos, theta=theta,
        active=sim.active[env_index].cpu().numpy(),  # host: drawing for people
        collided=sim.collision[env_index].cpu().numpy(),  # host: drawing for people
        reached=sim.reach_goal[env_index].cpu().numpy(),  # host: drawing for people
        step=step, time=step * step_time, velocity=velocity,
    )  # fmt: skip


def draw_environment(
    ax: Axes,
    sim: MarineNavSimulator,
    env_index: int = 0,
    trail: np.ndarray | None = None,
    current_grid: int = 56,
) -> None:
    """Draw environment ``env_index`` of a live ``sim`` on a matplotlib axis."""
    scenario = sim.scenario.index(env_index).to(device="cpu", dtype=torch.float64)
    frame = simulator_frame(sim, env_index)
    draw_frame(ax, scenario, frame, trail, current_speed_field(scenario, current_grid),
               title=f"env {env_index}, step {frame.step} ({frame.time:.1f} s)")  # fmt: skip


def render_figure(
    draw: Callable[[Axes], None],
    size_inches: tuple[float, float] = (6.0, 6.0),
    dpi: int = 100,
    path: str | Path | None = None,
) -> np.ndarray:
    """Draw on a fresh one-axis Agg figure with ``draw(ax)``; returns the RGB image
    ``[H, W, 3]`` uint8 (``H, W = size_inches * dpi``) and writes a PNG if ``path``."""
    fig = Figure(figsize=size_inches, dpi=dpi, layout="tight")
    canvas = FigureCanvasAgg(fig)
    draw(fig.add_subplot(1, 1, 1))
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    if path is not None:
        save_figure(fig, path)
    return image


def render_environment(
    sim: MarineNavSimulator,
    env_index: int = 0,
    trail: np.ndarray | None = None,
    size_inches: tuple[float, float] = (6.0, 6.0),
    dpi: int = 100,
    path: str | Path | None = None,
) -> np.ndarray:
    """Render one environment to an RGB array ``[H, W, 3]`` uint8 (and a PNG if ``path``)."""
    return render_figure(lambda ax: draw_environment(ax, sim, env_index, trail),
                         size_inches, dpi, path)  # fmt: skip
