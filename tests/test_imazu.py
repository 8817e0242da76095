"""The Imazu encounter set (docs/scenarios.md, "The Imazu problem") and the COLREGs checks of
marinenav.encounters on hand-built tracks."""

from __future__ import annotations

import math
import re

import pytest
import torch

from marinenav.encounters import (
    GIVE_WAY,
    HEAD_ON,
    OVERTAKEN,
    OVERTAKING,
    RULES,
    STAND_ON,
    TURN_THRESHOLD,
    check_target,
    classify,
    episode_encounters,
    format_encounters,
)
from marinenav.scenarios import make_layout
from marinenav.scenarios.imazu import IMAZU_CASES
from marinenav.sim import MarineNavSimulator
from marinenav.sim.constants import InfoState
from marinenav.sim.scenario import default_scenario
from tests.track_utils import straight_legs

F64 = torch.float64


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))


def test_the_table_has_the_22_cases_with_their_target_counts(cases) -> None:
    counts = [len(IMAZU_CASES[k]) for k in range(1, 23)]
    assert counts == [1] * 4 + [2] * 8 + [3] * 10
    assert [s["env"]["num_robots"] - 1 for s in cases] == counts
    assert all(s["robots"]["role"][0] == "policy" for s in cases)
    assert all(set(s["robots"]["role"][1:]) == {"hold"} for s in cases)


def test_every_case_is_a_collision_course_with_every_target_at_once(cases) -> None:
    """Holding course and speed, every ship reaches the map's centre after distance / speed
    (45 m at 1.5 m/s: 30 s); the overtaken target starts 0.7 as fast and so 13.5 m ahead."""
    for k, s in enumerate(cases, start=1):
        robots = s["robots"]
        centre = torch.tensor([s["env"]["width"] / 2, s["env"]["height"] / 2], dtype=F64)
        start = torch.tensor(robots["start"], dtype=F64)
        velocity = torch.tensor(robots["init_velocity_r"], dtype=F64)[:, :2]
        torch.testing.assert_close(start + 30.0 * velocity, centre.expand_as(start))
        slow = [i + 1 for i, t in enumerate(IMAZU_CASES[k]) if len(t) > 1]
        for i in slow:
            assert float(torch.dist(start[i], start[0])) == pytest.approx(13.5), k
        headings = [math.degrees(h) for h in robots["init_theta"][1:]]
        table = [t[0] % 360.0 for t in IMAZU_CASES[k]]
        assert headings == pytest.approx(table), k


def test_holding_course_the_own_ship_collides_in_every_case(cases) -> None:
    layout = make_layout("imazu")
    sim = MarineNavSimulator.from_scenarios(cases, "continuous", dtype=F64, layout=layout)
    collided = torch.zeros(22, dtype=torch.bool)
    for _ in range(70):
        collided |= sim.step(torch.zeros(22, 4, 2, dtype=F64)).info[:, 0] == InfoState.COLLISION
    assert bool(collided.all())


