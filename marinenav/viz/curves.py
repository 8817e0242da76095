"""Learning curves of one or several runs (as the original's ``plot_training_results``).

Each run directory holds ``evaluations.jsonl``, one line per evaluation round on the fixed set
(``timestep``, ``eval/return``, ``eval/success_rate``, ``eval/travel_time``, ``eval/energy``,
and ``eval/colregs_kept`` where the set holds encounter episodes: a fourth panel, with
``eval/colregs_kept_sighted``, the count with the turn read from sighting, dashed beside it
where the records have it).
Runs sharing a label (by default the agent's name: seeds of one agent) are averaged per
evaluation timestep: the mean and its standard error ``std / sqrt(n)`` over the runs (``std``
with ``ddof=0``, as the original's ``np.std``).

Deviations from the original: an evaluation round without a successful episode has no travel
time or energy (NaN, left out of the mean, instead of the original's -1 averaged in), and every
panel, travel time included, shows the standard-error band.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from marinenav.files import save_figure
from marinenav.run_files import EVALUATIONS_NAME, run_config

# the eval/ keys of a round; colregs_kept only where the set holds encounter episodes (NaN else),
# colregs_kept_sighted (the turn read from sighting) only in records written since 2026-12-01
METRICS = ("return", "success_rate", "travel_time", "energy", "colregs_kept",
           "colregs_kept_sighted")  # fmt: skip
NUM_STAGES = 6  # the paper's curriculum
STAGE_METRICS = tuple(f"success_rate_stage{s}" for s in range(NUM_STAGES))  # NaN where absent
PANELS = (
    ("return", "Cumulative Reward"),
    ("success_rate", "Success Rate"),
    ("travel_time", "Average Travel Time (s)"),
)
COLREGS_PANEL = ("colregs_kept", "COLREGs kept (encounter episodes)")  # when a run has it


@dataclass
class RunCurves:
    """The evaluation rounds of one run.

    Attributes:
        run_dir: the run directory.
        label: the group the run belongs to (runs with one label are averaged).
        timesteps: ``[K]`` int, training timesteps of the rounds, increasing.
        values: metric name (:data:`METRICS`) -> ``[K]`` values: mean discounted return over
            the episodes, success rate in [0, 1], travel time (s) and thrust energy of the
            successful episodes (NaN where none succeeded), and the encounter episodes that
            kept the COLREGs, the turn read from the start and from sighting (NaN where the set
            has none, or the record predates the second reading).
    """

    run_dir: Path
    label: str
    timesteps: np.ndarray
    values: dict[str, np.ndarray]


def read_evaluations(run_dir: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(timesteps [K], {metric: [K]})`` from a run's ``evaluations.jsonl``, sorted by
    timestep; a timestep evaluated twice (a run resumed from an older checkpoint) keeps its
    last line."""
    path = Path(run_dir) / EVALUATIONS_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no {EVALUATIONS_NAME} in {run_dir}")
    rounds: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            rounds[int(record["timestep"])] = record
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}:{number}: not an evaluation record ({error})") from None
    if not rounds:
        raise ValueError(f"{path} holds no evaluation")
    timesteps = np.array(sorted(rounds), dtype=np.int64)

    def column(metric: str) -> np.ndarray:
        values = [rounds[int(t)].get(f"eval/{metric}") for t in timesteps]
        return np.array([math.nan if v is None else float(v) for v in values])

    return timesteps, {metric: column(metric) for metric in METRICS + STAGE_METRICS}


def run_label(run_dir: str | Path, group_by: str = "agent") -> str:
    """The label of a run: ``"agent"``, the agent's name; ``"run"``, the directory name; any
    other dotted config key ``k``, ``"k=value"``. Falls back to the directory name when the
    run has no config or the key is missing."""
    run_dir = Path(run_dir)
    if group_by == "run":
        return run_dir.name
    key = "agent.name" if group_by == "agent" else group_by
    value: Any = run_config(run_dir)
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return run_dir.name
        value = value[part]
    return str(value) if group_by == "agent" else f"{key}={value}"


