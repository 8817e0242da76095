"""``benchmarks/waters_table.py``, the tables of docs/results.md "Real waters", on hand-built
evaluation files: a rate per water with its episode count, "-" for a water not evaluated, and
with ``--broken`` each broken Imazu check counted once, by rule and reason, early, or at the
episode's end."""

from __future__ import annotations

import json
from pathlib import Path

from tests.run_utils import benchmark_py


def _episodes(successes: list[bool], times: list[float] | None = None) -> dict:
    return {"success": successes, "time": times or [1.0] * len(successes)}


def _target(rule: str, closest_step: int, broken: list[str] | None) -> dict:
    target = {"rule": rule, "passed": broken is None, "closest_step": closest_step}
    if broken is not None:
        target["broken"] = broken
    return target


def _write(directory: Path, label: str, water: str, metrics: dict) -> None:
    (directory / f"{label}__{water}.json").write_text(json.dumps(metrics))


def _imazu(targets_per_episode: list[list[dict]], times: list[float], kept: int) -> dict:
    return {
        "episodes": _episodes([True] * len(times), times),
        "encounters": [{"targets": targets} if targets else None
                       for targets in targets_per_episode],
        "colregs": {"episodes": sum(bool(t) for t in targets_per_episode), "kept": kept},
    }  # fmt: skip


def test_rates_per_water_and_the_broken_checks(tmp_path: Path) -> None:
    _write(tmp_path, "a", "large", {"episodes": _episodes([True, True, True, False])})
    _write(tmp_path, "a", "currents4", {"episodes": _episodes([True, True])})
    # three encounter episodes ending on steps 20, 6 and 10 (0.5 s per step) and one without
    targets = [
        [_target("15", 20, ["passed ahead"]), _target("14", 8, ["turned to port"])],
        [_target("15", 1, ["held course", "passed ahead"])],
        [_target("13", 4, None), _target("13", 10, ["came too close"])],
        [],
    ]
    _write(tmp_path, "a", "imazu", _imazu(targets, [10.0, 3.0, 5.0, 2.0], kept=0))
    # a file written before the reasons were recorded, and a label without Imazu
    old = _imazu([[{"rule": "15", "passed": False, "closest_step": 3}]], [4.0], kept=0)
    _write(tmp_path, "old", "imazu", old)
    _write(tmp_path, "plain", "large", {"episodes": _episodes([False])})

    out = benchmark_py("waters_table.py", tmp_path)
    assert out.returncode == 0, out.stderr
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in out.stdout.splitlines()[2:]}
    large, harbour, cores4, cores8, solved, kept = rows["a"]
    assert large.startswith("0.750 [") and large.endswith("(n=4)")
    assert harbour == "-" and cores8 == "-" and cores4.startswith("1.000 [")
    assert (solved, kept) == ("4 / 4", "0 / 3 |")
    assert rows["plain"][0].startswith("0.000 [") and rows["plain"][4:] == ["-", "- |"]

    out = benchmark_py("waters_table.py", tmp_path, "--broken", "--labels", "a", "old", "plain")
    assert out.returncode == 0, out.stderr
    header, _, a, old_row, plain = out.stdout.splitlines()
    columns = [c.strip() for c in header.strip("|").split("|")]
    cells = dict(zip(columns, (c.strip() for c in a.strip("|").split("|")), strict=True))
    assert cells["COLREGs kept"] == "0 / 3"
    # the step-1 check counts apart; the others by rule and reason
    assert cells["closest within 5 steps"] == "1"
    assert (cells["rule 14 broken"], cells["rule 15 broken"]) == ("1", "1")
    assert cells["14: turned to port"] == "1" and cells["15: passed ahead"] == "1"
    assert cells["13: too close"] == "1" and cells["15: held course"] == "0"
    # closest on the episode's last step: the rule-15 pass (step 20 of 20) and the overtaking
    # (10 of 10), not the head-on one (8 of 20)
    assert cells["closest at the end"] == "2"
    assert old_row.count("?") == len(columns) - 1
    assert plain.count(" - ") == len(columns) - 1
