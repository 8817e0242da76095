"""Several seeds in one job (``seeds=[...]``, marinenav.training.seeds): each seed's directory is
the run ``seed=N`` makes, the job's value is the mean of their final success rates, a resume
goes on where each seed stands, and bad lists are refused before anything trains."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from marinenav.run_files import SUMMARY_NAME
from marinenav.training.checkpoint import checkpoint_path
from marinenav.training.seeds import seed_runs, write_summary
from tests.run_utils import TINY, compose_config, train_py


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()]


def test_each_seed_directory_is_the_run_of_that_seed_and_the_summary_their_mean(
        tmp_path: Path) -> None:  # fmt: skip
    """A job with ``seeds=[3,5]``: seed3/ and seed5/ hold the evaluations that ``seed=3`` and
    ``seed=5`` alone give, each with its own config, and seeds.json their final success and
    its mean."""
    job, alone = tmp_path / "job", tmp_path / "alone5"
    for args in (["seeds=[3,5]", f"hydra.run.dir={job}"], ["seed=5", f"hydra.run.dir={alone}"]):
        result = train_py(*TINY, *args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]

    episodes = [record["episodes"] for record in records(job / "seed5")]
    assert episodes == [record["episodes"] for record in records(alone)]
    returns = {seed: records(job / f"seed{seed}")[-1]["eval/return"] for seed in (3, 5)}
    assert returns[3] != returns[5]  # two seeds trained, not one twice
    for seed in (3, 5):
        config = yaml.safe_load((job / f"seed{seed}" / ".hydra" / "config.yaml").read_text())
        assert (config["seed"], config["seeds"]) == (seed, None)
    assert yaml.safe_load((job / ".hydra" / "config.yaml").read_text())["seeds"] == [3, 5]

    finals = {seed: records(job / f"seed{seed}")[-1] for seed in (3, 5)}
    summary = json.loads((job / SUMMARY_NAME).read_text())
    assert summary["final_success_rate"] == {str(s): f["eval/success_rate"] for s, f in
                                             finals.items()}  # fmt: skip
    assert summary["final_timestep"] == {"3": 160, "5": 160}
    mean = (finals[3]["eval/success_rate"] + finals[5]["eval/success_rate"]) / 2
    assert summary["mean_final_success_rate"] == pytest.approx(mean)
    # evaluate and export name a checkpoint through checkpoint_path: the job has none of its own
    with pytest.raises(FileNotFoundError, match=f"job of several seeds: name one of its runs "
                       f"\\({job / 'seed3'}, {job / 'seed5'}\\)"):  # fmt: skip
        checkpoint_path(job)


@pytest.mark.slow  # the long set: a sweep of train.py processes
def test_a_sweep_trial_of_several_seeds_reports_their_mean(tmp_path: Path) -> None:
    """``python train.py -m +tune=proxy 'seeds=[3,5]'``: the study's value for the trial is the
    mean the job wrote to seeds.json."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    sweep = tmp_path / "sweep"
    result = train_py("-m", "+tune=proxy", "hydra.sweeper.n_trials=1", *TINY, "seeds=[3,5]",
                      f"hydra.sweep.dir={sweep}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    trained = sorted(path.parent.name for path in (sweep / "0").glob("seed*/checkpoint.pt"))
    assert trained == ["seed3", "seed5"]
    summary = json.loads((sweep / "0" / SUMMARY_NAME).read_text())
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert best["best_value"] == pytest.approx(summary["mean_final_success_rate"])


def test_the_summary_is_the_mean_of_the_seeds_final_success_once_all_finished(
        tmp_path: Path) -> None:  # fmt: skip
    finals = {0: {"eval/success_rate": 0.5, "timestep": 800}}
    assert write_summary(tmp_path, [0, 7], finals) is None  # seed 7 still training
    summary = json.loads((tmp_path / SUMMARY_NAME).read_text())
    assert summary == {"seeds": [0, 7], "final_success_rate": {"0": 0.5},
                       "final_timestep": {"0": 800}, "mean_final_success_rate": None}  # fmt: skip
    finals[7] = {"eval/success_rate": 1.0, "timestep": 800}
    assert write_summary(tmp_path, [0, 7], finals) == 0.75
    summary = json.loads((tmp_path / SUMMARY_NAME).read_text())
    assert summary == {"seeds": [0, 7], "final_success_rate": {"0": 0.5, "7": 1.0},
                       "final_timestep": {"0": 800, "7": 800},
                       "mean_final_success_rate": 0.75}  # fmt: skip


@pytest.mark.slow  # the long set: a drill of killed and resumed jobs
def test_a_resumed_job_goes_on_where_each_seed_stands_and_a_fresh_one_is_refused(
        tmp_path: Path) -> None:  # fmt: skip
    """``resume=true``: a finished seed keeps its evaluations, a seed without a checkpoint
    starts; the same job started fresh over them is refused (exit 2) and changes nothing."""
    job = tmp_path / "job"
    result = train_py(*TINY, "seeds=[3,5]", f"hydra.run.dir={job}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    seed3 = (job / "seed3" / "evaluations.jsonl").read_text()
    summary = (job / SUMMARY_NAME).read_text()

    result = train_py(*TINY, "seeds=[3,5]", f"hydra.run.dir={job}", cwd=tmp_path)
    assert result.returncode == 2
    assert f"run directory {job / 'seed3'} holds the checkpoint" in result.stderr
    assert (job / SUMMARY_NAME).read_text() == summary

    for name in ("checkpoint.pt", "evaluations.jsonl"):
        (job / "seed5" / name).unlink()
    (job / SUMMARY_NAME).unlink()
    result = train_py(*TINY, "seeds=[3,5]", "resume=true", f"hydra.run.dir={job}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resuming" in result.stdout and "seed5 from timestep 0" in result.stdout
    assert (job / "seed3" / "evaluations.jsonl").read_text() == seed3
    assert (job / "seed3" / "resumes.jsonl").is_file()
    assert (job / SUMMARY_NAME).read_text() == summary  # the same seeds, the same runs


BAD_SEED_LISTS = [
    (["seeds=[]"], "seeds must be null or a non-empty list"),
    (["seeds=[1,1]"], "seeds must be distinct, [1] repeated"),
    (["seeds=[1,-1]"], "seeds must be an integer in [0, 2**62], got -1"),
    (["seeds=[1,2]", "resume=elsewhere"], "resumes only its own directory"),
]  # fmt: skip


@pytest.mark.parametrize("overrides, message", BAD_SEED_LISTS)
def test_a_bad_list_of_seeds_is_refused_before_anything_is_made(
        tmp_path: Path, overrides: list[str], message: str) -> None:  # fmt: skip
    job = tmp_path / "job"
    with pytest.raises(ValueError, match=re.escape(message)):
        seed_runs(compose_config(*TINY, *overrides), job)
    assert not job.exists()


def test_train_py_refuses_a_bad_list_in_one_line_and_removes_the_job_directory(
        tmp_path: Path) -> None:  # fmt: skip
    """The same refusal from ``python train.py`` (one of the lists above): the directory Hydra
    made for the job is removed again."""
    job = tmp_path / "job"
    overrides, message = BAD_SEED_LISTS[1]
    result = train_py(*TINY, *overrides, f"hydra.run.dir={job}", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert message in result.stderr
    assert not job.exists()
