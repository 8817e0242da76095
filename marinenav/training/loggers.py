"""Metric loggers (TorchRL's) and the progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchrl.record.loggers import Logger, get_logger


def make_logger(cfg, run_dir: Path, config: dict[str, Any]) -> Logger:
    """A TorchRL logger writing under ``run_dir``: CSV by default (no account, no server),
    TensorBoard, Weights & Biases or MLflow when chosen (their packages must be installed)."""
    backend = cfg.backend
    kwargs: dict[str, Any] = {}
    if backend == "wandb":
        kwargs = {"project": cfg.project, "config": config}
    elif backend == "mlflow":
        kwargs = {"tracking_uri": (run_dir / "mlruns").resolve().as_uri()}
    name = "logs" if backend in ("csv", "tensorboard") else cfg.project
    return get_logger(backend, logger_name=str(run_dir), experiment_name=name, **kwargs)


def progress_bar(cfg, total: int, initial: int):
    """A tqdm bar over timesteps, or ``None`` when disabled or tqdm is missing."""
    if not cfg.progress_bar:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True, smoothing=0.05)
