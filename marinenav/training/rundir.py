"""One run per run directory: the lock a living run holds, what a run may do with the files it
finds there, and which directories a refused start made (and so may remove).

A run directory holds one run's checkpoint, evaluations and logs; two processes writing into it
interleave them and the last checkpoint written wins. So a run *owns* its directory while it
lives (:class:`RunDirectoryLock`: ``run.lock``, naming the process and host), refuses a
directory holding a checkpoint unless asked to resume it (``resume=true``) or to replace it
(``overwrite=true``), and refuses a resume whose config would not fit the checkpoint's tensors
(:func:`check_resumable`) before writing anything. Every refusal is a
:class:`RunDirectoryError`: one line, exit status 2 from ``train.py``, like a bad key.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from marinenav.files import append_line
from marinenav.run_files import CHECKPOINT_NAME, EVALUATIONS_NAME, LARGE_NAME
from marinenav.training.machine import SESSIONS_NAME
from marinenav.training.validation import ConfigError

LOCK_NAME = "run.lock"
RESUMES_NAME = "resumes.jsonl"  # one record per resume: when, from which timestep, what changed
# what a trainer writes into its run directory: replaced as a whole by overwrite=true
RUN_OUTPUTS = (
    CHECKPOINT_NAME, f"{CHECKPOINT_NAME}.tmp", "best", "evaluated", "logs", "mlruns",
    EVALUATIONS_NAME, "eval_configs.json", RESUMES_NAME, LARGE_NAME,
    SESSIONS_NAME,
)  # fmt: skip
# keys a resumed run may change: its budget, when it evaluates, checkpoints and logs, and where
# it runs; every other key shapes the tensors or the task, and must be the checkpoint's
MAY_CHANGE = (
    "training.total_timesteps", "evaluation.interval", "evaluation.first", "checkpoint.*",
    "logger.*", "device", "threads", "compile", "cudagraphs", "resume", "overwrite",
)  # fmt: skip


class RunDirectoryError(ConfigError):
    """A start refused because of what its run directory holds (another living run, an earlier
    run's checkpoint, a checkpoint the config does not fit); one line naming what to do."""


def _process_start(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (clock ticks since boot; ``None`` where
    /proc cannot tell): with the pid, it names a process even after its pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


def _alive(holder: dict[str, Any]) -> bool:
    """Whether the process a lock record names still runs (same host only)."""
    pid = int(holder.get("pid", 0))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    started = holder.get("process_start")
    return started is None or _process_start(pid) in (None, started)


class RunDirectoryLock:
    """``run.lock`` in a run directory: an exclusive ``flock`` held while the run lives, and a
    record of the holder (pid, host, start) for the message another run gets.

    The kernel drops the ``flock`` when its process dies, so a lock file left by a killed run
    is taken over (and :meth:`acquire` says so); a record naming a process that still runs on
    this host (a file system without locks) or a process on another host (which this host
    cannot check) refuses the start.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _busy(self, holder: dict[str, Any], reason: str = "") -> RunDirectoryError:
        return RunDirectoryError(
            f"run directory {self.run_dir} is in use by process {holder.get('pid', '?')} on "
            f"{holder.get('host', '?')} (since {holder.get('since', '?')}){reason}; wait for "
            f"that run to end or choose another hydra.run.dir (lock: {self.path})"
        )

    def acquire(self) -> str | None:
        """Take the directory, or raise :class:`RunDirectoryError` naming its holder. Returns
        a note when a stale lock of a dead process was taken over, else ``None``."""
        host = socket.gethostname()
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_record(fd)
                os.close(fd)
                raise self._busy(holder) from None
            try:
                same_file = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same_file = False
            if same_file:
                break
            os.close(fd)  # its holder released and removed it meanwhile: take the new one
        holder = _read_record(fd)
        note = None
        if holder:
            if holder.get("host") != host:
                os.close(fd)
                raise self._busy(holder, f", which {host} cannot check; if that run has "
                                         f"ended, delete {self.path}")  # fmt: skip
            if _alive(holder):  # a file system that ignores flock
                os.close(fd)
                raise self._busy(holder)
            note = (f"took over the stale lock of process {holder.get('pid')} on {host} "
                    f"(since {holder.get('since', '?')}), which is no longer running")  # fmt: skip
        record = {
            "pid": os.getpid(), "host": host,
            "since": datetime.datetime.now().isoformat(timespec="seconds"),
            "process_start": _process_start(os.getpid()),
        }  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return note

    def release(self) -> None:
        """Remove the lock file and drop the lock (nothing when not held)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                self.path.unlink()
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)


def _read_record(fd: int) -> dict[str, Any]:
    """The holder record of an open lock file (empty when there is none or it is torn)."""
    data = os.pread(fd, 4096, 0)
    try:
        record = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def check_fresh_start(run_dir: Path, overwrite: bool) -> None:
    """A run that does not resume may start in ``run_dir`` only when no earlier run left a
    checkpoint there, or when the user asked to replace it (``overwrite=true``: the earlier
    run's outputs are removed first, so nothing of it mixes with the new run's)."""
    checkpoint = run_dir / CHECKPOINT_NAME
    if not checkpoint.is_file():
        return
    if not overwrite:
        raise RunDirectoryError(
            f"run directory {run_dir} holds the checkpoint of an earlier run; continue it with "
            "resume=true, replace it with overwrite=true, or choose another hydra.run.dir"
        )
    for name in RUN_OUTPUTS:
        path = run_dir / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as ``{"a.b": value}``."""
    if not isinstance(tree, dict):
        return {prefix.rstrip("."): tree}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        flat.update(_flat(value, f"{prefix}{key}."))
    return flat


def _may_change(key: str) -> bool:
    return any(key == name or (name.endswith("*") and key.startswith(name[:-1]))
               for name in MAY_CHANGE)  # fmt: skip


def config_changes(saved: dict[str, Any], current: dict[str, Any]) -> dict[str, tuple]:
    """``{key: (checkpoint's value, this run's)}`` for every key both configs have and that
    differs (a key one of them lacks, from an older or newer version, is not compared)."""
    before, after = _flat(saved), _flat(current)
    return {key: (before[key], after[key]) for key in before.keys() & after.keys()
            if before[key] != after[key]}  # fmt: skip


def check_resumable(path: Path, saved: dict[str, Any], current: dict[str, Any]) -> dict:
    """Refuse (one line) a resume whose config differs from the checkpoint's in a key that
    shapes its tensors or its task (agent, environment sizes and slots, replay capacity,
    curriculum, seed, ...); return the allowed changes (:data:`MAY_CHANGE`) to record."""
    changes = config_changes(saved, current)
    fixed = {key: values for key, values in changes.items() if not _may_change(key)}
    if "agent.name" in fixed:  # another agent: its options differ as a matter of course
        fixed = {key: v for key, v in fixed.items() if not key.startswith("agent.")} | {
            "agent.name": fixed["agent.name"]}  # fmt: skip
    if fixed:
        keys = sorted(fixed)
        then = ", ".join(f"{key}={fixed[key][0]}" for key in keys)
        now = ", ".join(f"{key}={fixed[key][1]}" for key in keys)
        raise RunDirectoryError(
            f"resume: checkpoint {path} was trained with {then}, this run asks for {now}; "
            f"these must match to resume (a resume may change only {', '.join(MAY_CHANGE[:-2])})"
        )
    return {key: values for key, values in changes.items() if key not in ("resume", "overwrite")}


def record_resume(run_dir: Path, timestep: int, source: Path, changes: dict) -> str:
    """Append the resume to ``resumes.jsonl`` and return the line a resumed run prints."""
    record = {
        "time": datetime.datetime.now().isoformat(timespec="seconds"),
        "timestep": timestep, "checkpoint": str(source),
        "changed": {key: list(values) for key, values in sorted(changes.items())},
    }  # fmt: skip
    append_line(run_dir / RESUMES_NAME, json.dumps(record))
    changed = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in sorted(changes.items()))
    return (f"marinenav: resuming {source} at timestep {timestep:,}; "
            f"changed: {changed or 'nothing'} (recorded in {RESUMES_NAME})")  # fmt: skip


# ---------------------------------------------------------------- what a refused start removes
# directories that did not exist when Hydra started this process's run or sweep: only these may
# be removed when the start is refused (a directory the user made stays, empty or not)
_NEW_DIRECTORIES: set[Path] = set()
_NEW_SWEEPS: set[Path] = set()
_NEW_LOGS: set[Path] = set()  # Hydra's job log (train.log), when it did not exist before


def _missing(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet."""
    missing = []
    for directory in (path, *path.parents):
        if directory.exists():
            break
        missing.append(directory)
    return missing


class RunDirectoryCallback(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml): notes, before Hydra makes the
    run (sweep) directory, which of it and its parents are new, so that a refused start removes
    only those. Jobs run in other processes (submitit) see no note and remove nothing."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        with contextlib.suppress(Exception):  # an unresolvable path: note nothing
            run_dir = Path(str(config.hydra.run.dir)).absolute()
            _NEW_DIRECTORIES.update(_missing(run_dir))
            log = run_dir / f"{config.hydra.job.name}.log"
            if not log.exists():
                _NEW_LOGS.add(log)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with contextlib.suppress(Exception):
            sweep = Path(str(config.hydra.sweep.dir)).absolute()
            if not sweep.exists():
                _NEW_SWEEPS.add(sweep)


def remove_new_directories(run_dir: Path) -> None:
    """After a refused start: remove ``run_dir`` when this run made it, then each parent this
    run made, while empty (and, in a directory that stays, the empty job log Hydra opened for
    this start). A job of a sweep made here removes its own directory only."""
    run_dir = Path(run_dir).absolute()
    for log in _NEW_LOGS:  # Hydra's empty job log in a directory that stays
        if log.parent == run_dir and log.is_file() and log.stat().st_size == 0:
            log.unlink()
    if run_dir in _NEW_DIRECTORIES:
        shutil.rmtree(run_dir, ignore_errors=True)
        for parent in run_dir.parents:
            if parent not in _NEW_DIRECTORIES:
                break
            try:
                parent.rmdir()
            except OSError:  # not empty: another run's too
                break
    elif run_dir.parent in _NEW_SWEEPS:
        shutil.rmtree(run_dir, ignore_errors=True)
