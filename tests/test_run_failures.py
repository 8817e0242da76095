"""What ``train.py`` does when something goes wrong while a run runs:
a reader that goes away does not fail a finished run, an unexpected error keeps its traceback
in train.log and exits 1 (a usage error exits 2), a full disk is one line naming the file, and
a sweep with a refused job runs its other jobs and names the refused one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.run_utils import ROOT, TINY, limited_file_size, train_py

TINY_DQN = [*TINY, "agent=dqn"]


@pytest.mark.slow  # the long set: train.py with its output pipe closed
def test_a_reader_that_goes_away_does_not_fail_a_finished_run(tmp_path: Path) -> None:
    """``python train.py ... | head -1``: the run trains to the end and exits 0 (it exited 2,
    "Broken pipe", after saving, so a finished run read as failed)."""
    run = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), *TINY_DQN, f"hydra.run.dir={run}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first = process.stdout.readline()
    process.stdout.close()  # head -1 exits
    stderr = process.communicate(timeout=300)[1]
    assert first.startswith("marinenav: training dqn in ")
    assert process.returncode == 0, stderr
    assert "Broken pipe" not in stderr
    log = (run / "train.log").read_text()
    assert "marinenav: finished dqn at timestep 160" in log  # the record is complete
    assert (run / "checkpoint.pt").is_file()


def test_an_unexpected_error_keeps_its_traceback_in_train_log_and_exits_1(
    tmp_path: Path, monkeypatch
) -> None:
    from marinenav.training.trainer import Trainer

    step = Trainer.step_environments

    def faulty(self):
        if self.timesteps >= 100:
            raise RuntimeError("a bug in the loop")
        step(self)

    monkeypatch.setattr(Trainer, "step_environments", faulty)  # the forked train.py's too
    run = tmp_path / "run"
    result = train_py(*TINY_DQN, f"hydra.run.dir={run}", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # not 2, a usage error's
    assert result.stderr.splitlines()[-1] == (
        f"error: unexpected RuntimeError: a bug in the loop (the traceback is in "
        f"{run / 'train.log'}; please report it)"
    )
    assert "Traceback" not in result.stderr
    log = (run / "train.log").read_text()
    assert "Traceback (most recent call last)" in log and "RuntimeError: a bug in the loop" in log
    assert not (run / "run.lock").exists()  # the directory is free for a resume


def test_a_full_disk_while_training_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """Files may not grow past 20 kB (a nearly full disk): the first agent file fails with
    "File too large" (it said ``[enforce fail at inline_container.cc:672] . unexpected pos``),
    and no torn or temporary file is left."""
    run = tmp_path / "run"
    result = train_py(
        *TINY_DQN, f"hydra.run.dir={run}", cwd=tmp_path,
        preexec_fn=limited_file_size(20_000),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"error: cannot write {run}/"), last
    assert "checkpoint.pt: File too large; stopped at timestep 80" in last
    assert "Traceback" not in result.stderr and "enforce fail" not in result.stderr
    assert not [path for path in run.rglob("*") if ".tmp" in path.name]
    assert not (run / "checkpoint.pt").exists() and not (run / "best" / "checkpoint.pt").exists()


@pytest.mark.slow  # the long set: a sweep of train.py processes
def test_a_sweep_runs_its_valid_jobs_and_names_the_refused_one(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "-m", *TINY_DQN,
         "training.total_timesteps=161,160", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert (sweep / "1" / "checkpoint.pt").is_file()  # the valid job ran to its end
    assert not (sweep / "0").exists()  # the refused one left nothing
    assert result.stderr.splitlines()[-1] == (
        "error: 1 job(s) of the sweep failed: job 0 "
        "(training.total_timesteps=161): training.total_timesteps=161 is not a whole number "
        "of batched steps of env.num_envs=2 timesteps; use 160 or 162, or env.num_envs=1 or 7"
    )