@pytest.mark.parametrize(
    ("case", "encounters"),
    [(1, [HEAD_ON]), (2, [GIVE_WAY]), (3, [OVERTAKING]), (4, [STAND_ON]),
     (11, [STAND_ON, GIVE_WAY]), (13, [HEAD_ON, STAND_ON, STAND_ON])],
)  # fmt: skip
def test_the_cases_encounters_are_classified_from_the_start(cases, case, encounters) -> None:
    s = cases[case - 1]
    robots = s["robots"]
    pos = torch.tensor(robots["start"], dtype=F64)
    heading = torch.tensor(robots["init_theta"], dtype=F64)
    velocity = torch.tensor(robots["init_velocity_r"], dtype=F64)[:, :2]
    speed = torch.linalg.vector_norm(velocity, dim=-1)
    got = [classify(pos[0], heading[0], speed[0], pos[t], heading[t], speed[t])
           for t in range(1, len(pos))]  # fmt: skip
    assert got == encounters


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_every_pair_of_every_case_is_classified_at_once(cases, dtype) -> None:
    """``classify_pairs`` on the 22 cases' starts as one batch: the own ship's row names the
    encounters the table's cases are (as above), and a give-way target sees the own ship as
    one it stands on for, a head-on one as head-on (the pairs read from either side)."""
    from marinenav.encounters import ENCOUNTERS, classify_pairs
    from marinenav.sim.scenario_json import scenarios_from_dicts

    scenario = scenarios_from_dicts(cases, (4, 0, 0), dtype=dtype)
    speed = torch.linalg.vector_norm(scenario.init_velocity_r[..., :2], dim=-1)
    codes = classify_pairs(scenario.start, scenario.init_theta, speed)  # [22, 4, 4]
    assert codes.shape == (22, 4, 4) and codes.dtype == torch.int64
    named = lambda case, i, j: ENCOUNTERS[int(codes[case - 1, i, j])]  # noqa: E731
    assert [named(2, 0, 1), named(2, 1, 0)] == [GIVE_WAY, STAND_ON]
    assert [named(1, 0, 1), named(1, 1, 0)] == [HEAD_ON, HEAD_ON]
    assert [named(13, 0, t) for t in (1, 2, 3)] == [HEAD_ON, STAND_ON, STAND_ON]
    assert [named(11, 0, t) for t in (1, 2)] == [STAND_ON, GIVE_WAY]
    assert named(3, 0, 1) == OVERTAKING and named(3, 1, 0) == "overtaken"


def test_a_faster_target_from_astern_overtakes_the_own_ship() -> None:
    zero = torch.tensor(0.0, dtype=F64)
    own, target = torch.tensor([20.0, 0.0], dtype=F64), torch.tensor([5.0, 1.0], dtype=F64)
    assert classify(own, zero, torch.tensor(1.0), target, zero, torch.tensor(2.0)) == OVERTAKEN


# the own ship heads North (+x) from (0, 0); a head-on target comes South along y = 0
_TARGET_SOUTH = straight_legs([(60.0, 0.0), (0.0, 0.0)], 61)
_TARGET_WEST = straight_legs([(30.0, 30.0), (30.0, -30.0)], 61)  # crossing from starboard


def test_head_on_turning_to_starboard_and_passing_port_to_port_keeps_rule_14() -> None:
    own = straight_legs([(0.0, 0.0), (12.0, 0.0), (25.0, 10.0), (60.0, 10.0)], 61)
    check = check_target(*own, *_TARGET_SOUTH, contact=5.6, encounter=HEAD_ON)
    assert check.turned_starboard and check.port_to_port and check.passed
    assert 5.6 < check.closest < 10.0
    assert check.first_alteration > TURN_THRESHOLD and check.broken == []


def test_head_on_turning_to_port_breaks_rule_14() -> None:
    own = straight_legs([(0.0, 0.0), (15.0, 0.0), (30.0, -8.0), (60.0, -8.0)], 61)
    check = check_target(*own, *_TARGET_SOUTH, contact=5.6, encounter=HEAD_ON)
    assert check.turned_starboard is False and check.port_to_port is False
    assert check.passed is False
    assert check.first_alteration < -TURN_THRESHOLD  # the leg to (30, -8): 28 deg to port
    assert check.broken == ["turned to port", "passed starboard to starboard"]


def test_giving_way_by_passing_astern_keeps_rule_15_and_crossing_ahead_breaks_it() -> None:
    astern = straight_legs([(0.0, 0.0), (15.0, 0.0), (22.0, 12.0), (45.0, 20.0)], 61)
    check = check_target(*astern, *_TARGET_WEST, contact=5.6, encounter=GIVE_WAY)
    assert check.turned_starboard and check.astern and check.passed
    ahead = straight_legs([(0.0, 0.0), (60.0, 0.0)], 31)  # fast and straight: ahead of the target
    check = check_target(*ahead, *straight_legs([(30.0, 30.0), (30.0, -30.0)], 31), contact=5.6,
                         encounter=GIVE_WAY)  # fmt: skip
    assert check.turned_starboard is False and check.passed is False
    assert check.first_alteration is None and check.broken == ["held course", "passed ahead"]


