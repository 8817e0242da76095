"""Metric loggers (TorchRL's) and the progress bar."""

from __future__ import annotations

import datetime
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

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


PLAIN_PROGRESS_INTERVAL = 30.0
"""Seconds between two lines of the plain progress, written when the output is not a
terminal."""


class PlainProgress:
    """The progress bar's form for output that is not a terminal (``nohup``, Slurm, a pipe):
    plain lines, at most one every ``interval`` seconds, and a last one on :meth:`close`, e.g.
    ``training: 120,000 / 560,000 steps (21%), 0:02:05 elapsed, 0:07:38 left; steps/s=960,
    success=0.45``. Where a terminal's bar redraws itself with carriage returns (megabytes in a
    log file over a run), this writes a few lines a minute.

    It has the part of tqdm's interface the trainer uses: :meth:`update`,
    :meth:`set_description`, :meth:`set_postfix`, :meth:`close`.

    Args:
        total: the last timestep.
        initial: the timestep the run starts (or resumes) from.
        stream: where the lines go (default ``sys.stderr``, as tqdm's).
        interval: the least time between two lines (s).
        clock: a monotonic clock in seconds (tests pass a fake one).
    """

    def __init__(
        self,
        total: int,
        initial: int = 0,
        stream: TextIO | None = None,
        interval: float = PLAIN_PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.n, self.initial = int(total), int(initial), int(initial)
        self.stream = stream if stream is not None else sys.stderr
        self.interval, self.clock = float(interval), clock
        self.description, self.postfix = "", {}
        self.started = self.last_written = clock()
        self.closed = False

    def set_description(self, description: str) -> None:
        """The line's leading word(s), e.g. ``training``; shown from the next line on."""
        self.description = description

    def set_postfix(self, values: dict[str, Any], refresh: bool = False) -> None:
        """``name=value`` pairs shown at the end of the next line (``refresh`` is ignored: a
        line is written only when it is due)."""
        self.postfix = dict(values)

    def update(self, n: int) -> None:
        """Advance by ``n`` timesteps; write a line when ``interval`` seconds have passed since
        the last one."""
        self.n += int(n)
        now = self.clock()
        if now - self.last_written >= self.interval:
            self._write(now)

    def close(self) -> None:
        """Write the last line (once)."""
        if not self.closed:
            self.closed = True
            self._write(self.clock())

    def line(self, now: float) -> str:
        """The progress line at the clock's time ``now`` (s)."""
        elapsed = now - self.started
        done = self.n - self.initial
        text = f"{self.n:,} / {self.total:,} steps ({100 * self.n / max(self.total, 1):.0f}%), "
        text += f"{_duration(elapsed)} elapsed"
        if 0 < done and self.n < self.total:
            text += f", {_duration((self.total - self.n) * elapsed / done)} left"
        if self.description:
            text = f"{self.description}: {text}"
        if self.postfix:
            text += "; " + ", ".join(f"{key}={value}" for key, value in self.postfix.items())
        return text

    def _write(self, now: float) -> None:
        print(self.line(now), file=self.stream, flush=True)
        self.last_written = now


def _duration(seconds: float) -> str:
    """``H:MM:SS`` of a duration in seconds."""
    return str(datetime.timedelta(seconds=round(seconds)))


def progress_bar(cfg, total: int, initial: int, stream: TextIO | None = None):
    """The run's progress over timesteps: a tqdm bar on a terminal, :class:`PlainProgress`
    lines when ``stream`` (default ``sys.stderr``, where the bar writes) is not one, or
    ``None`` when ``cfg.progress_bar`` is off or tqdm is missing."""
    if not cfg.progress_bar:
        return None
    stream = stream if stream is not None else sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        return PlainProgress(total, initial, stream)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(
        total=total, initial=initial, unit="step", dynamic_ncols=True, smoothing=0.05,
        file=stream,
    )  # fmt: skip