def load_runs(
    run_dirs: Sequence[str | Path],
    labels: Sequence[str] | None = None,
    group_by: str = "agent",
) -> list[RunCurves]:
    """The evaluation rounds of each run directory.

    Args:
        run_dirs: run directories (one per seed and agent).
        labels: an explicit grouping, one label per run directory; else ``group_by``.
        group_by: see :func:`run_label`.
    """
    if labels is not None and len(labels) != len(run_dirs):
        raise ValueError(f"{len(labels)} labels for {len(run_dirs)} run directories")
    runs = []
    for i, run_dir in enumerate(run_dirs):
        timesteps, values = read_evaluations(run_dir)
        label = labels[i] if labels is not None else run_label(run_dir, group_by)
        runs.append(RunCurves(Path(run_dir), label, timesteps, values))
    return runs


def aggregate(runs: Sequence[RunCurves]) -> dict[str, dict[str, np.ndarray]]:
    """Mean and standard error over the runs of each label, at the timesteps all of them
    evaluated.

    Returns:
        label (in order of first appearance) -> ``{"timesteps": [K], "num_runs": [K] runs
        with a value, per metric as "<metric>_count", "<metric>_mean": [K],
        "<metric>_stderr": [K]}``; the standard error is ``std(ddof=0) / sqrt(count)``, 0 for
        a single run, NaN where no run has a value.
    """
    groups: dict[str, list[RunCurves]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    result = {}
    for label, members in groups.items():
        timesteps = members[0].timesteps
        for run in members[1:]:
            timesteps = np.intersect1d(timesteps, run.timesteps)
        curves: dict[str, np.ndarray] = {
            "timesteps": timesteps,
            "num_runs": np.full(timesteps.shape, len(members), dtype=np.int64),
        }
        for metric in METRICS + STAGE_METRICS:
            table = np.stack(
                [run.values[metric][np.searchsorted(run.timesteps, timesteps)] for run in members]
            )  # [runs, K]
            count = (~np.isnan(table)).sum(axis=0)
            total = np.nansum(table, axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(count > 0, total / count, np.nan)
                spread = np.nansum((table - mean) ** 2, axis=0)
                stderr = np.where(count > 0, np.sqrt(spread / count) / np.sqrt(count), np.nan)
            curves[f"{metric}_count"] = count
            curves[f"{metric}_mean"] = mean
            curves[f"{metric}_stderr"] = stderr
        result[label] = curves
    return result


def draw_mean_and_band(ax: Axes, curves: dict[str, dict[str, np.ndarray]], metric: str) -> None:
    """On ``ax``, per label of :func:`aggregate`'s output: the mean of ``metric`` over runs
    against timesteps (markers at the evaluations) and, with several runs, a shaded mean +-
    standard error band; the legend label counts the runs."""
    for i, (label, curve) in enumerate(curves.items()):
        colour = f"C{i % 10}"
        x, mean = curve["timesteps"], curve[f"{metric}_mean"]
        runs = int(curve["num_runs"].max(initial=0))
        ax.plot(x, mean, "o-", color=colour, linewidth=1.5, markersize=3,
                label=f"{label} ({runs} run{'s' if runs != 1 else ''})")  # fmt: skip
        if runs > 1:
            stderr = curve[f"{metric}_stderr"]
            ax.fill_between(x, mean - stderr, mean + stderr, color=colour, alpha=0.2,
                            linewidth=0)  # fmt: skip


def has_colregs(curves: dict[str, dict[str, np.ndarray]]) -> bool:
    """Whether some run counted the COLREGs kept (its set held encounter episodes)."""
    return any(np.isfinite(c["colregs_kept_mean"]).any() for c in curves.values())


def draw_sighted_reading(ax: Axes, curves: dict[str, dict[str, np.ndarray]]) -> bool:
    """On the COLREGs panel ``ax``, per label whose records have it, the mean count kept with
    the turn read from sighting (``colregs_kept_sighted``) as a dashed line in the label's
    colour, no band; returns whether any was drawn."""
    drawn = False
    for i, curve in enumerate(curves.values()):
        mean = curve["colregs_kept_sighted_mean"]
        if np.isfinite(mean).any():
            ax.plot(curve["timesteps"], mean, "s--", color=f"C{i % 10}", linewidth=1.0,
                    markersize=2.5)  # fmt: skip
            drawn = True
    return drawn


def draw_learning_curves(fig: Figure, curves: dict[str, dict[str, np.ndarray]]) -> list[Axes]:
    """Draw the three panels of :data:`PANELS` on ``fig`` from :func:`aggregate`'s output, and
    :data:`COLREGS_PANEL` when some run counted the COLREGs kept: per label a mean line and,
    with several runs, a shaded mean +- standard error band; on the COLREGs panel the count
    with the turn read from sighting dashed beside it (:func:`draw_sighted_reading`)."""
    panels = PANELS + ((COLREGS_PANEL,) if has_colregs(curves) else ())
    axes = fig.subplots(1, len(panels))
    for ax, (metric, title) in zip(axes, panels, strict=True):
        draw_mean_and_band(ax, curves, metric)
        ax.set_title(title)
        if metric == COLREGS_PANEL[0] and draw_sighted_reading(ax, curves):
            ax.text(0.02, 0.02, "solid: turn from the start; dashed: from sighting",
                    transform=ax.transAxes, fontsize="x-small", color="0.3")  # fmt: skip
        if metric == "travel_time" and all(np.isnan(c[f"{metric}_mean"]).all()
                                           for c in curves.values()):  # fmt: skip
            # travel time is measured on successful episodes only: with none there is no
            # value, so no y axis either (matplotlib would draw an arbitrary 0-1 scale)
            ax.text(0.5, 0.5, "no successful episode", transform=ax.transAxes, ha="center",
                    va="center", color="0.4")  # fmt: skip
            ax.set_yticks([])
        ax.set_xlabel("timesteps")
        ax.grid(True, alpha=0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    axes[1].set_ylim(-0.05, 1.05)
    axes[0].legend(loc="best", fontsize="small")
    return list(axes)


def stages_with_data(curves: dict[str, dict[str, np.ndarray]]) -> list[int]:
    """The curriculum stages some run evaluated (a stage rate that is not NaN): a one-stage run
    (``curriculum=stage0``) has stage 0 only, the paper's curriculum all six."""
    return [
        stage for stage, metric in enumerate(STAGE_METRICS)
        if any(np.isfinite(curve[f"{metric}_mean"]).any() for curve in curves.values())
    ]  # fmt: skip


def draw_stage_curves(fig: Figure, curves: dict[str, dict[str, np.ndarray]]) -> list[Axes]:
    """One panel per curriculum stage the runs evaluated (:func:`stages_with_data`; no empty
    panels for stages a run never had): the success rate on that stage's evaluation episodes
    (mean over runs, markers at the evaluations, mean +- standard error with several runs).
    Records without stage rates give one panel saying so."""
    stages = stages_with_data(curves)
    if not stages:
        ax = fig.subplots(1, 1)
        ax.text(0.5, 0.5, "no per-stage success rates in these evaluations",
                transform=ax.transAxes, ha="center", va="center", color="0.4")  # fmt: skip
        ax.set_xticks([])
        ax.set_yticks([])
        return [ax]
    axes = np.atleast_1d(fig.subplots(1, len(stages), sharey=True))
    for stage, ax in zip(stages, axes, strict=True):
        metric = STAGE_METRICS[stage]
        draw_mean_and_band(ax, curves, metric)
        ax.set_title(f"Stage {stage} success")
        ax.set_xlabel("timesteps")
        ax.grid(True, alpha=0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    axes[0].set_ylim(-0.05, 1.05)
    axes[0].legend(loc="best", fontsize="small")
    return list(axes)


def plot_learning_curves(
    run_dirs: Sequence[str | Path],
    path: str | Path,
    labels: Sequence[str] | None = None,
    group_by: str = "agent",
    size_inches: tuple[float, float] | None = None,
    dpi: int = 100,
    per_stage: bool = False,
) -> dict[str, dict[str, np.ndarray]]:
    """Write the learning curves of ``run_dirs`` (grouped by ``labels`` or ``group_by``, see
    :func:`load_runs`) to an image file ``path``: the panels of :func:`draw_learning_curves`,
    or with ``per_stage`` the success rate of each curriculum stage. Returns the plotted
    :func:`aggregate`."""
    curves = aggregate(load_runs(run_dirs, labels, group_by))
    if size_inches is None:  # per stage: 3 inches a panel (at least 6 for a lone panel)
        panels = max(2, len(stages_with_data(curves)))
        wide = 20.0 if has_colregs(curves) else 15.0
        size_inches = (3.0 * panels, 3.5) if per_stage else (wide, 4.5)
    fig = Figure(figsize=size_inches, dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    (draw_stage_curves if per_stage else draw_learning_curves)(fig, curves)
    save_figure(fig, path)
    return curves
