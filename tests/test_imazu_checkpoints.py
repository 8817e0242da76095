"""benchmarks/imazu_checkpoints.py: per-checkpoint "COLREGs kept / solved" and the kept count
against the Imazu travel time, read from records printed by the evaluator's own formatters
(docs/results.md, "Real waters")."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from marinenav.encounters import format_encounters
from marinenav.evaluate import format_table
from tests.run_utils import benchmark_py


def _record(path: Path, solved: list[bool], kept: list[bool], travel: float | None) -> None:
    """An Imazu record as `python -m marinenav.evaluate ... --scenario imazu` prints it, built
    with its formatters: success per case, COLREGs kept per case, the mean travel time."""
    metrics = {
        "eval/success_rate": sum(solved) / len(solved),
        "eval/travel_time": travel,
        "episodes": {"success": solved},
    }
    target = {"encounter": "crossing, give way", "rule": 15, "closest": 12.0, "broken": []}
    # the second reading of the turn (its own column) the opposite of the first: the count
    # must read the first
    records = [
        {"targets": [{**target, "passed": k}], "colregs_kept": k, "colregs_kept_sighted": not k}
        for k in kept
    ]  # fmt: skip
    labels = [f"case {k + 1}" for k in range(len(solved))]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_table(metrics) + "\n\n" + format_encounters(records, solved, labels))


def _script(*args: str) -> subprocess.CompletedProcess:
    return benchmark_py("imazu_checkpoints.py", *args)


def _run(tmp_path: Path, name: str, checkpoints: dict[int, tuple[int, int, float | None]]) -> Path:
    """A result directory whose checkpoint ``t`` solves ``s`` of 22 cases and keeps the
    COLREGs in ``k`` of them (the first ones), at mean travel time ``tt``."""
    result = tmp_path / name
    for t, (s, k, tt) in checkpoints.items():
        solved = [c < s for c in range(22)]
        kept = [c < k for c in range(22)]
        _record(result / "imazu" / f"{t}.md", solved, kept, tt)
    return result


def test_the_table_counts_kept_over_solved_per_checkpoint_in_timestep_order(tmp_path) -> None:
    a = _run(tmp_path, "a", {192000: (21, 12, 30.0), 96000: (20, 4, 40.0)})
    b = _run(tmp_path, "b", {96000: (22, 18, 35.0)})
    out = _script(a, b, "--labels", "run a", "run b")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "| run | 96k | 192k |",
        "| --- | --- | --- |",
        "| run a | 4 / 20 | 12 / 21 |",
        "| run b | 18 / 22 | - |",
    ]
    out = _script(a, b, "--labels", "run a", "run b", "--travel-time")
    assert out.stdout.splitlines()[2:] == [
        "| run a | 4 / 20 | 12 / 21 |",
        "| run a, travel time (s) | 40.0 | 30.0 |",
        "| run b | 18 / 22 | - |",
        "| run b, travel time (s) | 35.0 | - |",
    ]


def test_kept_against_travel_time_bins_the_checkpoints_that_solve_enough(tmp_path) -> None:
    a = _run(tmp_path, "a", {1000: (20, 8, 26.0), 2000: (21, 10, 29.0), 3000: (19, 20, 50.0)})
    b = _run(tmp_path, "b", {1000: (22, 14, 34.0), 2000: (22, 12, 33.0)})
    out = _script(a, b, "--by-travel-time", "--edges", "27", "30")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # 3000 of a solves 19 (< 20): left out
    assert lines[2:5] == [
        "| under 27 s | 1 | 8.0 | 8 |",
        "| 27-30 s | 1 | 10.0 | 10 |",
        "| 30 s and more | 2 | 13.0 | 14 |",
    ]
    x, y = [26.0, 29.0, 34.0, 33.0], [8.0, 10.0, 14.0, 12.0]
    mx, my = sum(x) / 4, sum(y) / 4
    r = sum((p - mx) * (q - my) for p, q in zip(x, y, strict=True)) / math.sqrt(
        sum((p - mx) ** 2 for p in x) * sum((q - my) ** 2 for q in y)
    )
    assert lines[-1] == f"correlation of COLREGs kept with travel time: {r:.2f} (4 checkpoints)"
    assert r > 0.9  # these made-up runs keep more the slower they go


def test_a_checkpoint_that_solves_nothing_has_no_travel_time(tmp_path) -> None:
    a = _run(tmp_path, "a", {1000: (0, 0, None), 2000: (22, 20, 40.0)})
    out = _script(a, "--by-travel-time", "--min-solved", "1", "--edges", "30")
    assert out.returncode == 0, out.stderr
    assert "| 30 s and more | 1 | 20.0 | 20 |" in out.stdout
    assert "| under 30 s | 0 | - | - |" in out.stdout


def _validations(result: Path, success: dict[int, float]) -> None:
    lines = [json.dumps({"timestep": t, "eval/success_rate": v}) for t, v in success.items()]
    (result / "evaluations.jsonl").write_text("\n".join(lines) + "\n")


def test_kept_against_validation_success_counts_the_checkpoints_at_the_bar(tmp_path) -> None:
    a = _run(tmp_path, "a", {1000: (22, 18, 40.0), 2000: (21, 11, 30.0), 3000: (15, 20, 60.0)})
    b = _run(tmp_path, "b", {1000: (20, 19, 45.0), 2000: (22, 14, 30.0)})
    _validations(a, {1000: 0.75, 2000: 0.97, 3000: 0.5})
    _validations(b, {1000: 0.85, 2000: 0.92})
    out = _script(a, b, "--by-validation", "--validation-edges", "0.8", "0.9")
    assert out.returncode == 0, out.stderr
    # a at 3000 solves 15 (< 20): left out; the bar (18) is kept by a at 1000 and b at 1000
    assert out.stdout.splitlines()[2:] == [
        "| under 0.8 | 1 | 18.0 | 18 | 1 |",
        "| 0.8-0.9 | 1 | 19.0 | 19 | 1 |",
        "| 0.9 and more | 2 | 12.5 | 14 | 0 |",
    ]
    out = _script(a, b, "--by-validation", "--kept-bar", "14", "--validation-edges", "0.9")
    assert out.stdout.splitlines()[-1] == "| 0.9 and more | 2 | 12.5 | 14 | 1 |"


def test_a_checkpoint_without_its_validation_is_refused_by_name(tmp_path) -> None:
    a = _run(tmp_path, "a", {1000: (22, 18, 40.0), 2000: (22, 18, 40.0)})
    out = _script(a, "--by-validation")
    assert out.returncode == 2 and "no evaluations.jsonl" in out.stderr
    _validations(a, {1000: 0.9})
    out = _script(a, "--by-validation")
    assert out.returncode == 2 and "no validation at timestep 2000" in out.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--labels", "x", "y"], "--labels gives 2 labels for 1 directories"),
     (["--by-travel-time", "--min-solved", "0"], "--min-solved must be at least 1"),
     (["--by-travel-time", "--edges", "30", "27"], "--edges must be increasing"),
     (["--by-validation", "--validation-edges", "0.9", "0.8"],
      "--validation-edges must be increasing"),
     (["--by-validation", "--by-travel-time"], "two tables: ask for one")],
)  # fmt: skip
def test_bad_arguments_are_refused(tmp_path, args, message) -> None:
    a = _run(tmp_path, "a", {1000: (22, 20, 40.0)})
    out = _script(a, *args)
    assert out.returncode == 2 and message in out.stderr


def test_a_file_that_is_not_an_imazu_record_is_refused_by_name(tmp_path) -> None:
    empty = tmp_path / "empty"
    (empty / "imazu").mkdir(parents=True)
    out = _script(empty)
    assert out.returncode == 2 and "no imazu/<timestep>.md records" in out.stderr
    other = tmp_path / "other"
    (other / "imazu").mkdir(parents=True)
    (other / "imazu" / "1000.md").write_text("| metric | value |\n| --- | ---: |\n")
    out = _script(other)
    assert out.returncode == 2 and "1000.md: not an Imazu record" in out.stderr
    named = tmp_path / "named"
    _record(named / "imazu" / "last.md", [True] * 22, [True] * 22, 30.0)
    out = _script(named)
    assert out.returncode == 2
    assert "last.md: the file name is not a checkpoint's timestep" in out.stderr


def test_a_record_written_before_the_second_reading_is_read_alike(tmp_path) -> None:
    """A record whose case table ends with "COLREGs kept" (printed before the turn was also read
    from sighting, as every committed record of 2026-11) counts the same."""
    new = _run(tmp_path, "new", {96000: (20, 7, 40.0)})
    old = tmp_path / "old" / "imazu" / "96000.md"
    old.parent.mkdir(parents=True)
    lines = (new / "imazu" / "96000.md").read_text().splitlines()
    old.write_text("\n".join(line.rsplit(" |", 2)[0] + " |" if line.startswith("| case") or
                             line.startswith("| ---") and line.count("|") == 6 else line
                             for line in lines))  # fmt: skip
    assert "| COLREGs kept |" in old.read_text() and "sighting" not in old.read_text()
    out = _script(new, tmp_path / "old", "--labels", "new", "old")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2:] == ["| new | 7 / 20 |", "| old | 7 / 20 |"]


def test_sighted_counts_the_turn_read_from_sighting_and_refuses_an_older_record(tmp_path) -> None:
    """``--sighted`` reads the column "COLREGs kept, turns from sighting" (the opposite of the
    first in these records); a record printed before it is refused by name."""
    new = _run(tmp_path, "new", {96000: (20, 7, 40.0)})
    out = _script(new, "--sighted", "--labels", "new")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2:] == ["| new | 15 / 20 |"]  # 22 - 7 cases, by the helper
    old = tmp_path / "old" / "imazu" / "96000.md"
    old.parent.mkdir(parents=True)
    old.write_text((new / "imazu" / "96000.md").read_text().replace(
        "COLREGs kept, turns from sighting", "something else"))  # fmt: skip
    out = _script(tmp_path / "old", "--sighted")
    assert out.returncode != 0
    message = "96000.md: the case table has no 'COLREGs kept, turns from sighting' column"
    assert message in out.stderr
