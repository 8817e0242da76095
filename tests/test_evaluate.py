"""The evaluate entry point on a tiny trained run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from marinenav.agents import make_agent
from marinenav.evaluate import act_at_cvar, evaluate_run, format_table, main
from marinenav.training.trainer import Trainer
from tests.run_utils import head_commit, python_program, tiny_config


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("run")
    Trainer(tiny_config("agent=dqn", "evaluation.max_steps=30"), path).train()
    return path


@pytest.fixture(scope="module")
def named_run_dir(tmp_path_factory) -> Path:
    """A tiny run that validated on the named paper set: 60 episodes of the paper's curriculum
    although it trains on one stage, noise seeded with the set's 253 although ``evaluation.seed``
    says 7, 12 steps each (the tiny config's step cap)."""
    path = tmp_path_factory.mktemp("named_run")
    Trainer(tiny_config("agent=dqn", "evaluation.set=paper", "evaluation.seed=7"), path).train()
    return path


def last_evaluation(run_dir: Path) -> dict:
    return json.loads((run_dir / "evaluations.jsonl").read_text().splitlines()[-1])


def assert_same_evaluation(metrics: dict, recorded: dict) -> None:
    """Every episode's numbers and every logged aggregate are equal, not close."""
    assert metrics["episodes"] == recorded["episodes"]
    assert {k: v for k, v in metrics.items() if k.startswith("eval/")} == {
        k: v for k, v in recorded.items() if k.startswith("eval/")
    }


def test_reproduces_the_trainers_last_evaluation(run_dir: Path) -> None:
    """``evaluate RUN_DIR`` runs the run's own set in the run's own conditions, its step cap of
    30 included (it ran 1001 steps unless told): the run's last evaluation, episode for
    episode."""
    metrics, evaluation_set = evaluate_run(run_dir)
    assert len(evaluation_set) == 2 and evaluation_set.max_steps == 30
    assert evaluation_set.label == "the run's own evaluation set (random, 2 episodes)"
    assert_same_evaluation(metrics, last_evaluation(run_dir))
    table = format_table(metrics)
    assert "success_rate" in table and "| episodes | 2 |" in table


def test_reproduces_a_run_that_validated_on_a_named_set(
    named_run_dir: Path, tmp_path: Path, capsys
) -> None:
    """``evaluate RUN_DIR --set paper`` of a run that validated on the paper set draws the set
    the run drew, in the run's conditions and with the noise seed the run used (the set's 253;
    it read evaluation.seed, 7, and drew the paper curriculum's 60 episodes where the trainer
    drew its own curriculum's 10): the run's last evaluation, episode for episode, as
    ``evaluate RUN_DIR`` gives it from the recorded set."""
    last = last_evaluation(named_run_dir)
    assert len(last["episodes"]["success"]) == 60
    named, named_set = evaluate_run(named_run_dir, "paper")
    own, own_set = evaluate_run(named_run_dir)
    assert named_set.scenarios == own_set.scenarios
    for chosen in (named_set, own_set):
        assert (chosen.noise_seed, chosen.max_steps, chosen.episodes_per_stage) == (253, 12, 10)
    assert_same_evaluation(named, last)
    assert_same_evaluation(own, last)
    out = tmp_path / "paper.json"
    assert main([str(named_run_dir), "--set", "paper", "--out", str(out)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "marinenav: evaluated on the paper set of the random layout (60 episodes)"
    )
    assert_same_evaluation(json.loads(out.read_text()), last)


def test_scenario_files_in_the_original_layout(run_dir: Path, tmp_path: Path) -> None:
    scenarios = json.loads((run_dir / "eval_configs.json").read_text())
    single = tmp_path / "one.json"
    single.write_text(json.dumps(scenarios[1]))  # one episode dict
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(scenarios))  # an eval_configs.json list
    metrics, used = evaluate_run(run_dir, scenario_files=[single, listed])
    assert len(used) == 3 and len(metrics["episodes"]["success"]) == 3
    assert used.scenarios[0] == scenarios[1] and list(used.scenarios[1:]) == scenarios
    assert used.episodes_per_stage is None and used.max_steps == 30  # the run's step cap
    # the list file is the run's own set: the same episodes, the same numbers
    from_file, _ = evaluate_run(run_dir, scenario_files=[listed])
    whole, _ = evaluate_run(run_dir)
    assert from_file["episodes"] == whole["episodes"]


def test_command_line(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "metrics.json"
    done = python_program("-m marinenav.evaluate", str(run_dir), "--max-steps", "30",
                          "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "| success_rate |" in done.stdout
    metrics = json.loads(out.read_text())
    assert metrics["episodes"]["success"] is not None
    # what evaluated it: this checkout's commit (or none), the device, the libraries
    assert metrics["evaluated_by"]["commit"] == head_commit()
    assert metrics["evaluated_by"]["device"] == "cpu"
    assert metrics["evaluated_by"]["torch"] == torch.__version__
    missing = python_program("-m marinenav.evaluate", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no checkpoint" in missing.stderr


def test_pictures_of_the_first_episode(run_dir: Path, tmp_path: Path) -> None:
    from marinenav.evaluate import main

    assert main([str(run_dir), "--max-steps", "8", "--pictures", "1",
                 "--pictures-dir", str(tmp_path)]) == 0  # fmt: skip
    frames = sorted((tmp_path / "episode_000").glob("*.png"))
    assert len(frames) >= 2 and (tmp_path / "episode_000.gif").stat().st_size > 1000


def test_cvar_makes_an_iqn_or_rainbow_run_act_on_the_lower_tail(run_dir: Path, capsys) -> None:
    """``--cvar`` on a run sets the level an IQN policy draws its fractions at, and a Rainbow
    policy's tail; other agents (here the DQN run) and levels outside (0, 1] are refused in one
    line, exit code 2."""
    for name in ("iqn", "rainbow"):
        agent = make_agent(name)
        act_at_cvar(agent, 0.25)
        assert float(agent.policy.cvar) == 0.25
        with pytest.raises(ValueError, match="must be in"):
            act_at_cvar(agent, 0.0)
    assert main([str(run_dir), "--cvar", "0.5", "--max-steps", "30"]) == 2
    assert "--cvar is for agents that act on a return distribution" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--pictures", "-1"], "argument --pictures: must be at least 0, got -1"),
        (["--max-steps", "0"], "argument --max-steps: must be at least 1, got 0"),
        (["--cvar", "0"], "argument --cvar: cvar must be in (0, 1], got 0.0"),
        (["--cvar", "nan"], "argument --cvar: cvar must be in (0, 1], got nan"),
        (["--seed", str(2**64)], f"argument --seed: the seed must be an integer in [0, 2**62], "
                                 f"got {2**64}"),
        (["--out", "{tmp}/a_file/metrics.json"],
         "--out {tmp}/a_file/metrics.json is under {tmp}/a_file, which is a file"),
        (["--out", "{tmp}"], "--out {tmp} is a directory, not a file"),
        (["--pictures", "1", "--pictures-dir", "{tmp}/a_file/pictures"],
         "--pictures-dir {tmp}/a_file/pictures/episode_000.gif is under {tmp}/a_file, which is "
         "a file"),
        (["--option", "perception_range=90"],
         "--option sets an option of --scenario LAYOUT; give the layout"),
        (["--scenario", "imazu", "--option", "perception_range"],
         "argument --option: an option is KEY=VALUE, got 'perception_range'"),
    ],
)  # fmt: skip
def test_arguments_that_would_fail_late_are_refused_before_any_work(
    run_dir: Path, tmp_path: Path, arguments: list[str], message: str, capsys, monkeypatch
) -> None:
    """``--out`` to a path that cannot be written failed after the whole evaluation
    with a traceback; ``--pictures -1`` drew episodes 0-18; ``--max-steps 0`` said "got -1"."""
    import marinenav.evaluate as evaluate_module

    (tmp_path / "a_file").write_text("")
    monkeypatch.setattr(evaluate_module, "evaluate_agent", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(SystemExit) as exited:
        main([str(run_dir), *(a.format(tmp=tmp_path) for a in arguments)])
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"python -m marinenav.evaluate: error: {message.format(tmp=tmp_path)}"


def test_a_layouts_options_set_its_evaluation_set(capsys, monkeypatch) -> None:
    """``--scenario imazu --option perception_range=90``: the 22 cases with the own ship's
    sensor at 90 m; an option the layout lacks, or a value it refuses, is one line, exit code
    2."""
    import marinenav.evaluate as evaluate_module

    class Chosen(Exception):
        pass

    def caught(policy, chosen):
        raise Chosen(chosen)

    monkeypatch.setattr(evaluate_module, "evaluate_planner", caught)
    planner = str(Path(__file__).parents[1] / "tests/data/pretrained/traced_AC_IQN_model.pt")
    with pytest.raises(Chosen) as evaluated:
        main(["--planner", planner, "--scenario", "imazu", "--option", "perception_range=90"])
    chosen = evaluated.value.args[0]
    assert [s["robots"]["perception"]["range"][:2] for s in chosen.scenarios] == [[90, 20]] * 22
    for option, message in (("sensor=90", "scenario 'imazu' has no option 'sensor'"),
                            ("perception_range=5", "scenario.perception_range must be in")):
        assert main(["--planner", planner, "--scenario", "imazu", "--option", option]) == 2
        assert message in capsys.readouterr().err


def test_pictures_of_a_planner_file_are_refused_not_skipped(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--planner", "any.pt", "--pictures", "2"])
    assert "--pictures draws runs and baselines; for a planner file use python -m marinenav.viz" \
        " episode --planner FILE" in capsys.readouterr().err


def test_ctrl_c_during_an_evaluation_is_one_line_and_writes_nothing(
    run_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    from marinenav.training.evaluation import Evaluator

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C in the middle of the evaluation

    monkeypatch.setattr(Evaluator, "run", interrupted)  # the forked program inherits it
    out = tmp_path / "metrics.json"
    result = python_program("-m marinenav.evaluate", str(run_dir), "--out", str(out))
    assert result.returncode == 130  # 128 + SIGINT
    assert result.stderr.strip().splitlines()[-1] == (
        "python -m marinenav.evaluate: interrupted; files written before are whole, nothing "
        "else was written"
    )
    assert "Traceback" not in result.stderr and not out.exists()


def test_a_torn_evaluation_set_is_one_line_naming_the_file(
    run_dir: Path, tmp_path: Path, capsys
) -> None:
    """A run's eval_configs.json cut short (by hand, or by a copy): the error named no file."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    (copy / "eval_configs.json").write_text('[{"env": ')
    assert main([str(copy), "--max-steps", "5"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: {copy / 'eval_configs.json'}: not a JSON scenario file (Expecting value: line 1 "
        "column 10 (char 9))"
    )


def test_an_evaluation_set_is_one_value_built_three_ways(tmp_path: Path) -> None:
    """A named set is one set whoever asks (of the random layout, the paper curriculum's
    whatever a layout's own curriculum), in the original's conditions unless given others; an
    episode alone keeps its set's conditions; scenario files have no stages; a set that cannot
    run is refused when it is made."""
    import torch

    from marinenav.scenarios import RandomLayout, make_layout
    from marinenav.sim.curriculum import CurriculumSchedule
    from marinenav.sim.scenario import Slots
    from marinenav.training.evaluation import EvaluationSet, named_scenarios

    paper = EvaluationSet.named("paper")
    assert (len(paper), paper.episodes_per_stage, paper.slots) == (60, 10, Slots(5, 4, 0))
    assert (paper.dtype, paper.noise_seed, paper.max_steps) == (torch.float64, 253, 1001)
    assert paper.scenarios == tuple(named_scenarios("paper"))
    one_stage = RandomLayout(schedule=CurriculumSchedule(
        timesteps=[0], num_robots=[2], num_cores=[0], num_obstacles=[0], min_start_goal_dis=[30.0]
    ))  # fmt: skip
    assert EvaluationSet.named("paper", one_stage).scenarios == paper.scenarios
    imazu = EvaluationSet.named("large", make_layout("imazu"))
    assert len(imazu) == 22 and imazu.label == (
        "imazu's fixed evaluation set (22 episodes; the named set 'large' does not apply to it)")
    with pytest.raises(ValueError, match="is of the random scenarios, not of 'harbour'"):
        EvaluationSet.named("currents4", make_layout("harbour"))
    last = paper.episode(-1)
    assert last.scenarios == paper.scenarios[-1:] and last.slots == paper.slots
    assert last.episodes_per_stage is None and last.noise_seed == 253
    path = tmp_path / "two.json"
    path.write_text(json.dumps(list(paper.scenarios[:2])))
    files = EvaluationSet.of_files([path], noise_seed=5, max_steps=40)
    assert files.scenarios == paper.scenarios[:2] and files.label == "2 episodes of scenario files"
    assert (files.episodes_per_stage, files.layout, files.noise_seed) == (None, None, 5)
    first = paper.scenarios[:1]  # stage 0: 3 robots, no obstacles
    assert EvaluationSet(first, slots=(1, 0, 0)).slots == Slots(3, 0, 0)  # grown to fit
    for bad, message in (({"scenarios": ()}, "no scenarios"),
                         ({"max_steps": 0}, "max_steps must be at least 1, got 0"),
                         ({"noise_seed": -1}, "the noise seed must be an integer")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            EvaluationSet(**{"scenarios": first, **bad})
