"""benchmarks/lever_table.py: runs paired by seed, per-seed differences, and rows on too few
seeds set apart as probes (docs/results.md, "Levers, one at a time")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.run_utils import benchmark_py


def _run(path: Path, rates: list[float], episodes: int = 100) -> Path:
    """A collected run whose large-set evaluations at four checkpoints succeed at ``rates``."""
    (path / "large").mkdir(parents=True)
    for k, rate in enumerate(rates):
        success = [True] * round(rate * episodes) + [False] * (episodes - round(rate * episodes))
        metrics = {"episodes": {"success": success}}
        (path / "large" / f"{(k + 1) * 1000}.json").write_text(json.dumps(metrics))
    return path


def _lever_table(*args: str) -> subprocess.CompletedProcess:
    return benchmark_py("lever_table.py", *args)


def _table(*args: str) -> list[str]:
    out = _lever_table(*args)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_rows_on_fewer_seeds_than_asked_are_set_apart_as_probes(tmp_path) -> None:
    on = [_run(tmp_path / f"on_seed{s}", [0.5, 0.6, 0.7, 0.8]) for s in range(3)]
    off = [_run(tmp_path / f"off_seed{s}", [0.5, 0.5, 0.5, 0.6]) for s in range(3)]
    three = ",".join(map(str, on)), ",".join(map(str, off))
    lines = _table("--min-seeds", "3", "--lever", "three", *three,
                   "--lever", "one", str(on[0]), str(off[0]))  # fmt: skip
    blank = lines.index("")
    levers, probes = lines[:blank], lines[blank + 1 :]
    assert levers[0].startswith("| lever |") and probes[0].startswith("| probe (< 3 seeds) |")
    assert [row.split(" | ")[0] for row in levers[2:]] == ["| three"]
    assert [row.split(" | ")[0] for row in probes[2:]] == ["| one"]
    cells = levers[2].split(" | ")
    # last checkpoints 0.8 against 0.6 in each seed; spans 0.3 and 0.1
    assert cells[1:4] == ["0, 1, 2", "0.800", "0.600"]
    assert cells[4].count("+0.200 [") == 3 and cells[6] == "0.300 / 0.100 |"


def test_one_table_without_min_seeds_and_unpaired_seeds_refused(tmp_path) -> None:
    on = _run(tmp_path / "on_seed0", [0.9] * 4)
    off = _run(tmp_path / "off_seed0", [0.8] * 4)
    lines = _table("--lever", "one", str(on), str(off))
    assert "" not in lines and len(lines) == 3 and lines[0].startswith("| lever |")
    other = _run(tmp_path / "off_seed1", [0.8] * 4)
    out = _lever_table("--lever", "bad", str(on), str(other))
    assert out.returncode != 0 and "seeds [0] with the lever, [1] without" in out.stderr


@pytest.mark.parametrize("value", ["0", "-1"])
def test_min_seeds_below_one_is_refused(value) -> None:
    out = _lever_table("--min-seeds", value, "--lever", "x", "a_seed0", "b_seed0")
    assert out.returncode == 2 and "--min-seeds must be >= 1" in out.stderr
