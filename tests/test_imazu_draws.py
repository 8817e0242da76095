"""benchmarks/imazu_draws.py: one planner's Imazu count over noise seeds (the parsing of the
seeds, the report from hand-built draws, and a draw against ``marinenav.evaluate``'s own)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.run_utils import ROOT, benchmark_module, benchmark_py, python_program

_SCRIPT = benchmark_module("imazu_draws.py")
PLANNER = ROOT / "tests/data/pretrained/traced_AC_IQN_model.pt"


def test_seeds_are_read_as_ranges_and_lists() -> None:
    assert _SCRIPT.seed_range("253-255") == [253, 254, 255]
    assert _SCRIPT.seed_range("253,300-301") == [253, 300, 301]
    for bad, message in (("260-253", "must not decrease"), ("x", "not a seed")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            _SCRIPT.seed_range(bad)


def test_the_report_counts_each_draw_and_each_case(monkeypatch) -> None:
    monkeypatch.setattr(_SCRIPT, "SOLVED_BAR", 3)
    monkeypatch.setattr(_SCRIPT, "KEPT_BAR", 2)
    draws = [([True, True, False], [True, False, False]), ([True, True, True], [True, True, False])]
    text = _SCRIPT.report("p", [253, 254], draws)
    assert "| 253 | 2 | 1 |" in text and "| 254 | 3 | 2 |" in text
    assert "solved: mean 2.5, 2-3; kept: mean 1.5, 1-2; draws meeting the bar" in text
    assert "(>= 3 solved, >= 2 kept): 1 of 2" in text
    assert "| solved | 2 | 2 | 1 |" in text and "| kept | 2 | 1 | 0 |" in text


@pytest.mark.parametrize(
    ("planner", "acting"),
    [pytest.param(PLANNER, [], marks=pytest.mark.slow),  # the long set: the same path, no flag
     (ROOT / "tests/data/pretrained/traced_IQN_model.pt", ["--cvar", "0.25"])],
    ids=["ac_iqn", "iqn_cvar"],
)
def test_a_draw_is_what_marinenav_evaluate_reports_at_that_seed(
    tmp_path: Path, planner: Path, acting: list[str]
) -> None:
    out = benchmark_py("imazu_draws.py", planner, "--seeds", "254", "--labels", "p", *acting)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("| 254 |"))
    solved, kept = (int(x) for x in row.strip("| ").split(" | ")[1:])
    record = tmp_path / "imazu.json"
    done = python_program("-m marinenav.evaluate", "--planner", str(planner), "--scenario",
                          "imazu", "--seed", "254", "--out", str(record), *acting)  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = json.loads(record.read_text())
    assert solved == sum(metrics["episodes"]["success"])
    assert kept == metrics["colregs"]["kept"]


def test_bad_arguments_are_refused_in_one_line() -> None:
    out = benchmark_py("imazu_draws.py", PLANNER, "--labels", "a", "b")
    assert out.returncode == 2 and "--labels names 2 planners, 1 given" in out.stderr
    out = benchmark_py("imazu_draws.py", ROOT / "nothing.pt")
    assert out.returncode == 2 and "no planner file" in out.stderr
    out = benchmark_py("imazu_draws.py", PLANNER, "--cvar", "0")
    assert out.returncode == 2 and "cvar must be in (0, 1], got 0.0" in out.stderr
    out = benchmark_py("imazu_draws.py", PLANNER, "--cvar", "0.5")  # AC-IQN: no distribution
    assert out.returncode == 2 and "cvar is for planners of a return distribution" in out.stderr
    assert "Traceback" not in out.stderr
