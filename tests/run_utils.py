"""Shared pieces of the tests that train: the tiny configuration (seconds per run), composing it,
and running ``train.py`` and the other programs (``-m marinenav.evaluate``, the benchmark
scripts) in a child process (forked from the test's, or a new interpreter), waiting on progress
the child reports."""

from __future__ import annotations

import copy
import functools
import gc
import importlib.util
import io
import logging
import os
import resource
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
import warnings
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
    """The run config ``python train.py OVERRIDES`` composes: Hydra composes each list of
    overrides once per test process (0.3-0.5 s a config on the Intel VM), each caller gets a
    copy of its own to change."""
    return copy.deepcopy(_composed(overrides))


@functools.cache
def _composed(overrides: tuple[str, ...]):
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def tiny_config(*overrides: str):
    return compose_config(*TINY, *overrides)


def train_py(
    *args: str, cwd: Path, fresh: bool = False, preexec_fn=None
) -> subprocess.CompletedProcess:
    """``python train.py ARGS`` in ``cwd``, its exit status and output captured.

    By default the program runs in a child forked from this test process (see
    :func:`python_program`). ``fresh=True`` starts a new ``python`` instead, for what only a
    new interpreter shows: warnings printed while importing, and the start-up itself (the
    one-line refusals of tests/test_bad_input.py run both ways)."""
    if fresh:
        return subprocess.run(
            [sys.executable, str(ROOT / "train.py"), *args],
            cwd=cwd, capture_output=True, text=True, timeout=600, preexec_fn=preexec_fn,
        )  # fmt: skip
    return python_program(str(ROOT / "train.py"), *args, cwd=cwd, preexec_fn=preexec_fn)


def python_program(
    program: str, *args: str, cwd: Path = ROOT, timeout: float = 600, preexec_fn=None
) -> subprocess.CompletedProcess:
    """``python PROGRAM ARGS`` (a script's path) or ``python -m PROGRAM ARGS`` (``-m name``
    given as ``program="-m marinenav.evaluate"``) in ``cwd``, exit status and output captured.

    The program runs in a child forked from this test process: the child shares the imports
    made here (torch, TensorDict, TorchRL, Hydra, matplotlib, marinenav: about 5 of the 9 CPU
    seconds a tiny training run takes in a new interpreter on the 2-core VMs) and has its own
    arguments, working directory, ``__main__`` (the program run anew), standard streams,
    warning filters (a new interpreter's) and exit status; ``preexec_fn`` runs in the child
    first, as ``subprocess``'s does (e.g. a resource limit). What only a new interpreter shows
    (warnings printed while importing, the start itself) needs ``subprocess`` instead."""
    module = program.startswith("-m ")
    target = program[3:] if module else program
    command = [sys.executable, *(["-m", target] if module else [target]), *args]

    def main() -> int:
        if preexec_fn is not None:
            preexec_fn()
        return _run_main(target, module)

    # sys.argv as the interpreter sets it (-m: runpy puts the module's file path first)
    return _forked(command, [target, *args], main, cwd, timeout)


# the warning filters of a new interpreter started without -W options
_NEW_INTERPRETER_FILTERS = [
    ("default", None, DeprecationWarning, "__main__", 0),
    ("ignore", None, DeprecationWarning, None, 0),
    ("ignore", None, PendingDeprecationWarning, None, 0),
    ("ignore", None, ImportWarning, None, 0),
    ("ignore", None, ResourceWarning, None, 0),
]


def _run_main(target: str, module: bool) -> int:
    """In the forked child: the program as ``__main__``; its exit status as the interpreter
    would give it (an uncaught error: its traceback, 1)."""
    try:
        if module:
            # as in a new interpreter, the module is not imported yet (an earlier test may have
            # imported it, or an alias of another module, as marinenav.export is)
            sys.modules.pop(target, None)
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
        return 0
    except SystemExit as stop:
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
            return 1
        return stop.code or 0
    except BaseException:  # noqa: BLE001 (the interpreter's own handling of an uncaught error)
        traceback.print_exc()
        return 1


def _in_child(argv: list[str], main, cwd: Path, out: int, err: int) -> int:
    """In the forked child: ``out``/``err`` as the streams, ``argv`` as ``sys.argv``, a new
    interpreter's warning filters; runs ``main()`` and flushes what an exit would flush."""
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
    os.chdir(cwd)
    sys.argv = argv
    # pytest records warnings; a program prints them (and each registry starts anew)
    warnings.filters[:] = _NEW_INTERPRETER_FILTERS
    warnings._showwarnmsg_impl = lambda msg: sys.stderr.write(warnings._formatwarnmsg(msg))
    warnings.showwarning = warnings._showwarning_orig
    warnings._filters_mutated()
    code = main()
    # what the interpreter's exit does: objects freed (multiprocessing's finalizers unlink
    # their semaphores, e.g. TorchRL's replay writer's, held by a caught error's traceback),
    # the log files flushed and closed
    gc.collect()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def _forked(
    command: list[str], argv: list[str], main, cwd: Path, timeout: float
) -> subprocess.CompletedProcess:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child never returns into pytest: os._exit skips the parent's atexit
            code = 1
            try:
                code = _in_child(argv, main, cwd, out.fileno(), err.fileno())
            finally:
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(command, timeout)
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            command, os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode()
        )


def limited_file_size(limit: int):
    """``preexec_fn``: files of the child may not grow beyond ``limit`` bytes (EFBIG), as on a
    nearly full disk; Python ignores SIGXFSZ, so writes fail instead of killing the process."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def benchmark_module(script: str) -> types.ModuleType:
    """``benchmarks/<script>`` imported as a module (the scripts are not a package), for tests
    that call its functions in process."""
    spec = importlib.util.spec_from_file_location(Path(script).stem, ROOT / "benchmarks" / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def benchmark_py(script: str, *args: str) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> ARGS`` from the repository root (forked, as
    :func:`python_program`), output captured; the caller reads the return code."""
    return python_program(str(ROOT / "benchmarks" / script), *map(str, args))


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
