"""One run per run directory: a second run into a living run's directory is refused, a dead
run's lock is taken over, a finished run's checkpoint is not replaced unless asked, a resume
that does not fit its checkpoint is refused before anything is written, a refused start
removes only the directories made for it, and after a kill and resume the CSV logs equal
evaluations.jsonl."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from marinenav.training.machine import read_sessions
from marinenav.training.rundir import LOCK_NAME, RESUMES_NAME, RunDirectoryError
from marinenav.training.trainer import Trainer
from marinenav.training.validation import ConfigError
from tests.run_utils import (
    LONG,
    ROOT,
    TINY,
    head_commit,
    start_training,
    tiny_config,
    train_py,
    train_until_killed,
)

ALLOWED = ("training.total_timesteps, evaluation.interval, evaluation.first, checkpoint.*, "
           "logger.*, device, threads, compile, cudagraphs")  # fmt: skip


def _contents(run_dir: Path) -> dict[str, bytes]:
    """Every file under a run directory and its bytes."""
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def _one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    return result.stderr[len("error: ") : -1]


# the long set: a drill of racing training processes (the lock's rules: the stale-lock test)
@pytest.mark.slow
def test_a_second_run_into_a_living_runs_directory_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = start_training(run_dir, *LONG)  # returns once it trains: it holds the directory
    try:
        before = _contents(run_dir)
        holder = json.loads((run_dir / LOCK_NAME).read_text())
        assert (holder["pid"], holder["host"]) == (first.pid, socket.gethostname())
        for extra in ([], ["resume=true"], ["overwrite=true"]):
            second = train_py(*LONG, *extra, f"hydra.run.dir={run_dir}", cwd=tmp_path)
            assert _one_line_error(second) == (
                f"run directory {run_dir} is in use by process {first.pid} on "
                f"{socket.gethostname()} (since {holder['since']}); wait for that run to end or "
                f"choose another hydra.run.dir (lock: {run_dir / LOCK_NAME})"
            )
            assert first.poll() is None  # the first run goes on
        # the refused runs wrote nothing: the first run's config record is its own
        config = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text())
        assert config["agent"]["name"] == "dqn"
        assert _contents(run_dir)[".hydra/config.yaml"] == before[".hydra/config.yaml"]
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    assert first.returncode == 128 + signal.SIGINT
    assert not (run_dir / LOCK_NAME).exists()  # released at the end of the run


def test_a_stale_lock_is_taken_over_and_a_lock_of_another_host_refused(
    tmp_path: Path, capsys
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = tmp_path / LOCK_NAME
    host = socket.gethostname()
    lock.write_text(json.dumps({"pid": dead.pid, "host": host, "since": "2026-01-01T00:00:00"}))
    trainer = Trainer(tiny_config("agent=dqn"), tmp_path)
    assert capsys.readouterr().err == (
        f"marinenav: took over the stale lock of process {dead.pid} on {host} (since "
        "2026-01-01T00:00:00), which is no longer running\n"
    )
    assert json.loads(lock.read_text())["pid"] != dead.pid
    trainer.train()
    assert not lock.exists()

    other = tmp_path / "other"
    other.mkdir()
    record = {"pid": 1, "host": "elsewhere", "since": "2026-01-01T00:00:00"}
    (other / LOCK_NAME).write_text(json.dumps(record))
    with pytest.raises(RunDirectoryError) as error:
        Trainer(tiny_config("agent=dqn"), other)
    assert str(error.value) == (
        f"run directory {other} is in use by process 1 on elsewhere (since 2026-01-01T00:00:00), "
        f"which {host} cannot check; if that run has ended, delete {other / LOCK_NAME}; wait for "
        f"that run to end or choose another hydra.run.dir (lock: {other / LOCK_NAME})"
    )
    assert sorted(p.name for p in other.iterdir()) == [LOCK_NAME]


def test_a_finished_runs_checkpoint_is_replaced_only_when_asked(tmp_path: Path) -> None:
    Trainer(tiny_config("agent=dqn"), tmp_path).train()
    before = _contents(tmp_path)
    with pytest.raises(RunDirectoryError) as error:
        Trainer(tiny_config("agent=dqn", "training.total_timesteps=80"), tmp_path)
    assert str(error.value) == (
        f"run directory {tmp_path} holds the checkpoint of an earlier run; continue it with "
        "resume=true, replace it with overwrite=true, or choose another hydra.run.dir"
    )
    assert _contents(tmp_path) == before  # nothing written, replaced or lost

    with pytest.raises(ConfigError, match="^overwrite=true replaces the run directory's "
                       "checkpoint, resume=True continues it: choose one$"):  # fmt: skip
        Trainer(tiny_config("agent=dqn", "overwrite=true", "resume=true"), tmp_path)
    assert _contents(tmp_path) == before

    # asked to: the earlier run's outputs go, none of them mixes with the new run's
    replaced = Trainer(tiny_config("agent=dqn", "training.total_timesteps=40",
                                   "evaluation.first=40", "overwrite=true"), tmp_path)  # fmt: skip
    replaced.train()
    assert [e["timestep"] for e in replaced.evaluations] == [40]
    lines = (tmp_path / "evaluations.jsonl").read_text().splitlines()
    assert [json.loads(line)["timestep"] for line in lines] == [40]
    assert (tmp_path / "logs/scalars/eval/success_rate.csv").read_text().startswith("40,")
    assert (tmp_path / "logs/scalars/eval/success_rate.csv").read_text().count("\n") == 1


def test_a_resume_that_does_not_fit_its_checkpoint_is_refused_before_writing(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    base = [*TINY, "agent=dqn", f"hydra.run.dir={run_dir}"]
    assert train_py(*base, cwd=tmp_path).returncode == 0
    before = _contents(run_dir)
    checkpoint = run_dir / "checkpoint.pt"
    refused = {
        "agent=sac": "agent.name=dqn, this run asks for agent.name=sac",
        "env.num_envs=4": "env.num_envs=2, this run asks for env.num_envs=4",
        "training.replay_capacity=4000 env.robot_slots=6": (
            "env.robot_slots=5, training.replay_capacity=2000, this run asks for "
            "env.robot_slots=6, training.replay_capacity=4000"
        ),
    }
    for overrides, keys in refused.items():
        result = train_py(*base, *overrides.split(), "resume=true", cwd=tmp_path)
        assert _one_line_error(result) == (
            f"resume: checkpoint {checkpoint} was trained with {keys}; these must match to "
            f"resume (a resume may change only {ALLOWED})"
        )
        assert _contents(run_dir) == before  # .hydra/config.yaml included

    # the budget and the intervals may change: allowed, and recorded
    resumed = train_py(*base, "training.total_timesteps=200", "evaluation.interval=40",
                        "resume=true", cwd=tmp_path)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (
        f"marinenav: resuming {checkpoint} at timestep 160; changed: evaluation.interval 80 -> "
        f"40, training.total_timesteps 160 -> 200 (recorded in {RESUMES_NAME})"
    ) in resumed.stdout
    record = json.loads((run_dir / RESUMES_NAME).read_text())
    assert record["timestep"] == 160 and record["changed"] == {
        "evaluation.interval": [80, 40], "training.total_timesteps": [160, 200]}  # fmt: skip
    config = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    assert config.agent.name == "dqn" and config.training.total_timesteps == 200
    # each session (the start, the resume) recorded the code and the machine it ran on
    sessions = read_sessions(run_dir)
    assert [session["timestep"] for session in sessions] == [0, 160]
    for session in sessions:
        assert session["commit"] == head_commit()
        assert session["device"] == "cpu" and session["gpu"] is None and session["cpu"]
        assert session["host"] == socket.gethostname() and session["threads"] >= 1


@pytest.mark.slow  # the long set: five train.py processes (test_bad_input runs one refusal)
def test_a_refused_start_removes_only_the_directories_made_for_it(tmp_path: Path) -> None:
    made_by_user = tmp_path / "mine"
    (made_by_user / "parent").mkdir(parents=True)
    bad = [*TINY, "agent=dqn", "training.batch_size=0"]
    new = tmp_path / "new" / "day" / "run"
    for run_dir in (made_by_user, made_by_user / "parent" / "run", new):
        result = train_py(*bad, f"hydra.run.dir={run_dir}", cwd=tmp_path)
        assert _one_line_error(result) == "training.batch_size must be positive, got 0"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "mine", "mine/parent"]  # fmt: skip
    # and default run directories of two starts in the same second do not collide
    pattern = yaml.safe_load((ROOT / "conf" / "config.yaml").read_text())["hydra"]["run"]["dir"]
    assert pattern.endswith("${now:%H-%M-%S.%f}")


def test_after_a_kill_and_resume_the_csv_logs_equal_the_evaluations(
    tmp_path: Path, monkeypatch
) -> None:
    every_40 = ["agent=dqn", "evaluation.first=40", "evaluation.interval=40"]

    # killed after timestep 130: evaluated at 120, after the checkpoint of timestep 80
    train_until_killed(tiny_config(*every_40), tmp_path, 130, monkeypatch)
    logs = tmp_path / "logs" / "scalars"
    assert (logs / "eval" / "success_rate.csv").read_text().count("\n") == 3  # 40, 80, 120

    resumed = Trainer(tiny_config(*every_40, "resume=true"), tmp_path)
    assert resumed.timesteps == 80
    resumed.train()
    evaluations = [json.loads(line) for line in
                   (tmp_path / "evaluations.jsonl").read_text().splitlines()]  # fmt: skip
    assert [e["timestep"] for e in evaluations] == [40, 80, 120, 160]
    for path in (logs / "eval").glob("*.csv"):
        name = f"eval/{path.stem}"
        assert path.read_text() == "".join(
            f"{e['timestep']},{float(e[name])}\n" for e in evaluations if e[name] is not None
        ), name
    for path in (logs / "train").glob("*.csv"):
        steps = [int(line.split(",")[0]) for line in path.read_text().splitlines()]
        # every log once (losses from the first update on)
        assert steps == [40, 80, 120, 160][-len(steps) :] and len(steps) >= 3, path.name
