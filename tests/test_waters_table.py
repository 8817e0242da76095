"""``benchmarks/waters_table.py``, the tables of docs/results.md "Real waters", on hand-built
evaluation files: a rate per water with its episode count, "-" for a water not evaluated, and
with ``--broken`` each broken Imazu check counted once, by rule and reason, early, or at the
episode's end; with ``--bars`` the mixed recipe's bars met per label and in how many labels
all of them; with ``--cases`` each Imazu case over the labels."""

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


def _rate(successes: int, episodes: int) -> dict:
    return {"episodes": _episodes([True] * successes + [False] * (episodes - successes))}


def test_the_bars_met_per_label_and_how_many_meet_every_bar(tmp_path: Path) -> None:
    def run(label: str, large: int, harbour: int, cores4: int, solved: int, kept: int) -> None:
        _write(tmp_path, label, "large", _rate(large, 100))
        _write(tmp_path, label, "harbour", _rate(harbour, 100))
        _write(tmp_path, label, "currents4", _rate(cores4, 100))
        imazu = _imazu([[]] * 22, [1.0] * 22, kept=kept)
        imazu["episodes"]["success"] = [True] * solved + [False] * (22 - solved)
        _write(tmp_path, label, "imazu", imazu)

    run("every", 90, 80, 85, 20, 18)  # each bar exactly: met
    run("harbour", 97, 79, 95, 22, 21)  # one short in the harbour
    run("rules", 95, 90, 90, 21, 17)  # one check short
    _write(tmp_path, "open_only", "large", _rate(99, 100))  # the other waters not evaluated

    out = benchmark_py("waters_table.py", tmp_path, "--bars")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in lines[2:6]}
    assert rows["every"] == ["0.900", "0.800", "0.850", "20", "18", "5 of 5 |"]
    assert rows["harbour"] == ["0.970", "**0.790**", "0.950", "22", "21", "4 of 5 |"]
    assert rows["rules"] == ["0.950", "0.900", "0.900", "21", "**17**", "4 of 5 |"]
    assert rows["open_only"] == ["0.990", "-", "-", "-", "-", "1 of 5 |"]
    assert lines[-1] == "every bar: 1 of 4"


def test_the_bars_per_recipe_over_its_seeds(tmp_path: Path) -> None:
    """``--recipes``: labels ``<recipe>_s<seed>`` grouped, each bar counted over the seeds (a
    water not evaluated misses its bar), every bar in how many; a recipe of one seed and a label
    that is no seed's are left out."""

    def run(label: str, large: int, harbour: int, solved: int, kept: int) -> None:
        _write(tmp_path, label, "large", _rate(large, 100))
        _write(tmp_path, label, "harbour", _rate(harbour, 100))
        _write(tmp_path, label, "currents4", _rate(90, 100))
        imazu = _imazu([[]] * 22, [1.0] * 22, kept=kept)
        imazu["episodes"]["success"] = [True] * solved + [False] * (22 - solved)
        _write(tmp_path, label, "imazu", imazu)

    run("mix_s0", 95, 85, 21, 18)  # every bar
    run("mix_s1", 95, 70, 21, 18)  # the harbour missed
    run("mix_s10", 89, 85, 19, 17)  # open water, solved and kept missed
    run("mix_s10_cvar0.5", 99, 99, 22, 22)  # a variant of seed 10, no recipe's seed
    run("lone_s0", 99, 99, 22, 22)  # one seed only
    _write(tmp_path, "other_s0", "large", _rate(99, 100))  # the other waters not evaluated
    _write(tmp_path, "other_s1", "large", _rate(80, 100))

    out = benchmark_py("waters_table.py", tmp_path, "--recipes")
    assert out.returncode == 0, out.stderr
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in out.stdout.splitlines()[2:]}
    assert set(rows) == {"mix", "other"}
    mix = ["0, 1, 10", "2 of 3", "2 of 3", "3 of 3", "2 of 3", "2 of 3", "1 of 3"]
    assert rows["mix"][:7] == mix
    assert rows["other"][:7] == ["0, 1", "1 of 2", "0 of 2", "0 of 2", "0 of 2", "0 of 2", "0 of 2"]
    # Wilson by hand (z = 1.96): 1 of 3, centre 0.4269, half 0.3654; 0 of 2, 0 to 2 x 0.3288; cubed
    assert rows["mix"][7:] == ["0.33 [0.06, 0.79]", "0.037 [0.000, 0.497] |"]
    assert rows["other"][7:] == ["0.00 [0.00, 0.66]", "0.000 [0.000, 0.284] |"]
    out = benchmark_py("waters_table.py", tmp_path, "--recipes", "--min-seeds", "1")
    assert "| lone | 0 | 1 of 1 |" in out.stdout
    assert "cvar" not in out.stdout


