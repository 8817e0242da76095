"""Comparing runs: a table of several run directories or of a whole Hydra sweep.

A Hydra sweep (``python train.py -m ...``) writes one run directory per combination, named
``0``, ``1``, ... under the sweep directory, beside ``multirun.yaml`` (and, for the Optuna
sweeper, ``optimization_results.yaml``). :func:`expand_run_dirs` turns the paths a user names
(run directories, sweep directories, or a shell glob such as ``SWEEP/*``) into run directories,
so that ``python -m marinenav.viz curves SWEEP`` and ``... runs SWEEP`` take a sweep as it is.
A job of several seeds (``seeds=[0,1,2]``, :mod:`marinenav.training.seeds`) is taken the same
way: its directory becomes its ``seed<N>`` run directories, in seed order.

``python -m marinenav.viz runs DIR [DIR ...]`` prints :func:`runs_table`, one Markdown row per
run: its agent and seed, the overrides it was started with (``.hydra/overrides.yaml``), the
timesteps and wall-clock minutes of its last evaluation, and its last and best validation
success with the episode counts and Wilson 95% intervals (read with
:func:`marinenav.viz.quality.read_run`). A run that has not evaluated yet (still starting, or
killed before its first evaluation) gets a row saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from marinenav.run_files import (
    CHECKPOINT_NAME,
    EVALUATIONS_NAME,
    LARGE_NAME,
    SUMMARY_NAME,
    run_config,
    seed_directories,
)
from marinenav.stats import format_rate
from marinenav.viz.quality import read_run

# what marks a directory as one run: the trainer's evaluations or checkpoint, Hydra's record, or
# a collected result's large-set evaluation of its last checkpoint (all that viz compare reads)
RUN_MARKERS = (EVALUATIONS_NAME, CHECKPOINT_NAME, ".hydra", LARGE_NAME)


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a run directory (holds one of :data:`RUN_MARKERS`)."""
    return path.is_dir() and any((path / marker).exists() for marker in RUN_MARKERS)


def seed_job_runs(path: Path) -> list[Path]:
    """The ``seed<N>`` run directories of a job of several seeds (a directory with
    ``seeds.json``), in seed order; empty for any other directory."""
    if not (path / SUMMARY_NAME).is_file():
        return []
    return [run for run in seed_directories(path) if is_run_dir(run)]


def _sweep_order(path: Path) -> tuple[int, int | str]:
    """Hydra's job numbers in numeric order (2 before 10), then a several-seed job's ``seed<N>``
    in numeric order, other names after them."""
    if path.name.isdigit():
        return (0, int(path.name))
    seed = re.fullmatch(r"seed(\d+)", path.name)
    return (1, int(seed.group(1))) if seed else (2, path.name)


def expand_run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Run directories of ``paths``, in order: a run directory is kept, a sweep directory (no run
    itself, with run directories inside) becomes its runs in job order, and a file (a sweep's
    ``multirun.yaml`` caught by ``SWEEP/*``) is skipped. Raises ``FileNotFoundError`` for a
    missing path and ``ValueError`` for a directory that is neither, or when no run is left."""
    runs: list[Path] = []
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(f"run directory {path} does not exist")
        if not path.is_dir():
            continue  # multirun.yaml, optimization_results.yaml, ...
        if (path / SUMMARY_NAME).is_file():  # a job of several seeds: its seeds' runs
            runs.extend(seed_job_runs(path))
            continue
        if is_run_dir(path):
            runs.append(path)
            continue
        inside = sorted((p for p in path.iterdir() if is_run_dir(p)), key=_sweep_order)
        inside = [run for p in inside for run in (seed_job_runs(p) or [p])]
        if not inside:
            raise ValueError(
                f"{path} is neither a run directory (no {EVALUATIONS_NAME}, {CHECKPOINT_NAME}, "
                f".hydra or {LARGE_NAME}) nor a sweep directory (no run directories inside)"
            )
        runs.extend(inside)
    if not runs:
        raise ValueError(f"no run directory among {', '.join(map(str, paths))}")
    return runs


def run_overrides(run_dir: Path) -> list[str]:
    """The command-line overrides the run was started with (``.hydra/overrides.yaml``; a sweep
    job's include its own values), empty where Hydra left no record."""
    path = run_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    return [str(item) for item in OmegaConf.to_container(OmegaConf.load(path))]


def _get(config: dict[str, Any] | None, key: str) -> Any:
    """A dotted key of a run config, or None."""
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def run_row(run_dir: Path) -> dict[str, str]:
    """The cells of one run's row of :func:`runs_table`."""
    config = run_config(run_dir)
    row = {
        "run": str(run_dir),
        "agent": str(_get(config, "agent.name") or "?"),
        "seed": str(_get(config, "seed") if _get(config, "seed") is not None else "?"),
        "overrides": " ".join(run_overrides(run_dir)) or "-",
    }
    try:
        run = read_run(run_dir, require_wall_clock=False)
    except FileNotFoundError:
        return {**row, "timesteps": "-", "minutes": "-", "last": "no evaluation yet", "best": "-"}
    except (ValueError, KeyError, TypeError) as error:  # records without per-episode outcomes
        return {**row, "timesteps": "-", "minutes": "-", "last": f"unreadable: {error}",
                "best": "-"}  # fmt: skip
    best = max(range(len(run.rates)), key=lambda k: (run.rates[k], k))  # ties: the later
    minutes = run.minutes[-1]
    return {
        **row,
        "timesteps": f"{run.timesteps[-1]:,}",
        "minutes": "-" if math.isnan(minutes) else f"{minutes:.1f}",
        "last": format_rate(run.successes[-1], run.episodes[-1]),
        "best": f"{format_rate(run.successes[best], run.episodes[best])} at "
        f"{run.timesteps[best]:,}",
    }


COLUMNS = ("run", "agent", "seed", "overrides", "timesteps", "minutes", "last", "best")
HEADERS = ("run", "agent", "seed", "overrides", "timesteps", "wall clock (min)",
           "last validation success", "best validation success")  # fmt: skip


def runs_table(run_dirs: Sequence[Path]) -> str:
    """A Markdown table of the runs (:func:`run_row`), one row each, in the order given."""
    rows = [
        "| " + " | ".join(HEADERS) + " |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for run_dir in run_dirs:
        cells = run_row(Path(run_dir))
        rows.append("| " + " | ".join(cells[c].replace("|", "\\|") for c in COLUMNS) + " |")
    return "\n".join(rows)
