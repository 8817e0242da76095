"""Statistics across seeds (marinenav.aggregate, rliable underneath) and ``viz compare``: the
IQM, mean and median with their bootstrap intervals, the worst run, the probability of
improvement and the performance profiles, checked against numbers worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from marinenav.aggregate import (
    Aggregate,
    RunScore,
    aggregate,
    performance_profiles,
    probability_of_improvement,
    run_score,
)
from marinenav.viz.__main__ import main

REPS = 2_000  # enough for the checks below, quick in the suite


def scores_of(label: str, successes: list[int], n: int = 100) -> list[RunScore]:
    return [RunScore(Path(f"{label}/{k}"), f"seed {k}", s, n, "large")
            for k, s in enumerate(successes)]  # fmt: skip


def test_iqm_mean_median_and_worst_by_hand() -> None:
    # eight runs: the IQM drops the two lowest (0.50, 0.70) and two highest (0.95, 0.99)
    # and averages 0.80, 0.85, 0.88, 0.90 -> 0.8575; mean 6.57 / 8 = 0.82125; median
    # (0.85 + 0.88) / 2 = 0.865
    runs = scores_of("a", [85, 50, 99, 80, 70, 95, 88, 90])
    group = aggregate("a", runs, reps=REPS)
    assert group.iqm.value == pytest.approx(0.8575)
    assert group.mean.value == pytest.approx(0.82125)
    assert group.median.value == pytest.approx(0.865)
    assert group.worst.name == "seed 1" and group.worst.score == 0.5
    for estimate in (group.iqm, group.mean, group.median):
        assert 0.5 <= estimate.low < estimate.value < estimate.high <= 0.99
    # the IQM ignores how bad the worst run is; the mean does not
    worse = aggregate("a", scores_of("a", [85, 0, 99, 80, 70, 95, 88, 90]), reps=REPS)
    assert worse.iqm.value == pytest.approx(0.8575)
    assert worse.mean.value == pytest.approx(0.82125 - 0.5 / 8)


def test_intervals_are_reproducible_and_shrink_with_agreement() -> None:
    runs = scores_of("a", [85, 50, 99, 80, 70, 95, 88, 90])
    first, again = aggregate("a", runs, reps=REPS, seed=3), aggregate("a", runs, reps=REPS, seed=3)
    assert first == again
    same = aggregate("b", scores_of("b", [90] * 5), reps=REPS)
    assert (same.iqm.low, same.iqm.value, same.iqm.high) == pytest.approx((0.9, 0.9, 0.9))
    one = aggregate("c", scores_of("c", [70]), reps=REPS)
    assert (one.mean.low, one.mean.high) == pytest.approx((0.7, 0.7))


def test_mixed_sources_and_empty_groups_are_refused() -> None:
    mixed = [*scores_of("a", [90]), RunScore(Path("v"), "seed 9", 8, 10, "validation")]
    with pytest.raises(ValueError, match="some runs are scored on the large set"):
        aggregate("a", mixed, reps=REPS)
    with pytest.raises(ValueError, match="no runs"):
        aggregate("a", [], reps=REPS)


def test_probability_of_improvement_by_hand() -> None:
    # the estimates do not depend on the resamples, and `high` over `low` holds in every one:
    # 200 (rliable's improvement bootstrap is a Python loop: 2,000 took 20 s of this test)
    # x = 0.90, 0.80; y = 0.85, 0.70: of the four pairs x wins three -> 0.75
    x = aggregate("x", scores_of("x", [90, 80]), reps=REPS)
    y = aggregate("y", scores_of("y", [85, 70]), reps=REPS)
    assert probability_of_improvement(x, y, reps=200).value == pytest.approx(0.75)
    assert probability_of_improvement(y, x, reps=200).value == pytest.approx(0.25)
    # a tie counts a half: x = 0.9, 0.8 against y = 0.9 -> (0.5 + 0) / 2
    z = aggregate("z", scores_of("z", [90]), reps=REPS)
    assert probability_of_improvement(x, z, reps=200).value == pytest.approx(0.25)
    # every run of `high` beats every run of `low`, in every resample
    high = aggregate("high", scores_of("h", [95, 96, 97]), reps=REPS)
    low = aggregate("low", scores_of("l", [60, 70, 80]), reps=REPS)
    estimate = probability_of_improvement(high, low, reps=200)
    assert (estimate.value, estimate.low, estimate.high) == (1.0, 1.0, 1.0)


def test_performance_profile_is_the_fraction_of_runs_above_tau() -> None:
    group = aggregate("a", scores_of("a", [50, 80, 90, 95]), reps=REPS)
    taus = np.array([0.0, 0.5, 0.85, 0.9, 0.99])
    profiles, bands = performance_profiles([group], taus, reps=REPS)
    # above 0: all four; above 0.5: three (0.5 is not above itself); above 0.85: two;
    # above 0.9: one; above 0.99: none
    np.testing.assert_allclose(profiles["a"], [1.0, 0.75, 0.5, 0.25, 0.0])
    low, high = bands["a"]
    assert np.all(low <= profiles["a"] + 1e-12) and np.all(profiles["a"] <= high + 1e-12)
    assert low[0] == high[0] == 1.0 and low[-1] == high[-1] == 0.0


def write_run(path: Path, seed: int, validation: int, large: int | None) -> Path:
    """A run directory: Hydra's config and overrides, one validation evaluation of 10 episodes
    with ``validation`` successes, and (``large`` not None) a large-set file of 600 episodes."""
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "config.yaml").write_text(f"seed: {seed}\nagent:\n  name: ac_iqn\n")
    (path / ".hydra" / "overrides.yaml").write_text(f"- agent=ac_iqn\n- seed={seed}\n")
    record = {"timestep": 1000, "wall_clock_s": 60.0,
              "episodes": {"success": [True] * validation + [False] * (10 - validation)}}
    (path / "evaluations.jsonl").write_text(json.dumps(record) + "\n")
    if large is not None:
        outcomes = {"success": [True] * large + [False] * (600 - large)}
        (path / "evaluation_large.json").write_text(json.dumps({"episodes": outcomes}))
    return path


def test_run_score_prefers_the_large_set(tmp_path: Path) -> None:
    both = write_run(tmp_path / "both", 3, validation=9, large=540)
    assert run_score(both) == RunScore(both, "seed 3", 540, 600, "large")
    assert run_score(both, "validation") == RunScore(both, "seed 3", 9, 10, "validation")
    only = write_run(tmp_path / "only", 4, validation=7, large=None)
    assert run_score(only).source == "validation" and run_score(only).score == 0.7
    with pytest.raises(FileNotFoundError, match="--set large"):
        run_score(only, "large")


def test_compare_command_prints_tables_and_draws_profiles(tmp_path: Path, capsys) -> None:
    for seed, large in enumerate([540, 550, 560, 530]):
        write_run(tmp_path / "a" / str(seed), seed, 9, large)
    for seed, large in enumerate([500, 510, 520]):
        write_run(tmp_path / "b" / f"run_seed{seed}", seed, 8, large)
    out = tmp_path / "profiles.png"
    argv = ["compare", str(tmp_path / "a"), str(tmp_path / "b" / "run_seed*"),
            "--labels", "A", "B", "--reps", "500", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    aggregates, rest = capsys.readouterr().out.split("\n\n")
    *improvements, figure = rest.strip().splitlines()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in aggregates.splitlines()]
    rows = {row[0]: row for row in cells[2:]}
    # A: 0.900, 0.917, 0.933, 0.883 -> IQM of four runs trims one each end: (0.900 + 0.917) / 2
    assert rows["A"][1] == "4" and rows["A"][3].startswith("0.908 [")
    assert rows["A"][6] == "0.883 (seed 3)"
    assert rows["B"][1] == "3" and rows["B"][4].startswith("0.850 [")
    # P(A > B): every run of A is above every run of B, in every resample
    improvement = [[c.strip() for c in line.strip("|").split("|")]
                   for line in improvements]  # fmt: skip
    assert improvement[0] == ["P(row > column)", "A", "B"]
    assert improvement[2] == ["A", "-", "1.000 [1.000, 1.000]"]
    assert improvement[3] == ["B", "0.000 [0.000, 0.000]", "-"]
    assert figure.strip() == str(out) and out.stat().st_size > 10_000


def test_runs_command_adds_a_row_per_recipe(tmp_path: Path, capsys) -> None:
    sweep = tmp_path / "sweep"
    for seed, large in enumerate([540, 550, 560]):
        write_run(sweep / str(seed), seed, 9, large)
    assert main(["runs", str(sweep), "--reps", "500"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| agent=ac_iqn |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:3] == ["3", "large set (n=600 per run)"]
    assert cells[3].startswith("0.917 [")  # three runs: nothing trimmed, the mean
    assert cells[6] == "0.900 (seed 0)"


def test_compare_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    write_run(tmp_path / "a" / "0", 0, 9, 540)
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", str(tmp_path / "a"), str(tmp_path / "nothing*"), "--reps", "500"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["compare", str(tmp_path / "a"), "--labels", "x", "y"])
    for command in ("compare", "runs"):  # too few resamples for a 95% interval
        with pytest.raises(SystemExit) as exit_info:
            main([command, str(tmp_path / "a"), "--reps", "50"])
        assert exit_info.value.code == 2


def test_aggregate_holds_runs_in_rliable_layout() -> None:
    group: Aggregate = aggregate("a", scores_of("a", [80, 90]), reps=REPS)
    assert group.scores.shape == (2, 1)
    np.testing.assert_allclose(group.scores[:, 0], [0.8, 0.9])


def write_evaluation(path: Path, successes: int, n: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    outcomes = {"success": [True] * successes + [False] * (n - successes)}
    path.write_text(json.dumps({"eval/success_rate": successes / n, "episodes": outcomes}))
    return path


def test_compare_scores_a_glob_of_evaluation_files_one_run_each(tmp_path: Path, capsys) -> None:
    """A planner per seed scored in one water (``<label>_s<N>__<water>.json``): each file a run,
    its success count its score; the same numbers as run directories would give."""
    waters = tmp_path / "waters"
    for seed, successes in enumerate([90, 80, 85]):
        write_evaluation(waters / f"ours_x_s{seed}__harbour.json", successes, 100)
        write_evaluation(waters / f"ours_x_s{seed}__large.json", 540, 600)
    argv = ["compare", str(waters / "ours_x_s?__harbour.json"), "--reps", "500",
            "--out", str(tmp_path / "p.png")]  # fmt: skip
    assert main(argv) == 0
    row = capsys.readouterr().out.splitlines()[2]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:3] == ["3", "evaluation file (n=100 per run)"]
    assert cells[3].startswith("0.850 [")  # three runs: nothing trimmed, the mean
    assert cells[6] == "0.800 (s1)"  # what tells the files apart


@pytest.mark.parametrize(
    ("stems", "names"),
    [(["ours_x_s0__harbour", "ours_x_s1__harbour"], ["s0", "s1"]),
     (["a_s0_864k__large", "a_s1__large"], ["s0_864k", "s1"]),
     (["run_s1__large"], ["run_s1__large"]),
     (["s1", "s2"], ["s1", "s2"]),
     (["x_a", "x_a_b"], ["a", "a_b"]),
     (["x_a", "x_a"], ["x_a", "x_a"])],  # nothing tells them apart: as they are
)  # fmt: skip
def test_evaluation_files_are_named_by_what_tells_them_apart(stems, names) -> None:
    from marinenav.viz.compare import distinct_names

    assert distinct_names(stems) == names


def test_compare_refuses_evaluation_files_it_cannot_read(tmp_path: Path) -> None:
    write_evaluation(tmp_path / "w" / "a__large.json", 5, 10)
    (tmp_path / "w" / "b__large.json").write_text(json.dumps({"eval/success_rate": 0.5}))
    write_run(tmp_path / "w" / "run", 0, 9, 540)
    for spec in ("w/b__large.json", "w/*__large.json", "w/*"):
        with pytest.raises(SystemExit) as exit_info:
            main(["compare", str(tmp_path / spec), "--reps", "500"])
        assert exit_info.value.code == 2