def test_per_case_counts_over_the_labels(tmp_path: Path) -> None:
    """``--cases``: per Imazu case the first file's encounters, in how many labels it was
    solved and kept, the broken checks by rule; a label without an Imazu file is named."""

    def target(encounter: str, rule: str, passed: bool | None) -> dict:
        return {"encounter": encounter, "rule": rule, "passed": passed, "closest_step": 9}

    def case(kept: bool, *targets: dict) -> dict:
        return {"targets": list(targets), "colregs_kept": kept}

    head_on, crossing = ("head-on", "14"), ("crossing, give way", "15")
    seed0 = _imazu([], [], kept=0)
    seed0["episodes"] = _episodes([True, True])
    seed0["encounters"] = [
        case(True, target(*head_on, True)),
        case(False, target(*crossing, False), target(*head_on, None)),
    ]
    seed1 = _imazu([], [], kept=0)
    seed1["episodes"] = _episodes([False, True])
    seed1["encounters"] = [
        case(False, target(*head_on, False)),
        case(False, target(*crossing, False), target(*head_on, False)),
    ]
    _write(tmp_path, "s0", "imazu", seed0)
    _write(tmp_path, "s1", "imazu", seed1)
    _write(tmp_path, "s2", "large", _rate(9, 10))  # no Imazu file

    out = benchmark_py("waters_table.py", tmp_path, "--cases", "--labels", "s0", "s1", "s2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[2] == "| case 1 | head-on (14) | 1 of 2 | 1 of 2 | rule 14: 1 |"
    assert lines[3] == ("| case 2 | crossing, give way (15); head-on (14) | 2 of 2 | 0 of 2 "
                        "| rule 14: 1, rule 15: 2 |")  # fmt: skip
    assert lines[-1] == "no Imazu file: s2"


def test_sighted_reads_the_turn_from_sighting_and_refuses_a_file_without_it(tmp_path: Path) -> None:
    """``--sighted``: the counts, bars and broken checks read the second reading of the turn
    (``kept_sighted``, ``passed_sighted``, ``broken_sighted``); the default reads the first; a
    file written before the second reading is refused by name."""
    blind_port = {
        "encounter": "head-on", "rule": "14", "closest_step": 30,
        "passed": False, "broken": ["turned to port"], "passed_sighted": True, "broken_sighted": [],
    }  # fmt: skip
    blind_starboard = {
        "encounter": "crossing, give way", "rule": "15", "closest_step": 30, "passed": True,
        "broken": [], "passed_sighted": False, "broken_sighted": ["held course", "passed ahead"],
    }  # fmt: skip
    imazu = _imazu([[blind_port], [blind_starboard]], [50.0, 50.0], kept=1)
    imazu["colregs"]["kept_sighted"] = 1
    imazu["encounters"][0]["colregs_kept"], imazu["encounters"][1]["colregs_kept"] = False, True
    imazu["encounters"][0]["colregs_kept_sighted"] = True
    imazu["encounters"][1]["colregs_kept_sighted"] = False
    _write(tmp_path, "new", "imazu", imazu)

    def cells(*args: str) -> dict[str, str]:
        out = benchmark_py("waters_table.py", tmp_path, "--broken", "--labels", "new", *args)
        assert out.returncode == 0, out.stderr
        header, _, row = out.stdout.splitlines()
        columns = [c.strip() for c in header.strip("|").split("|")]
        return dict(zip(columns, (c.strip() for c in row.strip("|").split("|")), strict=True))

    start, sighted = cells(), cells("--sighted")
    assert (start["rule 14 broken"], start["rule 15 broken"]) == ("1", "0")
    assert start["14: turned to port"] == "1" and start["15: passed ahead"] == "0"
    assert (sighted["rule 14 broken"], sighted["rule 15 broken"]) == ("0", "1")
    assert sighted["15: held course"] == "1" and sighted["15: passed ahead"] == "1"
    assert sighted["14: turned to port"] == "0"

    out = benchmark_py("waters_table.py", tmp_path, "--cases", "--sighted")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[2].endswith("| 1 of 1 | - |") and lines[3].endswith("| 0 of 1 | rule 15: 1 |")

    imazu["colregs"]["kept_sighted"] = 0
    _write(tmp_path, "new", "imazu", imazu)
    out = benchmark_py("waters_table.py", tmp_path, "--bars", "--sighted")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2].split(" | ")[5] == "**0**"

    _write(tmp_path, "old", "imazu", _imazu([[blind_port]], [50.0], kept=0))
    out = benchmark_py("waters_table.py", tmp_path, "--bars", "--sighted")
    assert out.returncode != 0 and "old's Imazu file has no kept_sighted" in out.stderr
    assert benchmark_py("waters_table.py", tmp_path, "--bars").returncode == 0