def test_the_table_says_what_broke_a_rule() -> None:
    port = straight_legs([(0.0, 0.0), (15.0, 0.0), (30.0, -8.0), (60.0, -8.0)], 61)
    starboard = straight_legs([(0.0, 0.0), (12.0, 0.0), (25.0, 10.0), (60.0, 10.0)], 61)
    records = []
    for own in (port, starboard):
        check = check_target(*own, *_TARGET_SOUTH, contact=5.6, encounter=HEAD_ON)
        target = {**vars(check), "rule": RULES[HEAD_ON], "passed": check.passed,
                  "broken": check.broken}  # fmt: skip
        records.append({"targets": [target], "colregs_kept": check.passed,
                        "colregs_kept_sighted": check.passed_sighted})  # fmt: skip
    records.append({**records[1], "colregs_kept_sighted": None})  # written before the reading
    rows = format_encounters(records, [True] * 3, ["port", "starboard", "old"]).splitlines()[2:]
    assert "no (turned to port; passed starboard to starboard) | no | no |" in rows[0]
    assert rows[1].endswith(", yes | yes | yes |")
    assert rows[2].endswith(", yes | yes | - |")


# read from sighting: a head-on target coming South at 1 m per step from 55 m ahead, and own
# ships that sail legs of 5 steps from (0, 0) North: an opening over steps 10-20 (the target 35 m
# off when it begins), the target in sight from step 18 or 19, an answer from step 20
_TARGET_CLOSER = straight_legs([(55.0, 0.0), (-5.0, 0.0)], 61)


def _own(points: list[tuple[float, float]]) -> tuple[torch.Tensor, torch.Tensor]:
    """An own ship through ``(0, 0), (5, 0), (10, 0)`` and then ``points``, 5 steps a leg."""
    return straight_legs([(0.0, 0.0), (5.0, 0.0), (10.0, 0.0), *points], 61)


def test_a_blind_opening_to_port_then_an_answer_to_starboard_keeps_rule_14_read_from_sighting():
    own = _own([(15.0, -2.0), (20.0, -4.0)] + [(24.0 + 4 * i, 8.0) for i in range(8)])
    check = check_target(*own, *_TARGET_CLOSER, contact=5.6, encounter=HEAD_ON)
    distance = torch.linalg.vector_norm(_TARGET_CLOSER[0] - own[0], dim=-1)
    assert float(distance[10]) > 30.0  # the opening (22 deg to port) is made blind
    assert check.sighted_step == int((distance <= 20.0).nonzero()[0, 0]) == 18
    assert check.port_to_port and 6.6 < check.closest < 10.0
    assert check.first_alteration == pytest.approx(-21.8, abs=0.1) and check.passed is False
    assert check.broken == ["turned to port"]
    assert check.first_alteration_sighted > 60.0  # from the port course to the answer's
    assert check.turned_starboard_sighted and check.passed_sighted and check.broken_sighted == []


def test_a_blind_opening_to_starboard_then_an_answer_to_port_breaks_rule_14_read_from_sighting():
    own = _own([(15.0, 4.0), (20.0, 8.0)] + [(24.0 + 4 * i, 7.0) for i in range(8)])
    check = check_target(*own, *_TARGET_CLOSER, contact=5.6, encounter=HEAD_ON)
    assert check.sighted_step == 19 and check.port_to_port and check.passed
    assert check.first_alteration == pytest.approx(38.7, abs=0.1)
    assert check.first_alteration_sighted == pytest.approx(-52.7, abs=0.1)
    assert check.passed_sighted is False and check.broken_sighted == ["turned to port"]


