"""Pictures of one environment for people: map, current speed, obstacles, vessels, goals and
the trajectories so far. Headless matplotlib (Agg canvas, no pyplot state).

Like the original's plots, world ``y`` (East) is the horizontal axis and world ``x`` (North) the
vertical one, so a heading of 0 points up.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Polygon

from marinenav.sim.current import current_velocity
from marinenav.sim.simulator import MarineNavSimulator

ROBOT_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


class TrailRecorder:
    """Positions of one environment's robots over its current episode, for drawing.

    A ring buffer made once on the simulator's device; :meth:`record` copies one ``[R, 2]``
    slice and the episode step on device (no host read), :meth:`trail` reads it back.
    """

    def __init__(self, sim: MarineNavSimulator, env_index: int = 0) -> None:
        if not 0 <= env_index < sim.num_envs:
            raise ValueError(f"env_index must be in [0, {sim.num_envs}), got {env_index}")
        self.sim, self.env_index = sim, env_index
        capacity = sim.max_episode_steps + 2
        self._pos = torch.zeros(capacity, sim.robot_slots, 2, dtype=sim.dtype, device=sim.device)
        self._step = torch.full((capacity,), -1, dtype=torch.int64, device=sim.device)
        self._next = 0

    def record(self) -> None:
        """Store the current positions (call after every step and reset)."""
        i = self._next % self._pos.shape[0]
        self._pos[i] = self.sim.state.pos[self.env_index]
        self._step[i] = self.sim.episode_steps[self.env_index]
        self._next += 1

    def trail(self) -> np.ndarray:
        """``[T, R, 2]`` positions of the current episode, oldest first (host copy)."""
        order = torch.arange(self._next - self._pos.shape[0], self._next) % self._pos.shape[0]
        steps = self._step[order].cpu().numpy()  # host: drawing for people
        pos = self._pos[order].cpu().numpy()  # host: drawing for people
        valid = np.nonzero(steps >= 0)[0]
        if valid.size == 0:
            return pos[:0]
        last = valid[-1]
        first = last
        while first > 0 and steps[first - 1] == steps[first] - 1 and steps[first - 1] >= 0:
            first -= 1
        return pos[first : last + 1]


def _hull(x: float, y: float, theta: float, length: float, width: float) -> np.ndarray:
    """Vessel outline (a pointed pentagon) in plot coordinates ``(east, north)``."""
    body = np.array([[0.5, 0.0], [0.2, 0.5], [-0.5, 0.5], [-0.5, -0.5], [0.2, -0.5]]) * np.array(
        [length, width]
    )
    c, s = math.cos(theta), math.sin(theta)
    world = body @ np.array([[c, s], [-s, c]]) + np.array([x, y])
    return world[:, ::-1]  # (north, east) -> (east, north) for plotting


def draw_environment(
    ax,
    sim: MarineNavSimulator,
    env_index: int = 0,
    trail: np.ndarray | None = None,
    current_grid: int = 56,
) -> None:
    """Draw environment ``env_index`` of ``sim`` on a matplotlib axis."""
    s = sim.scenario.index(env_index).to(device="cpu", dtype=torch.float64)
    state = sim.state
    pos = state.pos[env_index].double().cpu().numpy()  # host: drawing for people
    theta = state.theta[env_index].double().cpu().numpy()  # host: drawing for people
    present = s.robot_present[0].numpy()
    active = sim.active[env_index].cpu().numpy()  # host: drawing for people
    collided = sim.collision[env_index].cpu().numpy()  # host: drawing for people
    width, height = float(s.width[0]), float(s.height[0])

    # current speed field
    north = torch.linspace(0.0, width, current_grid, dtype=torch.float64)
    east = torch.linspace(0.0, height, current_grid, dtype=torch.float64)
    grid = torch.stack(torch.meshgrid(north, east, indexing="ij"), dim=-1).view(1, -1, 2)
    speed = (
        current_velocity(
            grid, s.core_pos, s.core_clockwise, s.core_gamma, s.core_present, s.core_radius
        )
        .norm(dim=-1)
        .view(current_grid, current_grid)
    )
    if bool(s.core_present.any()):
        levels = np.linspace(0.0, max(float(speed.max()), 1e-6), 12)
        field = ax.contourf(east.numpy(), north.numpy(), speed.numpy(), levels=levels,
                            cmap="Blues", alpha=0.6)  # fmt: skip
        ax.figure.colorbar(field, ax=ax, fraction=0.046, pad=0.04, label="current speed (m/s)")

    for k in np.nonzero(s.obstacle_present[0].numpy())[0]:
        x, y = s.obstacle_pos[0, k].tolist()
        ax.add_patch(Circle((y, x), float(s.obstacle_radius[0, k]), color="dimgray"))
    for r in np.nonzero(present)[0]:
        colour = ROBOT_COLOURS[r % len(ROBOT_COLOURS)]
        start, goal = s.start[0, r].numpy(), s.goal[0, r].numpy()
        ax.plot(start[1], start[0], "o", color=colour, markersize=5, alpha=0.6)
        ax.plot(goal[1], goal[0], "*", color=colour, markersize=14,
                markeredgecolor="black")  # fmt: skip
        ax.add_patch(Circle((goal[1], goal[0]), float(s.goal_dis[0, r]), fill=False,
                            linestyle=":", color=colour))  # fmt: skip
        if trail is not None and len(trail) > 1:
            ax.plot(trail[:, r, 1], trail[:, r, 0], "-", color=colour, linewidth=1.5)
        hull = _hull(pos[r, 0], pos[r, 1], float(theta[r]), float(s.length[0, r]),
                     float(s.width_hull[0, r]))  # fmt: skip
        ax.add_patch(Polygon(hull, closed=True, facecolor=colour, edgecolor="black",
                             alpha=1.0 if active[r] else 0.4))  # fmt: skip
        if collided[r]:
            ax.plot(pos[r, 1], pos[r, 0], "x", color="red", markersize=14, markeredgewidth=3)
    ax.set_xlim(0.0, height)
    ax.set_ylim(0.0, width)
    ax.set_aspect("equal")
    ax.set_xlabel("y, East (m)")
    ax.set_ylabel("x, North (m)")
    step = int(sim.episode_steps[env_index])  # host: drawing for people
    ax.set_title(f"env {env_index}, step {step} ({0.5 * step:.1f} s)")


def render_environment(
    sim: MarineNavSimulator,
    env_index: int = 0,
    trail: np.ndarray | None = None,
    size_inches: tuple[float, float] = (6.0, 6.0),
    dpi: int = 100,
    path: str | Path | None = None,
) -> np.ndarray:
    """Render one environment to an RGB array ``[H, W, 3]`` uint8 (and a PNG if ``path``)."""
    fig = Figure(figsize=size_inches, dpi=dpi, layout="tight")
    canvas = FigureCanvasAgg(fig)
    draw_environment(fig.add_subplot(1, 1, 1), sim, env_index, trail)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    if path is not None:
        fig.savefig(path)
    return image
