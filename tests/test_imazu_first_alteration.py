"""benchmarks/imazu_first_alteration.py: where the own ship's first course alteration is made in
the Imazu cases, against the COLREGs checks' own reading of it (``first_alteration`` in an
evaluation's per-target records)."""

from __future__ import annotations

import json

import pytest

from tests.run_utils import ROOT, benchmark_module

_SCRIPT = benchmark_module("imazu_first_alteration.py")
RUN = "rainbow_waters_1344k_replay_4M/seed2"
PLANNER = ROOT / "results/recipes/mix" / RUN / "traced_Rainbow_model.pt"
# the same planner on the 22 cases as the node runs it (scripts/waters_evaluate.sh)
EVALUATED = ROOT / ("results/evaluations/waters/ours_rainbow_mix_pa5_pt20_tronly_tr0.3_lag0.1_"
                    "avg0.5_replay4M_gwc5_inrange_1344k_s2__imazu.json")  # fmt: skip


def test_the_first_alteration_is_the_one_the_checks_read() -> None:
    """Cases 1 and 5 (head-on; head-on and a give-way crossing): the angle the script finds
    equals the checks' ``first_alteration`` of the case's head-on target, made while every
    target is beyond the 20 m perception range."""
    records = json.loads(EVALUATED.read_text())["encounters"]
    rows = _SCRIPT.first_alterations(PLANNER, [1, 5])
    for case, row in zip((1, 5), rows, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == f"case {case}"
        step, angle, nearest, seen = int(cells[2]), int(cells[3]), float(cells[4]), cells[5]
        checked = records[case - 1]["targets"][0]["first_alteration"]
        assert angle == round(checked), (case, angle, checked)
        assert step > 0 and nearest > 20.0 and seen == "blind"


def test_cases_outside_the_set_are_refused() -> None:
    with pytest.raises(SystemExit) as stop:
        _SCRIPT.main([str(PLANNER), "--cases", "0"])
    assert stop.value.code == 2
