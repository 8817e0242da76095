"""One evaluation episode of a trained agent, recorded for people: PNG frames and animations.

:func:`record_episodes` runs an evaluation set
(:class:`~marinenav.training.evaluation.EvaluationSet`, in its conditions) through the
evaluator with the agent's deterministic policy and copies what the pictures need of some of
its episodes to the host, once, at the end: each recording is the episode the evaluation
measured (or, with ``alone=True``, the episode run by itself). :func:`save_frames` and
:func:`save_animation` draw it with :func:`marinenav.viz.frames.draw_frame`.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from matplotlib.animation import FFMpegWriter, PillowWriter
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tensordict.nn import TensorDictModuleBase

from marinenav.files import atomic_path
from marinenav.keys import DONE, INFO_KEY, REWARD_KEY
from marinenav.sim import InfoState, Scenario
from marinenav.sim.constants import VesselRole
from marinenav.viz.frames import (
    CurrentField,
    FrameState,
    current_speed_field,
    draw_frame,
    render_figure,
)

if TYPE_CHECKING:
    from marinenav.agents import Agent
    from marinenav.sim.simulator import MarineNavSimulator
    from marinenav.training.evaluation import EvaluationSet

COLLIDED = (int(InfoState.COLLISION), int(InfoState.DEACTIVATED_AFTER_COLLISION))
REACHED = (int(InfoState.REACH_GOAL), int(InfoState.DEACTIVATED_AFTER_REACHING_GOAL))


@dataclass
class EpisodeRecording:
    """An episode on the host, ``T`` steps, ``R`` robot slots; index ``k`` of the per-instant
    arrays is the state after ``k`` steps (``k = 0``: the start).

    Attributes:
        scenario: the scenario dict that was run (original layout).
        map: the same scenario as a one-environment CPU float64 :class:`Scenario`.
        positions: ``[T + 1, R, 2]`` positions, world frame ``(x north, y east)`` (m).
        headings: ``[T + 1, R]`` headings (rad, 0 = north).
        velocities: ``[T + 1, R, 2]`` velocities over ground, world frame (m/s).
        active: ``[T + 1, R]`` bool, robot present and still navigating.
        collided: ``[T + 1, R]`` bool, robot has collided by then.
        reached: ``[T + 1, R]`` bool, robot has reached its goal by then.
        rewards: ``[T, R]`` reward of each step (0 for inactive robots).
        info: ``[T, R]`` int, :class:`~marinenav.sim.InfoState` of each step.
        step_time: duration of one step (s), ``dt * N`` (0.5 s by default).
    """

    scenario: dict[str, Any]
    map: Scenario
    positions: np.ndarray
    headings: np.ndarray
    velocities: np.ndarray
    active: np.ndarray
    collided: np.ndarray
    reached: np.ndarray
    rewards: np.ndarray
    info: np.ndarray
    step_time: float
    _current: dict[int, CurrentField | None] = field(default_factory=dict, repr=False)

    @property
    def num_steps(self) -> int:
        """``T``, the steps the episode took."""
        return self.rewards.shape[0]

    @property
    def present(self) -> np.ndarray:
        """``[R]`` bool, robot slots in use."""
        return self.map.robot_present[0].numpy()

    @property
    def steered(self) -> np.ndarray:
        """``[R]`` bool, the robots the policy steers (the others are traffic)."""
        return self.present & (self.map.robot_role[0].numpy() == int(VesselRole.POLICY))

    @property
    def success(self) -> bool:
        """Every robot of the policy reached its goal (the evaluation's success)."""
        return bool((self.reached[-1] | ~self.steered).all())

    def frame(self, k: int) -> FrameState:
        """The robots after ``k`` steps."""
        return FrameState(
            pos=self.positions[k], theta=self.headings[k], active=self.active[k],
            collided=self.collided[k], reached=self.reached[k], step=k,
            time=k * self.step_time, velocity=self.velocities[k],
        )  # fmt: skip

    def current_field(self, grid: int = 56) -> CurrentField | None:
        """The current speed field of the map (computed once per grid size)."""
        if grid not in self._current:
            self._current[grid] = current_speed_field(self.map, grid)
        return self._current[grid]

    def title(self, k: int) -> str:
        """``"step k / T (t s)"``, with the outcome on the last frame."""
        text = f"step {k} / {self.num_steps} ({k * self.step_time:.1f} s)"
        if k == self.num_steps:
            if self.success:
                text += ": all goals reached"
            elif self.collided[k].any():
                text += ": collision"
            else:
                text += ": time out"
        return text

    def draw(self, ax, k: int, current_grid: int = 56) -> None:
        """Draw the state after ``k`` steps, with the trajectories so far, on ``ax``."""
        draw_frame(ax, self.map, self.frame(k), self.positions[: k + 1],
                   self.current_field(current_grid), title=self.title(k))  # fmt: skip


def record_episode(
    agent: Agent | TensorDictModuleBase,
    evaluation_set: EvaluationSet,
    index: int = 0,
    device: torch.device | str = "cpu",
    alone: bool = False,
) -> EpisodeRecording:
    """Episode ``index`` (negative from the end) of an evaluation set, as
    :func:`record_episodes` records it."""
    return record_episodes(agent, evaluation_set, [index], device, alone)[0]


def record_episodes(
    agent: Agent | TensorDictModuleBase,
    evaluation_set: EvaluationSet,
    indices: Sequence[int],
    device: torch.device | str = "cpu",
    alone: bool = False,
) -> list[EpisodeRecording]:
    """Run episodes ``indices`` of an evaluation set with the agent's deterministic policy (or
    a policy of its own: a classical baseline of :mod:`marinenav.baselines`, a planner file's
    :class:`~marinenav.planner.PlannerPolicy`) until each ends, as the evaluation runs them.

    By default the whole set runs, once, through
    :class:`~marinenav.training.evaluation.Evaluator` (its conditions, rules, step cap and
    compaction; a planner's random stream restarted from the set's noise seed, as
    ``marinenav.evaluate`` does) and the episodes asked for are copied out: each recording is
    the episode the evaluation of the set measured, bit for bit (its success, closest approaches
    and COLREGs checks are those of the evaluation's report). The perception noise is drawn for
    the whole batch, so the same episode run by itself is another draw of its noise: with
    ``alone=True`` each episode runs by itself (cheaper for one episode of a large set), and
    its recording is what evaluating ``evaluation_set.episode(index)`` measures.

    Args:
        agent: a trained agent (e.g. from :func:`marinenav.training.checkpoint.load_agent`),
            on ``device``; or a policy module with an ``action_kind`` attribute.
        evaluation_set: e.g. ``EvaluationSet.of_run(config)``, a run's own set.
        indices: which episodes (negative from the end), in the order returned.
        device: of the simulation.
        alone: run each episode by itself instead of among its set.
    """
    episodes = [evaluation_set.episode(index) for index in indices]  # range checked first
    if alone:
        return [_record(agent, episode, [0], device)[0] for episode in episodes]
    rows = [index % len(evaluation_set) for index in indices]
    return _record(agent, evaluation_set, rows, device)


def _record(
    agent: Agent | TensorDictModuleBase,
    evaluation_set: EvaluationSet,
    rows: list[int],
    device: torch.device | str,
) -> list[EpisodeRecording]:
    """Evaluate ``evaluation_set`` and copy episodes ``rows`` (non-negative) out of it."""
    from marinenav.planner import PlannerPolicy
    from marinenav.training.evaluation import Evaluator

    policy = getattr(agent, "policy", agent)
    if isinstance(policy, PlannerPolicy):
        policy.set_seed(evaluation_set.noise_seed)  # as marinenav.evaluate's planners
    evaluator = Evaluator(evaluation_set, agent.action_kind, 1.0, device)
    sim = evaluator.env.sim
    chosen = torch.tensor(rows, device=evaluator.env.device)
    states: list[torch.Tensor] = []  # [n, R, 6] per instant, on the device
    rewards: list[torch.Tensor] = []  # [n, R] per step
    infos: list[torch.Tensor] = []  # [n, R] per step
    dones: list[torch.Tensor] = []  # [n] per step

    def observe(td) -> None:
        st = sim.state
        states.append(
            torch.cat(
                (st.pos[chosen], st.theta[chosen, :, None], st.velocity[chosen, :, :2],
                 sim.active[chosen, :, None]),
                dim=-1,
            ).double()
        )  # fmt: skip
        if REWARD_KEY in td.keys(True):
            rewards.append(td[REWARD_KEY][chosen, :, 0].double())
            infos.append(td[INFO_KEY][chosen])
            dones.append(td[DONE][chosen, 0])

    was_training = policy.training
    policy.eval()
    try:
        evaluator.run(policy, observe=observe)
    finally:
        policy.train(was_training)
    # [T_all + 1, n, R, 6], [T_all, n, R] twice and [T_all, n], read back once, at the end
    state, reward, info, done = (
        torch.stack(x).cpu().numpy()  # host: a people tool, once after the evaluation
        for x in (states, rewards, infos, dones)
    )
    recordings = []
    for j, row in enumerate(rows):
        T = int(done[:, j].argmax()) + 1 if done[:, j].any() else done.shape[0]
        scenario = evaluation_set.scenarios[row]
        recordings.append(
            _recording(scenario, sim, row, state[: T + 1, j], reward[:T, j], info[:T, j])
        )
    return recordings


def _recording(
    scenario: dict[str, Any],
    sim: MarineNavSimulator,
    row: int,
    states: np.ndarray,
    rewards: np.ndarray,
    info: np.ndarray,
) -> EpisodeRecording:
    """One episode's recording from its rows: ``states [T + 1, R, 6]`` (x, y, heading, two
    velocity components, active), ``rewards [T, R]``, ``info [T, R]``."""
    R = info.shape[1]
    collided = np.concatenate((np.zeros((1, R), bool), np.isin(info, COLLIDED)))
    reached = np.concatenate((np.zeros((1, R), bool), np.isin(info, REACHED)))
    s = sim.scenario.index(row).to(device="cpu", dtype=torch.float64)
    return EpisodeRecording(
        scenario=dict(scenario), map=s, positions=states[..., 0:2], headings=states[..., 2],
        velocities=states[..., 3:5], active=states[..., 5] > 0.5,
        collided=np.logical_or.accumulate(collided, axis=0),
        reached=np.logical_or.accumulate(reached, axis=0),
        rewards=rewards, info=info,
        step_time=float(s.dt[0, 0]) * sim.num_substeps,
    )  # fmt: skip


def frame_indices(recording: EpisodeRecording, every: int = 1) -> list[int]:
    """Steps drawn with ``every``: ``0, every, 2 every, ...`` and always the last one."""
    if every < 1:
        raise ValueError(f"every must be at least 1, got {every}")
    indices = list(range(0, recording.num_steps + 1, every))
    if indices[-1] != recording.num_steps:
        indices.append(recording.num_steps)
    return indices


def save_frames(
    recording: EpisodeRecording,
    out_dir: str | Path,
    every: int = 1,
    size_inches: tuple[float, float] = (6.0, 6.0),
    dpi: int = 100,
) -> list[Path]:
    """One PNG per drawn step (see :func:`frame_indices`), ``frame_KKKK.png`` of
    ``size_inches * dpi`` pixels in ``out_dir`` (created); returns their paths in order."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    digits = max(4, len(str(recording.num_steps)))
    paths = []
    for k in frame_indices(recording, every):
        path = out_dir / f"frame_{k:0{digits}d}.png"
        render_figure(lambda ax, k=k: recording.draw(ax, k), size_inches, dpi, path)
        paths.append(path)
    return paths


def save_animation(
    recording: EpisodeRecording,
    path: str | Path,
    every: int = 1,
    fps: float = 10.0,
    size_inches: tuple[float, float] = (6.0, 6.0),
    dpi: int = 100,
) -> Path:
    """Write the episode as an animated GIF (``.gif``, Pillow) or MP4 (``.mp4``, needs
    ffmpeg), one frame per drawn step (see :func:`frame_indices`) at ``fps`` frames per
    second of video; returns ``path``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".gif":
        writer = PillowWriter(fps=fps)
    elif suffix == ".mp4":
        if shutil.which("ffmpeg") is None:
            raise RuntimeError("writing MP4 needs ffmpeg on PATH; write a .gif instead")
        writer = FFMpegWriter(fps=fps)
    else:
        raise ValueError(f"animation path must end in .gif or .mp4, got {path.name}")
    fig = Figure(figsize=size_inches, dpi=dpi, layout="tight")
    FigureCanvasAgg(fig)
    with atomic_path(path) as tmp, writer.saving(fig, str(tmp), dpi):
        for k in frame_indices(recording, every):
            fig.clear()
            recording.draw(fig.add_subplot(1, 1, 1), k)
            writer.grab_frame()
    return path
