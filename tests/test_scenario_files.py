"""Bad scenario input gets one clear error naming the file, episode and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marinenav.envs import MarineNavEnv
from marinenav.evaluate import main
from marinenav.sim import MarineNavSimulator, load_scenario_file
from marinenav.training.evaluation import named_scenarios


def test_scenario_file_errors_name_the_file(tmp_path: Path) -> None:
    good = named_scenarios("paper")[:2]
    truncated = tmp_path / "truncated.json"
    truncated.write_text(json.dumps(good)[:500])
    with pytest.raises(ValueError, match=r"truncated\.json: not a JSON scenario file"):
        load_scenario_file(truncated)
    empty_parts = tmp_path / "empty.json"
    empty_parts.write_text(json.dumps([{"env": {}, "robots": {}}]))
    with pytest.raises(ValueError, match=r"empty\.json: episode 0: missing key env\.num_robots"):
        load_scenario_file(empty_parts)
    no_obstacles = tmp_path / "no_obstacles.json"
    broken = json.loads(json.dumps(good))
    del broken[1]["env"]["obstacles"]
    no_obstacles.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="episode 1: missing key env.obstacles.positions"):
        load_scenario_file(no_obstacles)
    not_a_dict = tmp_path / "not_a_dict.json"
    not_a_dict.write_text(json.dumps([good[0], 3]))
    with pytest.raises(ValueError, match=r"episode 1: not an episode dict, got int$"):
        load_scenario_file(not_a_dict)
    single = tmp_path / "single.json"
    single.write_text(json.dumps(good[0]))
    assert load_scenario_file(single) == [good[0]]  # one episode dict is a set of one
    with pytest.raises(FileNotFoundError, match="no scenario file"):
        load_scenario_file(tmp_path / "missing.json")


def test_evaluate_reports_a_bad_scenario_file_in_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    planner = Path(__file__).parent / "data/pretrained/traced_DQN_model.pt"
    assert main(["--planner", str(planner), "--scenarios", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0]


def test_constructor_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="got one dict"):
        MarineNavSimulator.from_scenarios(named_scenarios("paper")[0])
    with pytest.raises(ValueError, match="num_robots must be a positive int, got 0"):
        MarineNavEnv(num_envs=2, num_robots=0)


def _set_obstacle_radius(episode: dict, j: int, r: float) -> None:
    episode["env"]["obstacles"]["r"][j] = r


def _goal_near_start(episode: dict, k: int, dx: float) -> None:
    x, y = episode["robots"]["start"][k]
    episode["robots"]["goal"][k] = [x + dx, y]


def _start_near_obstacle(episode: dict, k: int, j: int, dx: float) -> None:
    x, y = episode["env"]["obstacles"]["positions"][j]
    episode["robots"]["start"][k] = [x + dx, y]


def _start_near_robot(episode: dict, k: int, j: int, dy: float) -> None:
    x, y = episode["robots"]["start"][j]
    episode["robots"]["start"][k] = [x, y + dy]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda e: _set_obstacle_radius(e, 1, 0.0), "env.obstacles.r[1] must be positive, got 0.0"),
        (lambda e: _set_obstacle_radius(e, 0, -1.0),
         "env.obstacles.r[0] must be positive, got -1.0"),
        (lambda e: _goal_near_start(e, 2, 0.0),
         "robots.goal[2] is 0 m from robots.start[2], within robots.goal_dis[2] = 2 m: the robot "
         "starts at its goal"),
        (lambda e: _goal_near_start(e, 2, 1.5),
         "robots.goal[2] is 1.5 m from robots.start[2], within robots.goal_dis[2] = 2 m: the "
         "robot starts at its goal"),
        (lambda e: _start_near_obstacle(e, 3, 1, 3.0),
         "robots.start[3] is 3 m from env.obstacles.positions[1], within robots.r[3] + "
         "env.obstacles.r[1] = 3.8 m: the robot starts in collision"),
        (lambda e: _start_near_robot(e, 4, 1, 5.0),
         "robots.start[4] is 5 m from robots.start[1], within robots.r[1] + robots.r[4] = "
         "5.59 m: the robots start in collision"),
    ],
)  # fmt: skip
def test_impossible_placements_are_refused_naming_file_episode_and_key(
    edit, message: str, tmp_path: Path, capsys
) -> None:
    """Obstacles of no size, robots that start at their goal or in collision (the goal and
    collision tests): refused by the file loader, the evaluator's command line (nothing written)
    and the simulator's scenario dicts alike."""
    paper = named_scenarios("paper")
    episodes = [paper[0], paper[30]]  # episode 1: 5 robots, 2 obstacles of radius 1 m
    MarineNavSimulator.from_scenarios(episodes)  # as generated, they load
    edit(episodes[1])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(episodes))
    with pytest.raises(ValueError) as error:
        load_scenario_file(bad)
    assert str(error.value) == f"{bad}: episode 1: {message}"
    out = tmp_path / "metrics.json"
    planner = Path(__file__).parent / "data/pretrained/traced_DQN_model.pt"
    assert main(["--planner", str(planner), "--scenarios", str(bad), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {bad}: episode 1: {message}\n"
    assert not out.exists()
    with pytest.raises(ValueError) as error:
        MarineNavSimulator.from_scenarios([episodes[1]])
    assert str(error.value) == f"scenario 0: {message}"


def test_the_simulator_reads_slot_counts_as_the_file_loader_does() -> None:
    """``MarineNavSimulator.from_scenarios`` counts its slots with the loader's checked count
    (``slots_needed``): a dict without its counts is refused naming it, in the loader's words."""
    good = named_scenarios("paper")[:2]
    no_cores = json.loads(json.dumps(good))
    del no_cores[1]["env"]["cores"]
    cases = [
        ([good[0], 3], "scenario 1: not an episode dict, got int$"),
        (no_cores, "scenario 1: missing key env.cores.positions$"),
        ([good[0], {"env": {}, "robots": {}}], "scenario 1: missing key env.num_robots$"),
    ]
    for scenarios, message in cases:
        with pytest.raises(ValueError, match=message):
            MarineNavSimulator.from_scenarios(scenarios)
    sim = MarineNavSimulator.from_scenarios(good, core_slots=3)
    want = (max(d["env"]["num_robots"] for d in good),
            max(len(d["env"]["obstacles"]["positions"]) for d in good), 3)  # fmt: skip
    assert (sim.robot_slots, sim.obstacle_slots, sim.core_slots) == want