def test_read_from_sighting_an_alteration_made_and_held_before_sighting_is_the_answer() -> None:
    held = _own([(15.0 + 5 * i, 4.0 + 4 * i) for i in range(10)])  # 39 deg to starboard, held
    check = check_target(*held, *_TARGET_CLOSER, contact=5.6, encounter=HEAD_ON)
    assert check.met and check.port_to_port and check.passed
    assert check.first_alteration_sighted == check.first_alteration == pytest.approx(38.7, abs=0.1)
    assert check.passed_sighted and check.broken_sighted == []
    undone = _own([(15.0, 4.0)] + [(20.0 + 5 * i, 4.0) for i in range(9)])  # back before sight
    check = check_target(*undone, *_TARGET_CLOSER, contact=5.6, encounter=HEAD_ON)
    assert check.sighted_step > 15 and check.turned_starboard and check.passed
    assert check.first_alteration_sighted is None and check.passed_sighted is False
    assert check.broken_sighted == ["held course"]


def test_a_target_in_range_from_the_start_reads_alike_both_ways() -> None:
    target = straight_legs([(18.0, 0.0), (-42.0, 0.0)], 61)  # head-on, 18 m off at the start
    for own in (
        straight_legs([(0.0, 0.0), (3.0, 0.0), (8.0, 5.0), (40.0, 5.0)], 61),
        straight_legs([(0.0, 0.0), (3.0, 0.0), (8.0, -5.0), (40.0, -5.0)], 61),
    ):
        check = check_target(*own, *target, contact=5.6, encounter=HEAD_ON)
        assert check.sighted_step == 0
        assert check.first_alteration_sighted == check.first_alteration
        assert check.passed_sighted == check.passed and check.broken_sighted == check.broken


def test_a_target_never_met_has_no_sighting_and_an_overtaking_no_turn_reading() -> None:
    own = straight_legs([(0.0, 0.0), (10.0, -30.0), (60.0, -30.0)], 61)
    check = check_target(*own, *_TARGET_SOUTH, contact=5.6, encounter=HEAD_ON)
    assert check.sighted_step is None and check.turned_starboard_sighted is None
    assert check.passed_sighted is None
    target = straight_legs([(10.0, 0.0), (40.0, 0.0)], 61)
    close = straight_legs([(0.0, 3.0), (60.0, 3.0)], 61)
    check = check_target(*close, *target, contact=5.6, encounter=OVERTAKING)
    assert check.first_alteration_sighted is None and check.turned_starboard_sighted is None
    assert check.passed_sighted is False and check.broken_sighted == ["came too close"]


def test_overtaking_must_keep_clear_of_contact_plus_the_margin() -> None:
    target = straight_legs([(10.0, 0.0), (40.0, 0.0)], 61)
    close = straight_legs([(0.0, 3.0), (60.0, 3.0)], 61)  # passes 3 m abeam: inside 5.6 + 1
    wide = straight_legs([(0.0, 8.0), (60.0, 8.0)], 61)
    too_close = check_target(*close, *target, contact=5.6, encounter=OVERTAKING)
    assert too_close.passed is False and too_close.broken == ["came too close"]
    assert check_target(*wide, *target, contact=5.6, encounter=OVERTAKING).passed is True


def test_a_target_never_within_perception_range_is_not_checked() -> None:
    own = straight_legs([(0.0, 0.0), (10.0, -30.0), (60.0, -30.0)], 61)  # a wide berth to port
    check = check_target(*own, *_TARGET_SOUTH, contact=5.6, encounter=HEAD_ON)
    assert check.closest > 20.0 and not check.met and check.passed is None


def test_episode_encounters_read_the_scenario_and_its_tracks(cases) -> None:
    s = cases[0]  # case 1: one head-on target
    own = straight_legs([(2.5, 47.5), (30.0, 47.5), (45.0, 55.0), (70.0, 55.0)], 61)
    target = straight_legs([(92.5, 47.5), (2.5, 47.5)], 61)
    pos = torch.stack((own[0], target[0]), dim=1)
    theta = torch.stack((own[1], target[1]), dim=1)
    (check,) = episode_encounters(s, pos, theta, steps=60)
    assert check.encounter == HEAD_ON and check.passed


