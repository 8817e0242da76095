"""``TrailRecorder``: the positions of one environment's robots over its episode, on device.

The environments keep one so that ``render()`` can draw the trajectories so far; drawing itself
(matplotlib) lives in ``marinenav.viz`` and is imported only when a picture is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from marinenav.sim.simulator import MarineNavSimulator


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
        """``[T, R, 2]`` positions of the current episode, world frame (m), oldest first (a
        host copy)."""
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

    def render(self, path: str | Path | None = None, **kwargs: Any) -> np.ndarray:
        """RGB image ``[H, W, 3]`` uint8 of the environment with its trajectories so far (and a
        PNG file if ``path``); ``kwargs`` go to :func:`marinenav.viz.render_environment`."""
        from marinenav.viz.frames import render_environment  # drawing only: matplotlib here

        return render_environment(self.sim, self.env_index, self.trail(), path=path, **kwargs)
