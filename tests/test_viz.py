"""Pictures of runs: a recorded evaluation episode matches the evaluation's numbers and draws to
PNG frames and a GIF; learning curves average seeds to the hand-computed mean and standard
error; the ``python -m marinenav.viz`` command line writes files or fails with status 2."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from marinenav.training.checkpoint import load_agent
from marinenav.training.evaluation import EvaluationSet, Evaluator
from marinenav.training.trainer import Trainer
from marinenav.viz import (
    aggregate,
    draw_learning_curves,
    load_runs,
    plot_learning_curves,
    record_episode,
    record_episodes,
    save_animation,
    save_frames,
)
from marinenav.viz.episode import frame_indices
from tests.run_utils import python_program, tiny_config

MAX_STEPS = 20  # evaluation step cap of the tiny run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A tiny trained DQN run (one batched evaluation of 2 episodes with obstacles and
    vortex cores, checkpoint at the end): about a second."""
    path = tmp_path_factory.mktemp("run")
    cfg = tiny_config(
        "agent=dqn", "training.total_timesteps=80", "evaluation.first=80",
        "checkpoint.interval=80", "curriculum.num_obstacles=[2]", "curriculum.num_cores=[2]",
        "env.core_slots=2", f"evaluation.max_steps={MAX_STEPS}",
    )  # fmt: skip
    Trainer(cfg, path).train()
    return path


def own_set(run_dir: Path, config: dict) -> EvaluationSet:
    """The run's own evaluation set as it recorded it, in its conditions."""
    recorded = json.loads((run_dir / "eval_configs.json").read_text())
    return EvaluationSet.of_run(config, scenarios=recorded)


@pytest.fixture(scope="module")
def recording(run_dir: Path):
    agent, config = load_agent(run_dir)
    return record_episode(agent, own_set(run_dir, config), 0)


def test_recorded_episode_matches_the_evaluation(run_dir: Path, recording) -> None:
    agent, config = load_agent(run_dir)
    evaluation_set = own_set(run_dir, config)
    assert evaluation_set.max_steps == MAX_STEPS and evaluation_set.dtype == torch.float32
    scenario = evaluation_set.scenarios[0]
    T, R = recording.num_steps, evaluation_set.slots.robots  # the set's slots, padding too
    assert 1 <= T <= MAX_STEPS
    assert recording.positions.shape == (T + 1, R, 2)
    assert recording.headings.shape == (T + 1, R) and recording.rewards.shape == (T, R)
    robots = scenario["env"]["num_robots"]
    assert recording.present.tolist() == [True] * robots + [False] * (R - robots)
    np.testing.assert_allclose(recording.positions[0, :robots], scenario["robots"]["start"],
                               atol=1e-5)  # fmt: skip
    # it ended: time out, a collision, or no robot left navigating
    assert T == MAX_STEPS or recording.collided[-1].any() or not recording.active[-1].any()
    # the evaluation of the set saw the same episode, bit for bit
    gamma = config["agent"]["gamma"]
    evaluation = Evaluator(evaluation_set, agent.action_kind, gamma).run(agent.policy, tracks=True)
    assert T == int(evaluation["tracks"]["steps"][0])
    np.testing.assert_array_equal(recording.positions, evaluation["tracks"]["pos"][: T + 1, 0])
    discounted = (recording.rewards * gamma ** np.arange(T)[:, None]).sum(0)[:robots].mean()
    assert discounted == pytest.approx(evaluation["episodes"]["return"][0], rel=1e-12)
    assert recording.success == evaluation["episodes"]["success"][0]
    assert recording.step_time == pytest.approx(0.5)
    again = record_episode(agent, evaluation_set, 0)  # deterministic policy
    np.testing.assert_array_equal(again.positions, recording.positions)


