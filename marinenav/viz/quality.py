"""Time to quality: how many minutes of a run's wall clock until its validation success reaches
a level and stays there, and how good its last checkpoint is on the large set.

For each run directory (its ``evaluations.jsonl``: the trainer's evaluations on the validation
set, the paper set by default, each with ``wall_clock_s``, the run's own seconds of training,
evaluations included):

* **reached**: minutes of wall clock at the first evaluation whose success is at least the
  level;
* **held**: minutes at the first evaluation from which every later one, the last included, is
  at least the level (reached and stayed there); none if the last is below it;
* **last** and **best** validation success, with episode counts and Wilson 95% intervals;
* **last, large set**: the last checkpoint's success on the large set (600 episodes), read from
  ``RUN/evaluation_large.json`` when present (written by ``python -m marinenav.evaluate RUN
  --set large --out RUN/evaluation_large.json``; :data:`LARGE_NAME`).

``python -m marinenav.viz time-to-quality RUN [RUN ...] --level 0.8 --out quality.png`` prints
the table (Markdown) and draws validation success against wall-clock minutes, one line per run.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from marinenav.files import save_figure
from marinenav.run_files import EVALUATIONS_NAME, LARGE_NAME
from marinenav.stats import format_rate


@dataclass
class RunQuality:
    """One run's evaluations on its validation set and what they say.

    Attributes:
        run_dir: the run directory.
        timesteps: training timesteps of the evaluations, increasing ``[K]``.
        minutes: wall-clock minutes of the run at each evaluation ``[K]``.
        cpu_minutes: CPU minutes of the run's process at each evaluation ``[K]`` (NaN where the
            record has no ``cpu_s``: runs of earlier versions).
        successes: successful episodes of each evaluation ``[K]``.
        episodes: episodes of each evaluation ``[K]``.
        large: ``(successes, episodes)`` of the last checkpoint on the large set, or None.
    """

    run_dir: Path
    timesteps: list[int]
    minutes: list[float]
    cpu_minutes: list[float]
    successes: list[int]
    episodes: list[int]
    large: tuple[int, int] | None

    @property
    def rates(self) -> list[float]:
        return [s / n for s, n in zip(self.successes, self.episodes, strict=True)]

    def reached(self, level: float) -> float | None:
        """Minutes at the first evaluation with success at least ``level`` (None: never)."""
        return next((m for m, r in zip(self.minutes, self.rates, strict=True) if r >= level), None)

    def held(self, level: float) -> float | None:
        """Minutes at the first evaluation from which all later ones are at least ``level``
        (None: the last one is below it)."""
        held = None
        for minutes, rate in zip(reversed(self.minutes), reversed(self.rates), strict=True):
            if rate < level:
                break
            held = minutes
        return held


def _episode_count(record: dict[str, Any]) -> tuple[int, int]:
    """``(successes, episodes)`` of one evaluation record (its per-episode outcomes)."""
    outcomes = record["episodes"]["success"]
    return int(sum(bool(s) for s in outcomes)), len(outcomes)


def read_run(run_dir: str | Path, require_wall_clock: bool = True) -> RunQuality:
    """The validation evaluations of a run (a timestep evaluated twice keeps its last line) and
    its large-set evaluation file when present. Raises ``ValueError`` for evaluations without
    ``wall_clock_s`` (files written by earlier versions), unless ``require_wall_clock`` is False:
    their minutes are then NaN (the run table of :mod:`marinenav.viz.runs` shows such runs too)."""
    run_dir = Path(run_dir)
    path = run_dir / EVALUATIONS_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no {EVALUATIONS_NAME} in {run_dir}")
    records: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records[int(record["timestep"])] = record
    if not records:
        raise ValueError(f"{path} holds no evaluation")
    ordered = [records[t] for t in sorted(records)]
    if require_wall_clock and any(r.get("wall_clock_s") is None for r in ordered):
        raise ValueError(f"{path}: evaluations without wall_clock_s cannot be timed")
    counts = [_episode_count(r) for r in ordered]
    large = None
    if (run_dir / LARGE_NAME).is_file():
        large = _episode_count(json.loads((run_dir / LARGE_NAME).read_text()))
    return RunQuality(
        run_dir=run_dir,
        timesteps=sorted(records),
        minutes=[math.nan if r.get("wall_clock_s") is None else r["wall_clock_s"] / 60
                 for r in ordered],  # fmt: skip
        cpu_minutes=[math.nan if r.get("cpu_s") is None else r["cpu_s"] / 60 for r in ordered],
        successes=[s for s, _ in counts],
        episodes=[n for _, n in counts],
        large=large,
    )


def _minutes(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def quality_table(runs: Sequence[RunQuality], level: float) -> str:
    """The Markdown table of the module docstring, one row per run."""
    rows = [
        f"| run | timesteps | minutes | reached {level:g} (min) | held {level:g} (min) "
        "| last, validation | best, validation | last, large set |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        best = max(range(len(run.rates)), key=lambda k: (run.rates[k], k))
        large = format_rate(*run.large) if run.large is not None else "not evaluated"
        rows.append(
            f"| {run.run_dir} | {run.timesteps[-1]:,} | {run.minutes[-1]:.1f} "
            f"| {_minutes(run.reached(level))} | {_minutes(run.held(level))} "
            f"| {format_rate(run.successes[-1], run.episodes[-1])} "
            f"| {format_rate(run.successes[best], run.episodes[best])} at {run.timesteps[best]:,} "
            f"| {large} |"
        )
    return "\n".join(rows)


def plot_quality(runs: Sequence[RunQuality], level: float, out: str | Path) -> Path:
    """Validation success against wall-clock minutes, one line per run, the level dashed."""
    fig = Figure(figsize=(7, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for run in runs:
        ax.plot(run.minutes, run.rates, marker="o", markersize=3, label=run.run_dir.name)
    ax.axhline(level, color="black", linestyle="--", linewidth=1, label=f"level {level:g}")
    ax.set_xlabel("wall clock of the run (minutes)")
    ax.set_ylabel("validation success rate")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def success_at(run: RunQuality, clock: str, grid: np.ndarray) -> np.ndarray:
    """The run's validation success at each time of ``grid`` ``[T]`` (minutes of ``clock``:
    ``"wall"`` or ``"cpu"``): the last evaluation at or before it (NaN before the first, and
    after the last, where the run had stopped)."""
    times = np.asarray(run.minutes if clock == "wall" else run.cpu_minutes, dtype=np.float64)
    rates = np.asarray(run.rates, dtype=np.float64)
    index = np.searchsorted(times, grid, side="right") - 1
    out = np.where(index >= 0, rates[np.clip(index, 0, None)], np.nan)
    return np.where(grid <= times[-1], out, np.nan)


def quality_bands(
    runs: Sequence[RunQuality], clock: str, points: int = 200
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Success against time over the runs (seeds of one recipe): ``(grid, median, low, high,
    count)``, each ``[points]``; ``low`` and ``high`` are the 25th and 75th percentiles of the
    runs still going at that time, ``count`` how many are (the band ends where fewer than two
    remain)."""
    ends = [(r.minutes if clock == "wall" else r.cpu_minutes)[-1] for r in runs]
    grid = np.linspace(0.0, max(ends), points)
    values = np.stack([success_at(run, clock, grid) for run in runs])  # [runs, points]
    count = np.sum(~np.isnan(values), axis=0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, as wanted
        median = np.nanmedian(values, axis=0)
        low, high = np.nanpercentile(values, [25, 75], axis=0)
    thin = count < 2
    return grid, median, np.where(thin, np.nan, low), np.where(thin, np.nan, high), count


def plot_quality_bands(
    groups: dict[str, Sequence[RunQuality]], level: float, out: str | Path
) -> Path:
    """Success against wall-clock minutes and against CPU minutes (a panel each; the CPU panel
    only where every run recorded ``cpu_s``), per group the median over its runs and the band
    of their middle half, the level dashed."""
    with_cpu = all(
        not math.isnan(run.cpu_minutes[-1]) for runs in groups.values() for run in runs
    )
    clocks = ("wall", "cpu") if with_cpu else ("wall",)
    fig = Figure(figsize=(6.5 * len(clocks), 4.5))
    FigureCanvasAgg(fig)
    for k, clock in enumerate(clocks):
        ax = fig.add_subplot(1, len(clocks), k + 1)
        for label, runs in groups.items():
            grid, median, low, high, _ = quality_bands(runs, clock)
            line = ax.plot(grid, median, label=f"{label} (median of {len(runs)} runs)")[0]
            ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.axhline(level, color="black", linestyle="--", linewidth=1, label=f"level {level:g}")
        name = "wall clock of the run" if clock == "wall" else "CPU time of the run's process"
        ax.set_xlabel(f"{name} (minutes)")
        ax.set_ylabel("validation success rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
