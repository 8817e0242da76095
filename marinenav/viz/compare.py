"""Comparing recipes over seeds: ``python -m marinenav.viz compare`` and the aggregate rows of
``python -m marinenav.viz runs``.

``python -m marinenav.viz compare GROUP [GROUP ...] [--labels L ...] [--out profiles.png]``
takes each ``GROUP`` as the runs of one recipe: a sweep directory (its jobs), a directory of
run directories (``results/recipes/ac_iqn``: ``seed0``, ``seed1``, ...), one run directory, or a
quoted glob of run directories (``'results/recipes/ac_iqn/candidates/b256_336k_seed*'``); or a
quoted glob of evaluation files, one per run (``'results/evaluations/waters/X_s?__harbour.json'``:
the recipe's planners in one water, each scored by its file). It
prints the aggregate table of :mod:`marinenav.aggregate` (IQM, mean, median with stratified
bootstrap 95% intervals, worst run), the probability of improvement of every group over every
other, and draws the groups' performance profiles (fraction of runs whose score exceeds each
success level tau, with bootstrap bands).

``viz runs`` groups the runs it lists by agent and overrides (the seed and Hydra's own keys left
out) and adds the same aggregate row for each group.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from marinenav.aggregate import (
    Aggregate,
    RunScore,
    ScoreSource,
    aggregate,
    evaluation_file_score,
    performance_profiles,
    run_score,
)
from marinenav.files import save_figure
from marinenav.run_files import run_config
from marinenav.viz.runs import expand_run_dirs, run_overrides

TAUS = np.linspace(0.0, 1.0, 401)  # success levels of the performance profiles


def _paths(spec: str) -> list[Path]:
    """The paths one ``compare`` argument names: itself, or a glob pattern's matches in order.
    Raises ``FileNotFoundError`` for a pattern that matches nothing."""
    if any(char in spec for char in "*?[") and not Path(spec).exists():
        matches = sorted(glob.glob(spec))
        if not matches:
            raise FileNotFoundError(f"{spec} matches no run directory or evaluation file")
        return [Path(match) for match in matches]
    return [Path(spec)]


def group_runs(spec: str) -> list[Path]:
    """The run directories of one ``compare`` argument: a path (run, sweep, or directory of
    runs; :func:`marinenav.viz.runs.expand_run_dirs`) or a glob pattern of them. Raises
    ``FileNotFoundError`` for a pattern that matches nothing."""
    return expand_run_dirs(_paths(spec))


def _one_source(scores: list[RunScore], source: ScoreSource) -> list[RunScore]:
    """``scores`` as scored, or with ``source="auto"`` and some runs lacking the large set,
    every run's validation instead (each run has that)."""
    if source == "auto" and len({score.source for score in scores}) > 1:
        return [run_score(score.run_dir, "validation") for score in scores]
    return scores


def group_scores(spec: str, source: ScoreSource = "auto") -> list[RunScore]:
    """The scores of one ``compare`` argument: each evaluation file's where ``spec`` is a
    ``.json`` file or a glob of them, else each run's (:func:`group_runs`,
    :func:`~marinenav.aggregate.run_score`; ``"auto"`` falls back to every run's validation
    when some lack the large set). Raises ``FileNotFoundError`` for nothing to read and
    ``ValueError`` for a glob that mixes files and run directories."""
    paths = _paths(spec)
    files = [path for path in paths if path.is_file() and path.suffix == ".json"]
    if files:
        if len(files) != len(paths):
            raise ValueError(f"{spec} matches evaluation files and other paths; give one kind")
        scores = [evaluation_file_score(path) for path in files]
        names = distinct_names([score.name for score in scores])
        return [replace(score, name=name) for score, name in zip(scores, names, strict=True)]
    return _one_source([run_score(run_dir, source) for run_dir in expand_run_dirs(paths)], source)


def distinct_names(stems: list[str]) -> list[str]:
    """The part of each of several file stems that tells them apart, cut at ``_`` boundaries
    (``ours_x_s0__harbour``, ``ours_x_s1__harbour`` -> ``s0``, ``s1``); one stem, or stems that
    nothing common surrounds, as they are."""
    if len(stems) < 2:
        return list(stems)
    prefix = os.path.commonprefix(stems)
    prefix = prefix[: prefix.rfind("_") + 1]
    suffix = os.path.commonprefix([stem[::-1] for stem in stems])[::-1]
    suffix = suffix[suffix.find("_"):] if "_" in suffix else ""
    names = [stem[len(prefix): len(stem) - len(suffix)] for stem in stems]
    return names if all(names) and len(set(names)) == len(names) else list(stems)


def recipe_key(run_dir: Path) -> str:
    """What makes two runs the same recipe in ``viz runs``: the agent and the command-line
    overrides, the seed and Hydra's own keys (``hydra.*``) left out."""
    config = run_config(run_dir)
    agent = config.get("agent", {}).get("name", "?") if isinstance(config, dict) else "?"
    overrides = [
        item for item in run_overrides(run_dir)
        if not item.lstrip("+~").startswith(("seed=", "hydra.", "agent="))
    ]  # fmt: skip
    return " ".join([f"agent={agent}", *overrides])


def sweep_aggregates(
    run_dirs: Sequence[Path], source: ScoreSource = "auto", reps: int = 50_000
) -> list[Aggregate]:
    """One :class:`~marinenav.aggregate.Aggregate` per recipe among ``run_dirs``
    (:func:`recipe_key`), in order of first appearance; runs without an evaluation are left
    out. A group mixing large-set and validation scores is scored on validation (each run has
    that)."""
    groups: dict[str, list[Path]] = {}
    for run_dir in run_dirs:
        groups.setdefault(recipe_key(run_dir), []).append(run_dir)
    result = []
    for key, members in groups.items():
        scores = []
        for run_dir in members:
            try:
                scores.append(run_score(run_dir, source))
            except FileNotFoundError:
                continue  # not evaluated yet: the run table says so
        if scores:
            result.append(aggregate(key, _one_source(scores, source), reps=reps))
    return result


def plot_performance_profiles(
    groups: Sequence[Aggregate], out: str | Path, reps: int = 2_000
) -> Path:
    """The groups' performance profiles: the fraction of runs whose score exceeds each success
    level tau in [0, 1], a line per group with its bootstrap 95% band."""
    profiles, bands = performance_profiles(groups, TAUS, reps=reps)
    fig = Figure(figsize=(7, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for group in groups:
        n = len(group.runs)
        line = ax.plot(TAUS, profiles[group.label], label=f"{group.label} ({n} runs)")[0]
        low, high = bands[group.label]
        ax.fill_between(TAUS, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    source = "large set" if groups and groups[0].runs[0].source == "large" else "validation"
    ax.set_xlabel(f"success rate of the last checkpoint ({source}), tau")
    ax.set_ylabel("fraction of runs with success > tau")
    lowest = min(run.score for group in groups for run in group.runs)
    ax.set_xlim(max(0.0, math.floor((lowest - 0.05) * 20) / 20), 1.0)  # from below the worst
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
