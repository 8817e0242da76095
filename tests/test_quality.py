"""``python -m marinenav.viz time-to-quality``: minutes to reach and to hold a success level,
on evaluation records written here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marinenav.run_files import LARGE_NAME
from marinenav.viz.__main__ import main
from marinenav.viz.quality import read_run


def write_run(run_dir: Path, rates: list[float], seconds: list[float], n: int = 10) -> Path:
    run_dir.mkdir(parents=True)
    with open(run_dir / "evaluations.jsonl", "w") as f:
        for k, (rate, clock) in enumerate(zip(rates, seconds, strict=True)):
            wins = round(rate * n)
            record = {
                "timestep": 1000 * (k + 1), "wall_clock_s": clock,
                "eval/success_rate": wins / n,
                "episodes": {"success": [True] * wins + [False] * (n - wins)},
            }  # fmt: skip
            f.write(json.dumps(record) + "\n")
    return run_dir


def test_reached_and_held_minutes(tmp_path: Path) -> None:
    # 0.5, 0.8 (reached at 2 min), 0.6 (dropped), 0.9, 0.8 (held from 4 min on)
    run = read_run(write_run(tmp_path / "a", [0.5, 0.8, 0.6, 0.9, 0.8], [60, 120, 180, 240, 300]))
    assert run.reached(0.8) == pytest.approx(2.0)
    assert run.held(0.8) == pytest.approx(4.0)
    assert run.held(0.85) is None  # the last one is below
    assert run.reached(0.95) is None
    assert run.large is None


def test_command_prints_the_table_and_draws(tmp_path: Path, capsys) -> None:
    a = write_run(tmp_path / "a", [0.5, 0.9], [60, 600])
    b = write_run(tmp_path / "b", [0.2, 0.3], [90, 900])
    (a / LARGE_NAME).write_text(json.dumps({"episodes": {"success": [True] * 450 + [False] * 150}}))
    out = tmp_path / "q.png"
    assert main(["time-to-quality", str(a), str(b), "--level", "0.8", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith(f"| {tmp_path}")]
    assert len(rows) == 2
    # run a: reached and held at 10.0 min; last 0.9 of 10; large set 450 / 600 = 0.750
    assert "| 10.0 | 10.0 | 0.900 [" in rows[0] and "0.750 [0.714, 0.783] (n=600)" in rows[0]
    assert "| never | never | 0.300 [" in rows[1] and "not evaluated" in rows[1]
    assert out.is_file() and out.stat().st_size > 0


def test_runs_without_wall_clock_are_refused(tmp_path: Path) -> None:
    run = tmp_path / "old"
    run.mkdir()
    (run / "evaluations.jsonl").write_text(
        json.dumps({"timestep": 1, "episodes": {"success": [True]}}) + "\n"
    )
    with pytest.raises(SystemExit) as stop:
        main(["time-to-quality", str(run), "--out", str(tmp_path / "q.png")])
    assert stop.value.code == 2


def write_timed_run(run_dir: Path, rates: list[float], wall: list[float], cpu: list[float]) -> Path:
    """A run whose evaluations also record the process's CPU seconds (``cpu_s``)."""
    run_dir.mkdir(parents=True)
    lines = []
    for k, (rate, w, c) in enumerate(zip(rates, wall, cpu, strict=True)):
        wins = round(rate * 10)
        lines.append(json.dumps({"timestep": 1000 * (k + 1), "wall_clock_s": w, "cpu_s": c,
                                 "episodes": {"success": [True] * wins + [False] * (10 - wins)}}))
    (run_dir / "evaluations.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def test_bands_over_seeds_by_hand(tmp_path: Path) -> None:
    from marinenav.viz.quality import quality_bands, success_at

    runs = [
        read_run(write_timed_run(tmp_path / "s0", [0.2, 0.6, 0.9], [60, 120, 180], [30, 60, 90])),
        read_run(write_timed_run(tmp_path / "s1", [0.4, 0.8], [60, 120], [60, 120])),
        read_run(write_timed_run(tmp_path / "s2", [0.0, 1.0, 1.0], [60, 120, 180], [60, 90, 120])),
    ]
    # the last evaluation at or before each time; NaN before the first and after the last
    grid = [0.5, 1.0, 1.5, 2.0, 3.0, 3.5]
    got = success_at(runs[0], "wall", __import__("numpy").array(grid))
    assert list(map(str, got)) == ["nan", "0.2", "0.2", "0.6", "0.9", "nan"]
    assert runs[0].cpu_minutes == [0.5, 1.0, 1.5]
    grid, median, low, high, count = quality_bands(runs, "wall", points=7)  # 0, 0.5, ..., 3 min
    assert list(grid) == pytest.approx([0, 0.5, 1, 1.5, 2, 2.5, 3])
    # at 2 min: 0.6, 0.8, 1.0 -> median 0.8, quartiles 0.7 and 0.9
    assert (median[4], low[4], high[4], count[4]) == pytest.approx((0.8, 0.7, 0.9, 3))
    # at 3 min seed 1 has stopped: two runs, 0.9 and 1.0
    assert (median[6], count[6]) == pytest.approx((0.95, 2))
    # against CPU minutes: at 1.5 min seed 0 shows 0.9, seed 1 0.4, seed 2 1.0
    grid, median, *_ = quality_bands(runs, "cpu", points=5)  # 0, 0.5, 1, 1.5, 2
    assert median[3] == pytest.approx(0.9)


def test_command_draws_bands_per_label(tmp_path: Path, capsys) -> None:
    a = write_timed_run(tmp_path / "a0", [0.5, 0.9], [60, 600], [50, 500])
    b = write_timed_run(tmp_path / "a1", [0.7, 0.8], [60, 600], [55, 540])
    out = tmp_path / "bands.png"
    assert main(["time-to-quality", str(a), str(b), "--labels", "x", "x", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith(str(out)) and out.stat().st_size > 10_000
    with pytest.raises(SystemExit):
        main(["time-to-quality", str(a), str(b), "--labels", "x", "--out", str(out)])
