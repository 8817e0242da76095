"""``python -m marinenav.viz runs`` and sweep directories: a table of several runs
or a whole sweep (agent, seed, overrides, timesteps, wall clock, last and best validation
success with Wilson intervals and episode counts), and ``viz curves`` taking a sweep directory
or its ``SWEEP/*`` glob, on Hydra-like sweeps written here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marinenav.viz.__main__ import main
from marinenav.viz.runs import expand_run_dirs


def write_job(
    path: Path, agent: str, seed: int, wins: list[int], n: int = 10, clock: bool = True
) -> Path:
    """One sweep job as Hydra and the trainer leave it: ``.hydra/config.yaml``,
    ``.hydra/overrides.yaml`` and ``evaluations.jsonl`` with ``wins[k]`` of ``n`` successes at
    timestep ``1000 (k + 1)`` and 60 s of wall clock per evaluation."""
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "config.yaml").write_text(f"seed: {seed}\nagent:\n  name: {agent}\n")
    (path / ".hydra" / "overrides.yaml").write_text(
        f"- agent={agent}\n- seed={seed}\n- training.total_timesteps={1000 * len(wins)}\n"
    )
    with open(path / "evaluations.jsonl", "w") as f:
        for k, w in enumerate(wins):
            record = {"timestep": 1000 * (k + 1), "eval/return": float(w),
                      "eval/success_rate": w / n, "eval/travel_time": 30.0 if w else None,
                      "episodes": {"success": [True] * w + [False] * (n - w)}}  # fmt: skip
            if clock:
                record["wall_clock_s"] = 60.0 * (k + 1)
            f.write(json.dumps(record) + "\n")
    return path


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """Jobs 0, 1, 2 and 10 (numeric order, not 0, 1, 10, 2), multirun.yaml beside them; job 2
    has not evaluated yet."""
    root = tmp_path / "multirun" / "2026-11-24" / "12-00-00"
    write_job(root / "0", "dqn", 0, [2, 6, 5])
    write_job(root / "1", "dqn", 1, [0, 10])
    (root / "2" / ".hydra").mkdir(parents=True)
    (root / "2" / ".hydra" / "config.yaml").write_text("seed: 2\nagent:\n  name: sac\n")
    write_job(root / "10", "sac", 3, [4], clock=False)
    (root / "multirun.yaml").write_text("hydra: {}\n")
    return root


def test_a_sweep_expands_to_its_runs_in_job_order(sweep: Path, tmp_path: Path) -> None:
    jobs = [sweep / name for name in ("0", "1", "2", "10")]
    assert expand_run_dirs([sweep]) == jobs
    assert expand_run_dirs(sorted(sweep.iterdir())) == sorted(jobs)  # SWEEP/*: yaml skipped
    assert expand_run_dirs([sweep / "1", sweep]) == [sweep / "1", *jobs]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is neither a run directory .* nor a sweep directory"):
        expand_run_dirs([tmp_path / "empty"])
    with pytest.raises(ValueError, match="no run directory among"):
        expand_run_dirs([sweep / "multirun.yaml"])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        expand_run_dirs([tmp_path / "nowhere"])
    collected = tmp_path / "collected"  # a committed result: the last checkpoint's large set only
    collected.mkdir()
    (collected / "evaluation_large.json").write_text("{}")
    assert expand_run_dirs([collected]) == [collected]


def test_a_job_of_several_seeds_expands_to_its_seeds_in_seed_order(tmp_path: Path) -> None:
    """A ``seeds=[...]`` job (``seeds.json`` and the job's own ``.hydra`` beside ``seed<N>/``)
    stands for its seeds' runs, seed 2 before seed 10, alone or as a job of a sweep; a
    directory of seed runs without ``seeds.json`` (results/recipes/AGENT) stays a directory
    of runs with every run in it."""
    from marinenav.training.seeds import write_summary

    sweep = tmp_path / "sweep"
    job = sweep / "0"
    seeds = [write_job(job / f"seed{seed}", "dqn", seed, [3]) for seed in (10, 2)]
    (job / ".hydra").mkdir()
    (job / ".hydra" / "config.yaml").write_text("seeds: [10, 2]\nagent:\n  name: dqn\n")
    write_summary(job, [10, 2], {})  # written as the first seed starts
    write_job(sweep / "1", "dqn", 0, [4])
    assert expand_run_dirs([job]) == seeds[::-1]
    assert expand_run_dirs([sweep]) == [*seeds[::-1], sweep / "1"]

    recipes = tmp_path / "recipes"
    runs = [write_job(recipes / name, "dqn", 0, [3]) for name in ("averaged_seed2", "seed0")]
    assert expand_run_dirs([recipes]) == runs[::-1]  # seed0 first: seed<N> before other names


def test_runs_table_of_a_sweep(sweep: Path, capsys) -> None:
    assert main(["runs", str(sweep), "--reps", "500"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("| run | agent | seed | overrides | timesteps | wall clock (min) | "
                        "last validation success | best validation success |")  # fmt: skip
    table = lines[2 : lines.index("")]  # the per-recipe aggregates follow a blank line
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    assert [row[0] for row in rows] == [str(sweep / j) for j in ("0", "1", "2", "10")]
    # job 0: 2, 6, 5 of 10; last 5/10 = 0.500 [0.237, 0.763]; best 6/10 at 2,000
    assert rows[0][1:] == [
        "dqn", "0", "agent=dqn seed=0 training.total_timesteps=3000", "3,000", "3.0",
        "0.500 [0.237, 0.763] (n=10)", "0.600 [0.313, 0.832] (n=10) at 2,000",
    ]  # fmt: skip
    # job 1: 0 then 10 of 10: the Wilson interval of 10/10 ends at exactly 1
    assert rows[1][5:] == ["2.0", "1.000 [0.722, 1.000] (n=10)",
                           "1.000 [0.722, 1.000] (n=10) at 2,000"]  # fmt: skip
    assert rows[2][1:] == ["sac", "2", "-", "-", "-", "no evaluation yet", "-"]
    # job 10 was written without wall clock: the table still shows it
    assert rows[3][1:3] == ["sac", "3"] and rows[3][5] == "-"
    assert rows[3][6] == "0.400 [0.168, 0.687] (n=10)"


def test_viz_curves_takes_a_sweep_and_its_glob(sweep: Path, tmp_path: Path, capsys) -> None:
    (sweep / "2").rename(tmp_path / "unevaluated")  # curves need evaluations in every run
    out = tmp_path / "curves.png"
    assert main(["curves", str(sweep), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert [line.split(" [")[0] for line in text.splitlines()[:3]] == [
        str(sweep / "0"), str(sweep / "1"), str(sweep / "10")]  # fmt: skip
    assert out.is_file()
    # the shell's SWEEP/*: multirun.yaml is skipped instead of failing
    assert main(["curves", *map(str, sorted(sweep.iterdir())), "--out", str(out)]) == 0
    assert main(["time-to-quality", str(sweep / "0"), str(sweep / "1"),
                 "--out", str(tmp_path / "q.png")]) == 0  # fmt: skip