@pytest.mark.parametrize(
    ("options", "message"),
    [({"distance": 30.0}, "scenario.distance must be in [33, 60] m"),
     ({"cases": [0]}, "Imazu case must be in 1..22"),
     ({"cases": []}, "scenario.cases is empty"),
     ({"speed": 5.0}, "scenario.speed must be in [0.5, 3] m/s"),
     ({"speed_jitter": 0.6}, "scenario.speed_jitter must be in [0, 0.5]"),
     ({"speed": 2.5, "speed_jitter": 0.3}, "(1 + scenario.speed_jitter) must be <= 3 m/s"),
     ({"perception_range": 10.0}, "scenario.perception_range must be in [20, 100] m"),
     ({"perception_range": 150.0}, "scenario.perception_range must be in [20, 100] m")],
)  # fmt: skip
def test_bad_imazu_options_are_refused(options, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make_layout("imazu", options)


@pytest.mark.parametrize("sensor", [20.0, 90.0])
def test_the_own_ships_perception_range_decides_which_targets_it_sees_from_the_start(sensor):
    """Case 16's three targets start 63.6 m (crossing) and 34.4 m (45 degrees) off: none is
    within the paper's 20 m, every one within 90 m; the targets' own sensors stay at 20 m."""
    layout = make_layout("imazu", {"perception_range": sensor})
    scenarios = layout.evaluation_scenarios(1, 253, (4, 0, 0))
    assert scenarios[15]["robots"]["perception"]["range"][:4] == [sensor, 20.0, 20.0, 20.0]
    sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
    seen = sim.reset().objects_mask[15, 0].sum()  # the own ship's objects in case 16
    assert int(seen) == (3 if sensor == 90.0 else 0)
    generator = torch.Generator().manual_seed(1)
    drawn = layout.generate(default_scenario(8, 4, 0, 0, dtype=F64), torch.tensor(0), generator)
    assert bool(drawn.perception_range[:, 0].eq(sensor).all())
    assert bool(drawn.perception_range[:, 1:].eq(20.0).all())


def test_training_draws_cases_and_turns_courses_within_the_jitter() -> None:
    layout = make_layout("imazu", {"cases": [1, 2], "course_jitter": 10.0})
    sim = MarineNavSimulator(64, "continuous", layout=layout, dtype=F64, seed=3)
    roles = sim.scenario.robot_role
    assert roles[:, 0].eq(0).all() and sim.scenario.robot_present[:, 2:].sum() == 0
    heading = sim.scenario.init_theta[:, 1]
    head_on = (heading - math.pi).abs() <= math.radians(10.0) + 1e-9
    crossing = (heading - 1.5 * math.pi).abs() <= math.radians(10.0) + 1e-9
    assert bool((head_on | crossing).all()) and bool(head_on.any()) and bool(crossing.any())


def _drawn(options: dict, n: int = 512, seed: int = 5):
    layout = make_layout("imazu", options)
    generator = torch.Generator().manual_seed(seed)
    return layout.generate(default_scenario(n, 4, 0, 0, dtype=F64), torch.tensor(0), generator)


def test_speed_jitter_scales_each_target_and_keeps_the_collision_course() -> None:
    drawn = _drawn({"speed_jitter": 0.4})
    plain = _drawn({})
    present = drawn.robot_present[:, 1:]
    speed = torch.linalg.vector_norm(drawn.init_velocity_r[:, 1:, :2], dim=-1)[present]
    table = torch.linalg.vector_norm(plain.init_velocity_r[:, 1:, :2], dim=-1)[present]
    ratio = speed / table  # the same cases are drawn: the speed draw comes after the others
    assert bool(ratio.ge(0.6 - 1e-9).all() and ratio.le(1.4 + 1e-9).all())
    assert float(ratio.min()) < 0.7 and float(ratio.max()) > 1.3
    assert torch.equal(drawn.init_theta, plain.init_theta)
    # every ship still reaches the centre at the same moment, 45 m / 1.5 m/s after the start
    centre = torch.stack((drawn.width, drawn.height), -1).unsqueeze(1) / 2  # [n, 1, 2]
    arrival = drawn.start + drawn.init_velocity_r[..., :2] * (45.0 / 1.5)
    on_course = drawn.robot_present[:, :4]
    assert torch.allclose(arrival[:, :4][on_course], centre.expand(-1, 4, -1)[on_course])
    # the map holds the farthest start: (1 + 0.4) * 45 m from the centre, 2.5 m to the edge
    assert torch.allclose(drawn.width, torch.full_like(drawn.width, 2 * (1.4 * 45.0 + 2.5)))
    reach = (drawn.start - centre).abs().amax(-1)[drawn.robot_present[:, :4]]
    assert float(reach.max()) <= 1.4 * 45.0 + 1e-9


def test_no_speed_jitter_draws_nothing_more() -> None:
    # the generator's stream, and so every later episode, is what it was before the option
    layout = make_layout("imazu", {"course_jitter": 10.0})
    generator = torch.Generator().manual_seed(9)
    layout.generate(default_scenario(8, 4, 0, 0, dtype=F64), torch.tensor(0), generator)
    replay = torch.Generator().manual_seed(9)
    torch.randint(22, (8,), generator=replay)
    torch.rand((8, 3), generator=replay, dtype=F64)
    assert torch.equal(torch.rand(4, generator=generator), torch.rand(4, generator=replay))


def test_the_layouts_timestep_penalty_is_its_episodes_reward_per_step() -> None:
    assert bool(_drawn({}).timestep_penalty.eq(-0.1).all())  # the paper's, by default
    drawn = _drawn({"timestep_penalty": -0.02}, n=8)
    assert bool(drawn.timestep_penalty.eq(-0.02).all())
    layout = make_layout("imazu", {"timestep_penalty": 0.0})
    evaluation = layout.evaluation_scenarios(1, 253, (4, 0, 0))
    assert {s["env"]["timestep_penalty"] for s in evaluation} == {0.0}
    # in a mixture only the Imazu part's episodes wait cheaper; the step reward reads it
    mix = make_layout("mix", {"parts": {
        "open": {"layout": "random", "weight": 1.0,
                 "options": {"timesteps": [0], "num_robots": [1], "num_cores": [0],
                             "num_obstacles": [0], "min_start_goal_dis": [30.0]}},
        "imazu": {"layout": "imazu", "weight": 1.0, "options": {"timestep_penalty": 0.0}},
    }})  # fmt: skip
    sim = MarineNavSimulator(64, "continuous", 4, 0, 0, layout=mix, dtype=F64, seed=2)
    part = sim.scenario.layout_part
    assert bool(part.eq(0).any() and part.eq(1).any())
    expected = torch.full((64,), -0.1, dtype=F64)
    expected[part == 1] = 0.0
    assert torch.equal(sim.scenario.timestep_penalty, expected)
    goal = sim.scenario.goal[:, 0]
    before = torch.linalg.vector_norm(sim.state.pos[:, 0] - goal, dim=-1)
    result = sim.step(torch.zeros(64, 4, 2, dtype=F64))
    after = torch.linalg.vector_norm(sim.state.pos[:, 0] - goal, dim=-1)
    # the own ship's progress term: the episode's penalty plus the distance made good
    torch.testing.assert_close(result.reward_terms[:, 0, 0], expected + before - after)


@pytest.mark.parametrize("value", [0.1, -1.5])
def test_a_positive_or_huge_timestep_penalty_is_refused(value) -> None:
    with pytest.raises(ValueError, match=re.escape("scenario.timestep_penalty must be in [-1, 0]")):
        make_layout("imazu", {"timestep_penalty": value})


def test_the_trainer_counts_the_colregs_kept_at_every_evaluation(tmp_path) -> None:
    """A run whose evaluation set holds encounter episodes (``scenario=imazu``) logs at every
    evaluation how many kept the COLREGs (``eval/colregs_kept``, and ``colregs`` in
    evaluations.jsonl without the per-target checks): the count and the successes that
    ``marinenav.evaluate`` gives the evaluated agent on the run's own set. A random-layout run
    logs none."""
    import json

    from marinenav.encounters import own_and_targets
    from marinenav.evaluate import evaluate_agent, format_table, run_evaluation_set
    from marinenav.training.checkpoint import load_agent
    from marinenav.training.trainer import Trainer
    from tests.run_utils import tiny_config

    run = tmp_path / "imazu"
    Trainer(tiny_config("agent=dqn", "scenario=imazu", "checkpoint.keep_evaluated=true"),
            run).train()  # fmt: skip
    scenarios = json.loads((run / "eval_configs.json").read_text())
    encounters = sum(own_and_targets(s) is not None for s in scenarios)
    assert encounters == len(scenarios) > 0
    lines = (run / "evaluations.jsonl").read_text().splitlines()
    evaluations = [json.loads(line) for line in lines]
    assert [e["timestep"] for e in evaluations] == [80, 160]
    for metrics in evaluations:
        assert metrics["colregs"]["episodes"] == encounters and "encounters" not in metrics
        assert metrics["eval/colregs_kept"] == metrics["colregs"]["kept"]
        assert metrics["eval/colregs_kept_sighted"] == metrics["colregs"]["kept_sighted"]
        assert 0 <= metrics["colregs"]["kept_sighted"] <= sum(metrics["episodes"]["success"])
        assert 0 <= metrics["colregs"]["kept"] <= sum(metrics["episodes"]["success"])
        agent, config = load_agent(run / "evaluated" / str(metrics["timestep"]))
        again = evaluate_agent(agent, run_evaluation_set(run, config))
        assert again["colregs"] == metrics["colregs"]
        kept, sighted, n = (again["colregs"][k] for k in ("kept", "kept_sighted", "episodes"))
        table = format_table(again)
        assert f"| colregs_kept | {kept} of {n} |" in table
        assert f"| colregs_kept_sighted | {sighted} of {n} |" in table
        assert "colregs" not in format_table({"episodes": again["episodes"]})
        assert again["episodes"]["success"] == metrics["episodes"]["success"]
        assert len(again["encounters"]) == len(scenarios)
    logged = (run / "logs" / "scalars" / "eval" / "colregs_kept.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in logged] == ["80", "160"]

    plain = tmp_path / "random"
    Trainer(tiny_config("agent=dqn"), plain).train()
    for line in (plain / "evaluations.jsonl").read_text().splitlines():
        assert "colregs" not in json.loads(line) and "eval/colregs_kept" not in json.loads(line)
    assert not (plain / "logs" / "scalars" / "eval" / "colregs_kept.csv").exists()


def test_the_trainers_count_is_the_evaluators_with_a_policy_that_keeps_some(tmp_path, monkeypatch):
    """The count the trainer logs is the evaluator's, on a policy that keeps the COLREGs in some
    cases and not in others (the textbook APF baseline acting for the run's agent, the full
    step cap): neither all nor none, and equal to the sum of ``marinenav.evaluate``'s
    per-episode records."""
    from marinenav.baselines import baseline_policy
    from marinenav.evaluate import evaluate_baseline
    from marinenav.training.trainer import Trainer
    from tests.run_utils import tiny_config

    trainer = Trainer(tiny_config("agent=dqn", "scenario=imazu", "evaluation.max_steps=1001"),
                      tmp_path)  # fmt: skip
    apf = baseline_policy("apf")
    monkeypatch.setattr(trainer.agent, "policy", apf)
    logged = trainer.evaluate()
    records = evaluate_baseline(apf, trainer.evaluator.evaluation_set)["encounters"]
    kept = sum(record["colregs_kept"] for record in records)
    assert logged["eval/colregs_kept"] == kept == logged["colregs"]["kept"]
    assert 0 < kept < len(records) == logged["colregs"]["episodes"]
