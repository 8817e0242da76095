"""Every file the project writes is written atomically (marinenav/files.py): a failed write
leaves the previous file (or none) and no temporary file, and says why in one line; a full disk
under the export command is one line, not a C++ abort and a torn planner file."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from marinenav import files
from marinenav.files import FileWriteError, atomic_path, check_writable, write_text, write_with
from marinenav.training.trainer import Trainer
from tests.run_utils import limited_file_size, python_program, tiny_config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run")
    Trainer(tiny_config("agent=dqn", "training.total_timesteps=80"), run).train()
    return run


def _full_disk_after(limit: int):
    """A writer that fails like a full disk once ``limit`` bytes are written."""

    def writer(f) -> None:
        f.write(b"x" * limit)
        f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    return writer


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    write_text(target, "old")
    with pytest.raises(FileWriteError) as error:
        write_with(target, _full_disk_after(4096))
    assert str(error.value) == f"cannot write {target}: No space left on device"
    assert error.value.errno == errno.ENOSPC
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_a_written_file_has_the_permissions_a_plain_write_gives(tmp_path: Path) -> None:
    """The temporary file is private (0600); the file it becomes is not: a new one gets what
    ``open(path, "w")`` would give, a replaced one keeps its mode."""
    plain, atomic = tmp_path / "plain.json", tmp_path / "atomic.json"
    plain.write_text("{}")
    write_text(atomic, "{}")
    assert atomic.stat().st_mode == plain.stat().st_mode
    atomic.chmod(0o640)
    write_text(atomic, "[]")
    assert atomic.stat().st_mode & 0o777 == 0o640


def test_an_error_that_is_not_io_passes_through_after_the_cleanup(tmp_path: Path) -> None:
    target = tmp_path / "figure.png"
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png"  # writers read the format
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt
    with pytest.raises(ZeroDivisionError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise ZeroDivisionError
    assert list(tmp_path.iterdir()) == []


def test_torch_s_unexpected_pos_is_reported_as_the_disk_error_it_is(tmp_path: Path) -> None:
    import torch

    target = tmp_path / "checkpoint.pt"

    class FullDisk:  # torch's zip writer sees this write fail and raises "unexpected pos"
        def __init__(self, f) -> None:
            self.f, self.written = f, 0

        def write(self, data) -> int:
            self.written += len(data)
            if self.written > 1000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def flush(self) -> None:
            self.f.flush()

    with pytest.raises(FileWriteError, match="checkpoint.pt: No space left on device$"):
        write_with(target, lambda f: torch.save({"x": torch.zeros(10_000)}, FullDisk(f)))
    assert list(tmp_path.iterdir()) == []


def test_check_writable_refuses_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match=r"^--out .*a_file/m\.json is under .*a_file, which is"):
        check_writable(tmp_path / "a_file" / "m.json", "--out")
    with pytest.raises(ValueError, match=r"^--out .* is a directory, not a file$"):
        check_writable(tmp_path, "--out")
    check_writable(tmp_path / "new" / "deeper" / "m.json", "--out")  # parents are made
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # the probe is removed


def test_remove_leftovers_removes_only_the_named_file_s_temporaries(tmp_path: Path) -> None:
    for name in (".checkpoint.pt.abc.tmp.pt", ".checkpoint.pt.def.tmp.pt", ".other.x.tmp"):
        (tmp_path / name).write_text("")
    files.remove_leftovers(tmp_path, "checkpoint.pt")
    assert [p.name for p in tmp_path.iterdir()] == [".other.x.tmp"]
    (tmp_path / "kept.json").write_text("")
    files.remove_leftovers(tmp_path)  # every file's
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]


def test_export_on_a_nearly_full_disk_is_one_line_and_leaves_no_torn_file(
    finished_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "planners"
    result = python_program("-m marinenav.export", str(finished_run), "--out", str(out),
                            preexec_fn=limited_file_size(20_000))  # fmt: skip
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"python -m marinenav.export: error: --out {out}: cannot write {out}/")
    assert last.endswith(": File too large"), last
    assert "Traceback" not in result.stderr
    assert not out.exists() or list(out.rglob("*")) == []  # no torn planner, no temporary
