"""What a run ran on: the code's commit, the libraries, the CPU and the device.

A run's numbers depend on the code that trained it and, for its clocks (``wall_clock_s``,
``cpu_s`` of ``evaluations.jsonl``), on the machine: the same recipe trains at about 280
timesteps per CPU second on one 2-core VM and at under half that on another
(docs/benchmarks.md, "The same run on another CPU"). A resumed run may continue on another
machine, so each training session (the first start and every resume) appends one record to
``sessions.jsonl`` in the run directory (:func:`record_session`):

* ``time``, ``timestep``: when the session started and from which timestep;
* ``commit``, ``dirty``: ``git rev-parse HEAD`` of the checkout the ``marinenav`` package was
  imported from, and whether its tracked files differed from that commit (both ``null`` for an
  installed copy outside a checkout: :func:`code_version`);
* ``python``, ``torch``, ``torchrl``, ``tensordict``, ``numpy``: the versions;
* ``cpu``, ``logical_cores``, ``threads``: the CPU model, ``os.cpu_count()`` and torch's
  intra-op threads; ``device`` and ``gpu`` (the CUDA device's name, ``null`` on a CPU run);
* ``host``: the host name.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from marinenav.files import append_line

SESSIONS_NAME = "sessions.jsonl"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the checkout holding marinenav/
LIBRARIES = ("torch", "torchrl", "tensordict", "numpy")  # their installed versions


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS``'s output, stripped; ``None`` when git is missing or fails."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


# top-level folders of the repository whose files no run or evaluation reads as code
NOT_CODE = ("results", "docs")


def code_version(root: str | Path = PACKAGE_ROOT) -> dict[str, Any]:
    """``{"commit": str | None, "dirty": bool | None}`` of the git checkout whose top level is
    ``root``. ``None`` for both when ``root`` is not the top of a checkout (a package installed
    into a virtual environment that lies inside some other repository is not that repository's
    code) or git is missing. ``dirty``: a tracked file differs from the commit, outside
    :data:`NOT_CODE` (measurements and words: an evaluation written into ``results/`` leaves the
    code it ran as clean as it was; untracked files are not counted)."""
    root = Path(root).resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return {"commit": None, "dirty": None}
    commit = _git(root, "rev-parse", "HEAD")
    excluded = [f":(exclude){path}" for path in NOT_CODE]
    status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_record(device: torch.device | str) -> dict[str, Any]:
    """What runs now, on ``device``: the keys of the module docstring but ``timestep``. Also
    what ``python -m marinenav.evaluate --out`` records of the evaluation (``evaluated_by``)."""
    device = torch.device(device)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    return {
        "time": datetime.datetime.now().isoformat(timespec="seconds"), **code_version(),
        "python": platform.python_version(),
        **{name: _version(name) for name in LIBRARIES},
        "cpu": cpu_model(), "logical_cores": os.cpu_count(), "threads": torch.get_num_threads(),
        "device": str(device), "gpu": gpu, "host": socket.gethostname(),
    }  # fmt: skip


def record_session(run_dir: str | Path, device: torch.device | str, timestep: int) -> Path:
    """Append this session's record (:func:`machine_record` and the ``timestep`` it starts
    from) to ``run_dir/sessions.jsonl``."""
    record = {"timestep": timestep, **machine_record(device)}
    return append_line(Path(run_dir) / SESSIONS_NAME, json.dumps(record))


def read_sessions(run_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``run_dir/sessions.jsonl``, oldest first (empty when there is none: a run
    trained before the file existed)."""
    path = Path(run_dir) / SESSIONS_NAME
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
