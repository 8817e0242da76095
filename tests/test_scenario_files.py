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
