"""``python -m marinenav.viz time-to-quality``: minutes to reach and to hold a success level,
on evaluation records written here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marinenav.viz.__main__ import main
from marinenav.viz.quality import LARGE_NAME, read_run


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