def test_episodes_are_recorded_as_their_set_evaluated_them_or_alone(run_dir: Path) -> None:
    """Several episodes from one run of the set, in the order asked, each its evaluation's
    track; ``alone=True`` runs one by itself (another draw of the batch's perception noise),
    as evaluating that episode alone does."""
    agent, config = load_agent(run_dir)
    evaluation_set = own_set(run_dir, config)
    assert len(evaluation_set) == 2
    evaluation = Evaluator(evaluation_set, agent.action_kind, 0.99).run(agent.policy, tracks=True)
    recordings = record_episodes(agent, evaluation_set, [-1, 0])
    for recording, row in zip(recordings, [1, 0], strict=True):
        steps = int(evaluation["tracks"]["steps"][row])
        assert recording.num_steps == steps
        assert recording.scenario == evaluation_set.scenarios[row]
        np.testing.assert_array_equal(
            recording.positions, evaluation["tracks"]["pos"][: steps + 1, row]
        )
        np.testing.assert_array_equal(
            recording.headings, evaluation["tracks"]["theta"][: steps + 1, row]
        )
        assert recording.success == evaluation["episodes"]["success"][row]
    alone = record_episode(agent, evaluation_set, 0, alone=True)
    by_itself = Evaluator(evaluation_set.episode(0), agent.action_kind, 0.99)
    itself = by_itself.run(agent.policy, tracks=True)
    steps = int(itself["tracks"]["steps"][0])
    assert alone.num_steps == steps
    np.testing.assert_array_equal(alone.positions, itself["tracks"]["pos"][: steps + 1, 0])
    # the noise of a batch of one is not that of a batch of two: here the tracks agree, but
    # the COLREGs penalty reads the perceived vessels, and the rewards part ways
    assert alone.rewards.shape == recordings[1].rewards.shape
    assert not np.array_equal(alone.rewards, recordings[1].rewards)
    with pytest.raises(ValueError, match="episode 2 out of range: the set has 2"):
        record_episodes(agent, evaluation_set, [0, 2])


def test_frames_and_animation(recording, tmp_path: Path) -> None:
    T = recording.num_steps
    expected = list(range(0, T + 1, 3)) + ([T] if T % 3 else [])
    assert frame_indices(recording, every=3) == expected
    frames = save_frames(recording, tmp_path / "frames", every=3, dpi=50)
    assert [p.name for p in frames] == [f"frame_{k:04d}.png" for k in expected]
    for path in (frames[0], frames[-1]):
        image = np.asarray(Image.open(path).convert("RGB"))
        assert image.shape == (300, 300, 3)  # 6 x 6 inches at 50 dpi
        assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # not blank
    gif = save_animation(recording, tmp_path / "episode.gif", every=3, dpi=50)
    with Image.open(gif) as image:
        assert image.n_frames == len(expected) and image.size == (300, 300)
    with pytest.raises(ValueError, match="gif or .mp4"):
        save_animation(recording, tmp_path / "episode.avi")


def write_run(path: Path, agent: str, rounds: list[tuple[int, float, float, float | None]]):
    """A fake run directory: Hydra config and ``evaluations.jsonl`` with
    ``(timestep, return, success_rate, travel_time)`` rounds."""
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "config.yaml").write_text(f"seed: 0\nagent:\n  name: {agent}\n")
    lines = [
        json.dumps({"timestep": t, "eval/return": r, "eval/success_rate": s,
                    "eval/travel_time": time, "eval/energy": None if time is None else 10 * time})
        for t, r, s, time in rounds
    ]  # fmt: skip
    (path / "evaluations.jsonl").write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def two_seeds(tmp_path: Path) -> list[Path]:
    return [
        write_run(tmp_path / "seed0", "sac", [(100, 1.0, 0.0, None), (200, 3.0, 0.5, 40.0)]),
        write_run(tmp_path / "seed1", "sac",
                  [(100, 2.0, 0.5, 30.0), (200, 7.0, 1.0, 50.0), (300, 9.0, 1.0, 45.0)]),
    ]  # fmt: skip


def test_seeds_average_to_mean_and_standard_error(two_seeds: list[Path], tmp_path: Path) -> None:
    runs = load_runs(two_seeds)
    assert [run.label for run in runs] == ["sac", "sac"]  # from .hydra/config.yaml
    curves = aggregate(runs)
    assert list(curves) == ["sac"]
    sac = curves["sac"]
    np.testing.assert_array_equal(sac["timesteps"], [100, 200])  # rounds of both seeds
    np.testing.assert_allclose(sac["return_mean"], [1.5, 5.0])
    # std with ddof=0 of two values a, b is |a - b| / 2; standard error = std / sqrt(2)
    np.testing.assert_allclose(sac["return_stderr"], [0.5 / math.sqrt(2), 2.0 / math.sqrt(2)])
    np.testing.assert_allclose(sac["success_rate_mean"], [0.25, 0.75])
    np.testing.assert_allclose(sac["success_rate_stderr"], [0.25 / math.sqrt(2)] * 2)
    # seed 0 had no success at 100: its travel time is left out, not averaged in as -1
    np.testing.assert_allclose(sac["travel_time_mean"], [30.0, 45.0])
    np.testing.assert_allclose(sac["travel_time_stderr"], [0.0, 5.0 / math.sqrt(2)])
    np.testing.assert_array_equal(sac["travel_time_count"], [1, 2])
    np.testing.assert_allclose(sac["energy_mean"], [300.0, 450.0])
    # explicit labels: one group per seed, a single run has no spread
    single = aggregate(load_runs(two_seeds, labels=["a", "b"]))
    np.testing.assert_allclose(single["b"]["return_mean"], [2.0, 7.0, 9.0])
    np.testing.assert_allclose(single["b"]["return_stderr"], [0.0, 0.0, 0.0])

    fig = Figure()
    FigureCanvasAgg(fig)
    axes = draw_learning_curves(fig, curves)
    assert [ax.get_title() for ax in axes] == [
        "Cumulative Reward", "Success Rate", "Average Travel Time (s)"]  # fmt: skip
    for ax, metric in zip(axes, ("return", "success_rate", "travel_time"), strict=True):
        np.testing.assert_allclose(ax.lines[0].get_xdata(), [100, 200])
        np.testing.assert_allclose(ax.lines[0].get_ydata(), sac[f"{metric}_mean"])
        band = ax.collections[0].get_paths()[0].vertices[:, 1]
        low, high = (
            sac[f"{metric}_mean"] - sac[f"{metric}_stderr"],
            sac[f"{metric}_mean"] + sac[f"{metric}_stderr"],
        )
        np.testing.assert_allclose([band.min(), band.max()], [low.min(), high.max()])

    path = tmp_path / "curves.png"
    plot_learning_curves(two_seeds, path)
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size == (1500, 450)


