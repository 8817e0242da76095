"""What a run records of its code and machine (marinenav/training/machine.py): the commit and
whether the checkout differs from it, read from git for the checkout's top level only."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from marinenav.training.machine import code_version, machine_record, read_sessions, record_session

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def _repository(root: Path) -> str:
    """A one-commit repository with a tracked file ``a.txt`` in ``root``; returns the commit."""
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    (root / "sub").mkdir()
    _git(root, "add", "a.txt")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return _git(root, "rev-parse", "HEAD")


@needs_git
def test_the_commit_and_a_changed_tracked_file_are_seen(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    commit = _repository(root)
    assert code_version(root) == {"commit": commit, "dirty": False}
    (root / "untracked.txt").write_text("not counted\n")
    assert code_version(root) == {"commit": commit, "dirty": False}
    (root / "a.txt").write_text("two\n")
    assert code_version(root) == {"commit": commit, "dirty": True}


@needs_git
def test_measurements_and_words_changed_leave_the_code_clean(tmp_path: Path) -> None:
    """A tracked file changed under ``results/`` or ``docs/`` (an evaluation written where the
    earlier one was, a page edited) is not a change of the code that runs."""
    root = tmp_path / "repo"
    _repository(root)
    for folder in ("results", "docs", "marinenav"):
        (root / folder).mkdir()
        (root / folder / "x.json").write_text("{}\n")
        _git(root, "add", f"{folder}/x.json")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "two")
    commit = _git(root, "rev-parse", "HEAD")
    (root / "results" / "x.json").write_text('{"kept": 9}\n')
    (root / "docs" / "x.json").write_text('{"page": 2}\n')
    assert code_version(root) == {"commit": commit, "dirty": False}
    (root / "marinenav" / "x.json").write_text('{"code": 2}\n')
    assert code_version(root) == {"commit": commit, "dirty": True}


@needs_git
def test_a_directory_that_is_not_the_top_of_a_checkout_has_no_commit(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _repository(root)
    # e.g. a virtual environment's site-packages inside some other repository
    assert code_version(root / "sub") == {"commit": None, "dirty": None}
    assert code_version(tmp_path) == {"commit": None, "dirty": None}


def test_sessions_are_appended_in_order(tmp_path: Path) -> None:
    assert read_sessions(tmp_path) == []
    record_session(tmp_path, "cpu", 0)
    record_session(tmp_path, torch.device("cpu"), 960)
    sessions = read_sessions(tmp_path)
    assert [s["timestep"] for s in sessions] == [0, 960]
    assert set(sessions[0]) == {"timestep", *machine_record("cpu")}
    assert sessions[1]["torch"] == torch.__version__ and sessions[1]["device"] == "cpu"
