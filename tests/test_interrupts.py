"""Stop signals: a run that gets SIGINT or SIGTERM finishes its step, writes a checkpoint, prints
one line with the resume command, and the printed command continues the counters."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from marinenav.training.trainer import StopSignals
from tests.run_utils import LONG, ROOT, TINY, logged_at, start_training, train_py, wait_for


# SIGINT's run is in the long set (the handler is the same; SIGTERM is what schedulers send)
@pytest.mark.parametrize(
    "signum", [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM]
)
def test_a_stop_signal_checkpoints_and_prints_the_resume_command(signum, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    process = start_training(run_dir, *LONG)
    # let it step a while: past its first update at timestep 40 (logged at 40, then 80)
    wait_for(lambda: logged_at(run_dir, 80), process, "the log of timestep 80")
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err
    lines = err.strip().splitlines()
    stop_line = lines[-1]
    assert "Traceback" not in err
    name = signal.Signals(signum).name
    assert stop_line.startswith(f"{name}: stopped at timestep ")
    assert f"checkpoint {run_dir / 'checkpoint.pt'}; resume with: python train.py " in stop_line
    stopped_at = int(stop_line.split("timestep ")[1].split(" of")[0].replace(",", ""))
    state = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert state["counters"]["timesteps"] == stopped_at and stopped_at % 2 == 0

    # the printed command (with a budget just past the stop) continues the same run directory
    command = shlex.split(stop_line.split("resume with: ")[1])
    assert command[:2] == ["python", "train.py"]
    assert f"hydra.run.dir={run_dir}" in command and "resume=true" in command
    args = [a if not a.startswith("training.total_timesteps=") else
            f"training.total_timesteps={stopped_at + 20}" for a in command[2:]]  # fmt: skip
    resumed = train_py(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"from timestep {stopped_at:,} to {stopped_at + 20:,}" in resumed.stdout
    state = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert state["counters"]["timesteps"] == stopped_at + 20


def test_a_second_interrupt_exits_at_once(monkeypatch) -> None:
    exits = []
    monkeypatch.setattr("os._exit", exits.append)
    before = signal.getsignal(signal.SIGINT)  # default_int_handler; SIG_IGN under nohup
    with StopSignals() as stop:
        signal.raise_signal(signal.SIGINT)
        assert stop.signum == signal.SIGINT and exits == []
        signal.raise_signal(signal.SIGINT)
        assert exits == [128 + signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is before  # the handler the block found


def _descendants(pid: int) -> list[int]:
    """Process ids below ``pid`` (Linux /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in map(int, children):
            found += [child, *_descendants(child)]
    return found


@pytest.mark.slow  # the long set: a drill of three training processes
def test_a_preempted_submitit_job_checkpoints_requeues_and_resumes(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    sweep = tmp_path / "sweep"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), "-m", "hydra/launcher=submitit_local",
         "hydra.launcher.timeout_min=10", *TINY, "agent=dqn", "seed=0",
         "training.total_timesteps=1200", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300  # bounds a hung launch only
    logs: list[Path] = []
    while not any("marinenav: training dqn" in log.read_text() for log in logs):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.2)
        logs = list(sweep.glob(".submitit/*/*_log.out"))
    # signal it once it has trained a while (its log of timestep 40), long before the end
    wait_for(lambda: logged_at(sweep / "0", 40), process, "the job's log of timestep 40")
    tasks = [
        pid for pid in _descendants(process.pid)
        if b"submitit.core._submit" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]  # fmt: skip
    assert len(tasks) == 1
    os.kill(tasks[0], signal.SIGUSR2)  # what Slurm sends before preemption or the time limit
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    log = logs[0].read_text()
    errors = logs[0].with_suffix(".err").read_text()
    stop_line = next(line for line in errors.splitlines() if line.startswith("SIGUSR2: stopped"))
    stopped_at = int(stop_line.split("timestep ")[1].split(" of")[0].replace(",", ""))
    assert f"from timestep {stopped_at:,} to 1,200" in log  # the requeued job resumed
    state = torch.load(sweep / "0" / "checkpoint.pt", weights_only=False)
    assert state["counters"]["timesteps"] == 1200
