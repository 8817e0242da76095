"""Shared pieces of the tests that train: the tiny configuration (seconds per run), composing it,
and running ``train.py`` in a child process, waiting on progress the child reports."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from marinenav.training.config import register_configs

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "recipe=paper",  # the original's settings; the fast recipe has its own tests (test_recipes)
    "env.num_envs=2",
    "curriculum=stage0",
    "curriculum.num_robots=[2]",
    "curriculum.eval_episodes_per_stage=2",
    "training.total_timesteps=160",
    "training.learning_starts=40",
    "training.batch_size=8",
    "training.replay_capacity=2000",
    "training.target_update_interval=50",
    "evaluation.first=80",
    "evaluation.interval=80",
    "evaluation.max_steps=12",
    "logger.interval=40",
    "logger.progress_bar=false",
    "checkpoint.interval=80",
    "device=cpu",
]

# The settings docs/results.md measured as "the pass constraint with the check as a fixed term"
# (with agent=rainbow training.total_timesteps=960000), which recipe=waters composes to
WATERS_SETTINGS = (
    "scenario=mix", "scenario.passed_ahead_penalty=5", "scenario.port_turn_penalty=20",
    "scenario.cross_ahead_of=traffic", "+scenario.parts.open_water.options.traffic=0.3",
    "+scenario.parts.currents.options.traffic=0.3", "training.constraint.term=passed_ahead",
    "training.constraint.target=0.1", "training.constraint.lr=0.002",
    "training.policy_average_start=0.5", "training.replay_capacity=3000000",
    "scenario.give_way_check_penalty=5", "scenario.give_way_check_from=in_range",
)


def compose_config(*overrides: str):
    """The run config ``python train.py OVERRIDES`` composes."""
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def tiny_config(*overrides: str):
    return compose_config(*TINY, *overrides)


def train_py(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def benchmark_py(script: str, *args: str) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> ARGS`` from the repository root, output captured; the
    caller reads the return code."""
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *map(str, args)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


LONG = [*TINY, "agent=dqn", "training.total_timesteps=1000000", "evaluation.first=1000000"]


def wait_for(condition, process: subprocess.Popen, what: str, timeout: float = 300) -> None:
    """Poll until ``condition()`` (progress the child reports in a file it writes) holds; fail
    if the child ends first. The timeout only bounds a hung child: no test step waits on it."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"ended before {what}"
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.05)


def logged_scalars(run_dir: Path, name: str) -> dict[int, float]:
    """A logged scalar's values by timestep, from the run's CSV logs (``name``, e.g.
    ``"train/episodes"``: ``logs/scalars/train/episodes.csv``, ``step,value`` lines)."""
    path = run_dir / "logs" / "scalars" / f"{name}.csv"
    rows = (line.split(",") for line in path.read_text().splitlines())
    return {int(step): float(value) for step, value in rows}


def logged_at(run_dir: Path, timestep: int) -> bool:
    """Whether the run has logged its training metrics of ``timestep`` (a full CSV line)."""
    path = run_dir / "logs" / "scalars" / "train" / "updates.csv"
    lines = path.read_text().splitlines(keepends=True) if path.is_file() else []
    return any(line.endswith("\n") and int(line.split(",")[0]) >= timestep for line in lines)


def start_training(run_dir: Path, *overrides: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), *overrides, f"hydra.run.dir={run_dir}"],
        cwd=run_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = process.stdout.readline()  # printed once the stop handlers are in place
    assert line.startswith("marinenav: training dqn in "), line + process.stderr.read()
    return process


class Killed(Exception):
    """What :func:`train_until_killed` stops a run with."""


def train_until_killed(cfg, run_dir: Path, after: int, monkeypatch) -> None:
    """Train ``cfg`` in ``run_dir`` and stop it, as a killed process stops, at the first batched
    step that would start past timestep ``after`` (no checkpoint written at the stop: the run
    keeps its last periodic one); the trainer's step is put back afterwards."""
    from marinenav.training.trainer import Trainer

    step = Trainer.step_environments

    def killed(self) -> None:
        if self.timesteps > after:
            raise Killed
        step(self)

    monkeypatch.setattr(Trainer, "step_environments", killed)
    try:
        with pytest.raises(Killed):
            Trainer(cfg, run_dir).train()
    finally:
        monkeypatch.setattr(Trainer, "step_environments", step)


def head_commit() -> str | None:
    """``git rev-parse HEAD`` of this checkout, read independently of the code under test
    (``None`` where git is missing or this is not a checkout)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=False)  # fmt: skip
    except OSError:
        return None
    return head.stdout.strip() if head.returncode == 0 else None