def test_a_run_that_counted_the_colregs_gets_a_fourth_panel(two_seeds, tmp_path: Path) -> None:
    """Evaluations with ``eval/colregs_kept`` (a set with encounter episodes) add a panel of
    the count, averaged over seeds as the others; runs without it keep their three panels."""
    for run, kept in zip(two_seeds, ([10, 14], [12, 20, 21]), strict=True):
        lines = (run / "evaluations.jsonl").read_text().splitlines()
        records = [json.loads(line) | {"eval/colregs_kept": k}
                   for line, k in zip(lines, kept, strict=True)]  # fmt: skip
        (run / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    curves = aggregate(load_runs(two_seeds))
    np.testing.assert_allclose(curves["sac"]["colregs_kept_mean"], [11.0, 17.0])
    fig = Figure()
    FigureCanvasAgg(fig)
    axes = draw_learning_curves(fig, curves)
    assert [ax.get_title() for ax in axes][-1] == "COLREGs kept (encounter episodes)"
    assert len(axes) == 4
    np.testing.assert_allclose(axes[3].lines[0].get_ydata(), [11.0, 17.0])
    path = tmp_path / "colregs.png"
    plot_learning_curves(two_seeds, path)
    with Image.open(path) as image:
        assert image.size == (2000, 450)


def test_the_colregs_panel_draws_the_sighted_reading_dashed_where_recorded(
    two_seeds, tmp_path: Path
) -> None:
    """Records with ``eval/colregs_kept_sighted`` (written since 2026-12-01) add, on the COLREGs
    panel, the seeds' mean of that count as a dashed line beside the first reading's; records
    without it (an older run) draw the first reading alone."""
    first, sighted = ([10, 14], [12, 20, 21]), ([4, 9], [6, 11, 12])
    for run, kept, seen in zip(two_seeds, first, sighted, strict=True):
        lines = (run / "evaluations.jsonl").read_text().splitlines()
        records = [json.loads(line) | {"eval/colregs_kept": k, "eval/colregs_kept_sighted": s}
                   for line, k, s in zip(lines, kept, seen, strict=True)]  # fmt: skip
        (run / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    curves = aggregate(load_runs(two_seeds))
    fig = Figure()
    FigureCanvasAgg(fig)
    panel = draw_learning_curves(fig, curves)[3]
    solid, dashed = panel.lines
    np.testing.assert_allclose(solid.get_ydata(), [11.0, 17.0])
    np.testing.assert_allclose(dashed.get_ydata(), [5.0, 10.0])
    assert solid.get_linestyle() == "-" and dashed.get_linestyle() == "--"
    assert solid.get_color() == dashed.get_color()

    for run in two_seeds:  # the same runs recorded before the second reading
        lines = (run / "evaluations.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        for record in records:
            del record["eval/colregs_kept_sighted"]
        (run / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fig = Figure()
    FigureCanvasAgg(fig)
    panel = draw_learning_curves(fig, aggregate(load_runs(two_seeds)))[3]
    assert len(panel.lines) == 1 and not panel.texts


def viz(*args: str) -> subprocess.CompletedProcess:
    return python_program("-m marinenav.viz", *args)


def test_command_line(run_dir: Path, two_seeds: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "episode"
    result = viz("episode", str(run_dir), "--episode", "1", "--out", str(out), "--gif",
                 "--every", "4", "--max-steps", "6")  # fmt: skip
    assert result.returncode == 0, result.stderr
    frames = sorted(out.glob("frame_*.png"))
    steps = int(result.stdout.split(" steps")[0].split()[-1])  # "episode 1 of DIR: T steps"
    assert 1 <= steps <= 6
    assert len(frames) == len(range(0, steps + 1, 4)) + (steps % 4 != 0)
    assert (out / "episode_1.gif").is_file() and str(out / "episode_1.gif") in result.stdout
    assert all(str(p) in result.stdout for p in frames)

    curves = tmp_path / "curves.png"
    result = viz("curves", *map(str, two_seeds), "--out", str(curves), "--group-by", "agent")
    assert result.returncode == 0, result.stderr
    assert curves.is_file() and "success rate 1.000" in result.stdout

    result = viz("episode", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert "run directory" in result.stderr and "does not exist" in result.stderr

    # an output under a file: one line naming it (it was a traceback ending "File exists")
    curves.write_text("")
    result = viz("curves", *map(str, two_seeds), "--out", str(curves / "c.png"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"python -m marinenav.viz: error: cannot write {curves / 'c.png'}: {curves} is a file"
    )


def test_per_stage_curves(tmp_path: Path) -> None:
    """Stage success rates are read from the evaluation records, averaged over seeds and drawn
    one panel per stage; a record without stage rates gives NaN, not a crash."""
    from marinenav.viz.curves import STAGE_METRICS, plot_learning_curves

    runs = []
    for seed, rates in enumerate(([0.2, 0.4, 0.6, 0.8, 1.0, 0.0], [0.4, 0.4, 0.4, 0.4, 0.4, 0.4])):
        run = tmp_path / f"seed{seed}"
        write_run(run, "ac_iqn", [(1000, 1.0, 0.5, 20.0)])
        record = {"timestep": 2000, "eval/return": 2.0, "eval/success_rate": 0.5,
                  **{f"eval/{m}": r for m, r in zip(STAGE_METRICS, rates, strict=True)}}
        with open(run / "evaluations.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        runs.append(run)
    out = tmp_path / "stages.png"
    curves = plot_learning_curves(runs, out, per_stage=True)["ac_iqn"]
    assert out.stat().st_size > 0
    assert list(curves["timesteps"]) == [1000, 2000]
    np.testing.assert_allclose(curves["success_rate_stage0_mean"], [np.nan, 0.3])
    np.testing.assert_allclose(curves["success_rate_stage5_mean"], [np.nan, 0.2])
    np.testing.assert_allclose(curves["success_rate_stage5_stderr"][1], 0.2 / np.sqrt(2))


def test_one_evaluation_draws_markers_and_says_no_success(tmp_path: Path) -> None:
    """A run with a single evaluation still shows its point; a travel-time panel with no
    successful episode says so."""
    from marinenav.viz.curves import aggregate, draw_learning_curves, load_runs

    run = write_run(tmp_path / "one", "dqn", [(1000, 1.5, 0.0, None)])
    fig = Figure()
    FigureCanvasAgg(fig)
    axes = draw_learning_curves(fig, aggregate(load_runs([run])))
    line = axes[0].get_lines()[0]
    assert line.get_marker() == "o" and list(line.get_xdata()) == [1000]
    assert [t.get_text() for t in axes[2].texts] == ["no successful episode"]
    assert len(axes[2].get_yticks()) == 0  # no meaningless scale without a travel time


def test_per_stage_curves_draw_only_the_stages_a_run_had(tmp_path: Path) -> None:
    """A one-stage run (curriculum=stage0 records stage 0 only) draws one stage panel,
    not six with five empty; records without stage rates draw one panel saying so."""
    from marinenav.viz.curves import aggregate, draw_stage_curves, load_runs

    run = tmp_path / "stage0"
    write_run(run, "dqn", [])
    records = [{"timestep": t, "eval/return": 1.0, "eval/success_rate": rate,
                "eval/success_rate_stage0": rate}
               for t, rate in ((80, 0.0), (160, 0.5))]  # fmt: skip
    (run / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fig = Figure()
    FigureCanvasAgg(fig)
    axes = draw_stage_curves(fig, aggregate(load_runs([run])))
    assert [ax.get_title() for ax in axes] == ["Stage 0 success"]
    np.testing.assert_allclose(axes[0].get_lines()[0].get_ydata(), [0.0, 0.5])
    out = tmp_path / "stages.png"
    plot_learning_curves([run], out, per_stage=True)
    with Image.open(out) as image:
        assert image.size == (600, 350)  # one panel: a narrower figure

    bare = write_run(tmp_path / "bare", "dqn", [(80, 1.0, 0.0, None)])
    fig = Figure()
    FigureCanvasAgg(fig)
    axes = draw_stage_curves(fig, aggregate(load_runs([bare])))
    assert [t.get_text() for t in axes[0].texts] == [
        "no per-stage success rates in these evaluations"]  # fmt: skip
