"""Metric loggers (TorchRL's) and the progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchrl.record.loggers import Logger, get_logger

from marinenav.files import write_text

LOGGER_BACKENDS = ("csv", "tensorboard", "wandb", "mlflow")
"""TorchRL loggers a run can write through (``logger.backend``); csv needs no extra package."""


def make_logger(cfg, run_dir: Path, config: dict[str, Any]) -> Logger:
    """A TorchRL logger writing under ``run_dir``: CSV by default (no account, no server),
    TensorBoard, Weights & Biases or MLflow when chosen (their packages must be installed)."""
    backend = cfg.backend
    if backend not in LOGGER_BACKENDS:
        allowed = ", ".join(LOGGER_BACKENDS)
        raise ValueError(f"logger.backend must be one of {allowed}, got {backend!r}")
    kwargs: dict[str, Any] = {}
    if backend == "wandb":
        kwargs = {"project": cfg.project, "config": config}
    elif backend == "mlflow":
        kwargs = {"tracking_uri": (run_dir / "mlruns").resolve().as_uri()}
    name = "logs" if backend in ("csv", "tensorboard") else cfg.project
    return get_logger(backend, logger_name=str(run_dir), experiment_name=name, **kwargs)


def truncate_csv_logs(log_dir: Path, timestep: int, evaluations: list[dict[str, Any]]) -> None:
    """Make the CSV logs of a run (``logs/scalars/**.csv``, ``step,value`` lines) those of the
    state it continues from: the ``eval/`` files are rewritten from ``evaluations`` (the
    evaluations the checkpoint kept, as ``evaluations.jsonl``), every other file loses its rows
    after ``timestep`` and any torn last line (a run killed after a checkpoint logs them again
    when it resumes)."""
    scalars = Path(log_dir) / "scalars"
    if not scalars.is_dir():
        return
    rows: dict[str, list[str]] = {}
    for metrics in evaluations:
        for name, value in metrics.items():
            if name.startswith("eval/") and value is not None:
                rows.setdefault(name, []).append(f"{metrics['timestep']},{float(value)}\n")
    for path in scalars.rglob("*.csv"):
        name = path.relative_to(scalars).with_suffix("").as_posix()
        if name.startswith("eval/"):
            kept = rows.pop(name, [])
        else:
            kept = [line for line in path.read_text().splitlines(keepends=True)
                    if line.endswith("\n") and _step(line) is not None
                    and _step(line) <= timestep]  # fmt: skip
        write_text(path, "".join(kept))
    for name, lines in rows.items():  # an evaluation whose file was lost
        path = scalars / f"{name}.csv"
        write_text(path, "".join(lines))


def _step(line: str) -> int | None:
    """The step of a ``step,value`` line, or ``None`` for a malformed one."""
    try:
        return int(line.split(",", 1)[0])
    except ValueError:
        return None


def progress_bar(cfg, total: int, initial: int):
    """A tqdm bar over timesteps, or ``None`` when disabled or tqdm is missing."""
    if not cfg.progress_bar:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True, smoothing=0.05)
