"""A layout owns its rules (docs/extending.md, "Give a layout rules of its own"): reward terms
and end conditions in the layout's file, reported per term in the env and the logs; the
harbour's close-quarters term and channel bounds as the worked example; a mixed layout applies
each part's rules to its own episodes only."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from marinenav.envs import MarineNavEnv
from marinenav.scenarios import make_layout
from marinenav.sim import MarineNavSimulator
from marinenav.sim.constants import InfoState
from marinenav.sim.scenario import default_scenario
from marinenav.sim.scenario_json import scenarios_from_dicts, scenarios_to_dicts
from marinenav.training.trainer import Trainer
from tests.run_utils import logged_scalars, tiny_config

F64 = torch.float64
RULES = {"close_quarters": 0.2, "stay_in_channel": True}


def _harbour_pair(first: list[float], second: list[float], heading: float = 0.0):
    """The harbour layout's rules on a hand-built scenario: two vessels, no boats."""
    s = default_scenario(1, 5, 6, 0, dtype=F64)
    s.robot_present[0, :2] = True
    s.start[0, 0] = torch.tensor(first, dtype=F64)
    s.start[0, 1] = torch.tensor(second, dtype=F64)
    s.goal[0, :2] = torch.tensor([50.0, 27.5], dtype=F64)
    s.init_theta[0, :2] = heading
    layout = make_layout("harbour", RULES)
    sim = MarineNavSimulator(1, "continuous", 5, 6, 0, layout=layout, dtype=F64)
    sim.load_scenarios(s)
    return sim


def test_the_harbours_rules_name_their_terms_after_the_papers() -> None:
    sim = _harbour_pair([10.0, 27.5], [10.0, 34.0])
    assert sim.reward_term_names == ("progress", "colregs", "terminal", "close_quarters")
    assert sim.end_conditions == ("aground",)
    assert make_layout("harbour").rules.term_names == ("progress", "colregs", "terminal")


def test_close_quarters_costs_weight_per_metre_inside_three_metres_of_clear_water() -> None:
    """Two hulls of radius 2.795 m, 6.5 m apart across the channel: 0.91 m of clear water,
    2.09 m inside the 3 m, so each pays 0.2 * 2.09 on the first step (they barely move)."""
    sim = _harbour_pair([10.0, 27.5], [10.0, 34.0])
    r = sim.step(torch.zeros(1, 5, 2, dtype=F64))
    apart = float(torch.dist(sim.state.pos[0, 0], sim.state.pos[0, 1]))
    gap = apart - 2 * float(sim.scenario.radius[0, 0])
    expected = -0.2 * (3.0 - gap)
    torch.testing.assert_close(r.reward_terms[0, :2, 3], torch.full((2,), expected, dtype=F64))
    torch.testing.assert_close(r.reward[0, :2], r.reward_terms[0, :2].sum(-1))
    far = _harbour_pair([10.0, 27.5], [10.0, 40.0])
    assert float(far.step(torch.zeros(1, 5, 2, dtype=F64)).reward_terms[0, 0, 3]) == 0.0


def test_a_hull_past_the_row_of_boats_runs_aground_as_a_collision() -> None:
    """A vessel heading across the +y row (12 m off the centre line) at full thrust ends its
    episode with the collision outcome and penalty; the env reports which end condition."""
    layout = make_layout("harbour", RULES)
    s = default_scenario(1, 5, 6, 0, dtype=F64)
    s.robot_present[0, :2] = True
    s.start[0, 0] = torch.tensor([10.0, 35.0], dtype=F64)  # 7.5 m off the centre line
    s.start[0, 1] = torch.tensor([40.0, 20.0], dtype=F64)
    s.goal[0, :2] = torch.tensor([[10.0, 53.0], [5.0, 20.0]], dtype=F64)
    s.init_theta[0, 0] = math.pi / 2  # East: toward the +y bank
    env = MarineNavEnv.from_scenarios(scenarios_to_dicts(s), action_kind="continuous", dtype=F64,
                                      layout=layout, robot_slots=5, obstacle_slots=6)  # fmt: skip
    td = env.reset()
    td["agents", "action"] = torch.ones(1, 5, 2, dtype=F64)
    for _ in range(40):
        out = env.step(td)["next"]
        if bool(out["agents", "failures"][0, 0, 0]):
            break
        td = out.set(("agents", "action"), td["agents", "action"])
    assert bool(out["agents", "failures"][0, 0, 0])
    assert int(out["agents", "info"][0, 0]) == InfoState.COLLISION
    assert float(out["agents", "reward_terms"][0, 0, 2]) == -5.0
    offset = abs(float(env.sim.state.pos[0, 0, 1]) - 27.5)
    assert offset + float(env.sim.scenario.radius[0, 0]) > 12.0


def _column(run_dir: Path, name: str) -> list[float]:
    return list(logged_scalars(run_dir, f"train/{name}").values())


def test_the_trainer_logs_the_layouts_terms_and_end_conditions(tmp_path: Path) -> None:
    """train/reward_close_quarters is logged beside the paper's terms and the terms still add
    up to the return; train/ended_aground counts the robots the channel bounds ended."""
    trainer = Trainer(tiny_config(
        "agent=dqn", "scenario=harbour", "scenario.close_quarters=0.2",
        "scenario.stay_in_channel=true", "training.total_timesteps=800", "evaluation.max_steps=4",
    ), tmp_path)  # fmt: skip
    trainer.train()
    logs = tmp_path / "logs" / "scalars" / "train"
    names = ("progress", "colregs", "terminal", "close_quarters")
    terms = [_column(tmp_path, f"reward_{name}") for name in names]
    returns = _column(tmp_path, "episode_return")
    finished = [k for k, value in enumerate(returns) if not math.isnan(value)]
    assert finished, "no episode ended in the tiny run"
    for k in finished:
        assert sum(term[k] for term in terms) == pytest.approx(returns[k], rel=1e-6, abs=1e-6)
    assert any(value < 0 for value in terms[3])  # vessels met at close quarters
    assert (logs / "ended_aground.csv").is_file()


MIX = {"parts": {
    "open": {"layout": "random", "weight": 1.0,
             "options": {"timesteps": [0], "num_robots": [3], "num_cores": [0],
                         "num_obstacles": [0], "min_start_goal_dis": [30.0]}},
    "harbour": {"layout": "harbour", "weight": 3.0, "options": RULES},
}}  # fmt: skip


def test_a_mix_draws_parts_by_weight_and_applies_each_parts_rules_to_its_own() -> None:
    layout = make_layout("mix", MIX)
    assert layout.rules.term_names[-1] == "harbour.close_quarters"
    sim = MarineNavSimulator(400, "continuous", 5, 6, 0, layout=layout, seed=0)
    part = sim.scenario.layout_part
    assert 0.68 < float((part == 1).double().mean()) < 0.82  # weight 3 of 4
    closest = torch.zeros(400, 5)
    for _ in range(30):
        r = sim.step(torch.zeros(400, 5, 2))
        closest = torch.minimum(closest, r.reward_terms[..., 3])
    assert bool((closest[part == 0] == 0).all())  # open water: no close-quarters term
    assert bool((closest[part == 1] < 0).any())
    dicts = scenarios_to_dicts(sim.scenario.index(torch.arange(4)))
    back = scenarios_from_dicts(dicts, (5, 6, 0))
    assert torch.equal(back.layout_part, part[:4])


def test_a_mixs_evaluation_set_is_each_parts_own_in_order() -> None:
    layout = make_layout("mix", MIX)
    scenarios = layout.evaluation_scenarios(3, 253, (5, 6, 0))
    assert [s["env"].get("layout_part", 0) for s in scenarios] == [0] * 3 + [1] * 3
    assert layout.episode_labels(scenarios)[3] == "harbour 3"


@pytest.mark.parametrize(
    ("parts", "message"),
    [({}, "scenario.parts is empty"),
     ({"a": {"layout": "mix"}}, "scenario.parts.a.layout cannot be 'mix'"),
     ({"a": {"layout": "harbour", "weight": 0}}, "scenario.parts.a.weight must be a positive"),
     ({"a": {"layout": "harbour", "wait": 1}}, "scenario.parts.a has no key 'wait'"),
     ({"a": {"layout": "harbour", "options": {"traffic": 9}}},
      "scenario.parts.a: scenario.traffic")],
)  # fmt: skip
def test_bad_mixes_are_refused_in_one_line(parts, message) -> None:
    with pytest.raises(ValueError, match=message):
        make_layout("mix", {"parts": parts})


def test_the_imazu_colregs_term_weighs_the_papers_turn_angle() -> None:
    """scenario.colregs_penalty adds -weight x the paper's turn angle where its COLREGs zones
    apply: with weight 0.5 the new column is five times the paper's (-0.1 per rad) column."""
    layout = make_layout("imazu", {"colregs_penalty": 0.5})
    scenarios = layout.evaluation_scenarios(1, 253, (4, 0, 0))
    sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
    applied = False
    for _ in range(40):
        r = sim.step(torch.zeros(22, 4, 2, dtype=F64))
        torch.testing.assert_close(r.reward_terms[..., 3], 5.0 * r.reward_terms[..., 1])
        applied |= bool((r.reward_terms[..., 3] < 0).any())
    assert applied  # the head-on and give-way zones were met
    assert make_layout("imazu").rules.term_names == ("progress", "colregs", "terminal")


def _two_vessels(own_heading: float, target_pos: tuple[float, float], target_heading: float):
    """An own ship at (0, 0) (world frame: x North, y East, headings clockwise from North) and
    one traffic vessel, as a scenario and the events after a step."""
    import math

    from marinenav.sim.constants import VesselRole
    from marinenav.sim.rules import StepEvents
    from marinenav.sim.scenario import default_scenario

    scenario = default_scenario(1, 2, 0, 0, dtype=F64)
    scenario.robot_present[:] = True
    scenario.robot_role[0, 1] = int(VesselRole.HOLD)
    pos = torch.tensor([[[0.0, 0.0], list(target_pos)]], dtype=F64)
    theta = torch.remainder(torch.tensor([[own_heading, target_heading]], dtype=F64), 2 * math.pi)
    flag = torch.zeros(1, 2, dtype=torch.bool)
    zero = torch.zeros(1, 2, dtype=F64)
    events = StepEvents(acted=~flag, deactivated=flag, goal_distance_before=zero,
                        goal_distance_after=zero, apply_colregs=flag, turn_angle=zero,
                        collision=flag, reach_goal=flag, timeout=torch.zeros(1, dtype=torch.bool),
                        pos=pos, theta=theta)  # fmt: skip
    return scenario, events


@pytest.mark.parametrize(
    ("case", "own_heading", "target_pos", "target_heading", "penalised"),
    [
        # a give-way crossing: target 10 m ahead and 10 m to starboard heading West (-y); the
        # own ship (heading North) lies ahead of its beam (on its bow): crossing ahead of it
        ("give way, ahead of its beam", 0.0, (10.0, 10.0), -1.5708, True),
        # the own ship has turned to starboard (East, +pi/2): the target now bears 45 deg to
        # port, so nothing to starboard
        ("give way, after a starboard turn", 1.5708, (10.0, 10.0), -1.5708, False),
        # the own ship passes astern: the target (heading West) is now ahead-left of its track
        # at (5, -3); the own ship, seen from the target's bow, lies abaft its beam
        ("give way, passing astern", 0.0, (5.0, -3.0), -1.5708, False),
        # head-on, the target 15 m dead ahead a hair to starboard: penalised until the own ship
        # turns it to port
        ("head-on, target just to starboard", 0.0, (15.0, 0.5), 3.1416, True),
        ("head-on, target to port", 0.0, (15.0, -0.5), 3.1416, False),
        # stand-on: the target on the port side
        ("stand on", 0.0, (10.0, -10.0), 1.5708, False),
        # a give-way geometry beyond 20 m is not yet an encounter
        ("give way, far", 0.0, (20.0, 20.0), -1.5708, False),
        # overtaking from astern: the own ship is behind the target's beam
        ("overtaking", 0.0, (8.0, 1.0), 0.0, False),
    ],
)
def test_the_cross_ahead_term_by_hand(case, own_heading, target_pos, target_heading, penalised):
    from marinenav.scenarios.imazu import cross_ahead_penalty

    scenario, events = _two_vessels(own_heading, target_pos, target_heading)
    got = cross_ahead_penalty(scenario, events, weight=0.2)
    assert got.shape == (1, 2) and got.dtype == F64
    assert got[0, 1] == 0.0  # the traffic vessel earns nothing
    assert got[0, 0] == (-0.2 if penalised else 0.0), case


def test_against_any_vessel_the_term_sees_policy_vessels_too() -> None:
    """The same give-way geometry with a policy-steered vessel to starboard: ``against="traffic"``
    ignores it, ``"any"`` penalises the vessel that has the other to starboard and ahead of
    its beam (vessel 0), not the one that sees it to port (vessel 1), and no vessel for
    itself."""
    from marinenav.scenarios.give_way import cross_ahead_penalty
    from marinenav.sim.constants import VesselRole

    scenario, events = _two_vessels(0.0, (10.0, 10.0), -1.5708)
    scenario.robot_role[0, 1] = int(VesselRole.POLICY)
    traffic = cross_ahead_penalty(scenario, events, weight=0.2, against="traffic")
    anyone = cross_ahead_penalty(scenario, events, weight=0.2, against="any")
    assert traffic.tolist() == [[0.0, 0.0]]
    assert anyone.tolist() == [[-0.2, 0.0]]
    # alone: nothing to give way to; at heading -1.8 rad its own bearing geometry (0 m away,
    # "direction" 0) would count as a vessel to starboard ahead of the beam
    scenario.robot_present[0, 1] = False
    events.theta[0, 0] = 2 * math.pi - 1.8
    assert cross_ahead_penalty(scenario, events, weight=0.2, against="any").tolist() == [[0, 0]]
    with pytest.raises(ValueError, match="against must be one of"):
        cross_ahead_penalty(scenario, events, weight=0.2, against="all")


def test_a_mixs_own_cross_ahead_term_acts_in_every_part() -> None:
    """``scenario.cross_ahead_penalty`` on a mix: one term ``cross_ahead`` after the parts' own,
    not gated by part: the give-way geometry earns the same penalty in either part."""
    from marinenav.sim.constants import VesselRole

    layout = make_layout("mix", {**MIX, "cross_ahead_penalty": 0.3})
    assert layout.rules.term_names[-2:] == ("harbour.close_quarters", "cross_ahead")
    assert "cross_ahead" not in make_layout("mix", MIX).rules.term_names
    scenario, events = _two_vessels(0.0, (10.0, 10.0), -1.5708)
    scenario.robot_role[0, 1] = int(VesselRole.POLICY)  # "any" is the mix's default
    term = layout.rules.reward_terms["cross_ahead"]
    for part in (0, 1):
        scenario.layout_part.fill_(part)
        assert term(scenario, events).tolist() == [[-0.3, 0.0]]
    traffic_only = make_layout("mix", {**MIX, "cross_ahead_penalty": 0.3,
                                       "cross_ahead_of": "traffic"})  # fmt: skip
    assert traffic_only.rules.reward_terms["cross_ahead"](scenario, events).tolist() == [[0, 0]]
    with pytest.raises(ValueError, match="scenario.cross_ahead_penalty must be >= 0"):
        make_layout("mix", {**MIX, "cross_ahead_penalty": -0.1})
    with pytest.raises(ValueError, match="scenario.cross_ahead_of must be one of"):
        make_layout("mix", {**MIX, "cross_ahead_of": "everyone"})


def test_the_cross_ahead_term_is_a_reported_term() -> None:
    layout = make_layout("imazu", {"cross_ahead_penalty": 0.2, "colregs_penalty": 0.5})
    assert layout.rules.term_names == ("progress", "colregs", "terminal", "colregs_imazu",
                                       "cross_ahead")  # fmt: skip
    scenarios = layout.evaluation_scenarios(1, 253, (4, 0, 0))
    sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
    seen = torch.zeros(22, dtype=torch.bool)
    for _ in range(60):  # straight on to the meeting point: the give-way cases cross ahead
        r = sim.step(torch.zeros(22, 4, 2, dtype=F64))
        assert set(r.reward_terms[..., 4].unique().tolist()) <= {0.0, -0.2}
        seen |= r.reward_terms[:, 0, 4] < 0
    assert seen[1] and not seen[3]  # case 2 (give way) is penalised, case 4 (stand on) not
    with pytest.raises(ValueError, match="scenario.cross_ahead_penalty must be >= 0"):
        make_layout("imazu", {"cross_ahead_penalty": -1.0})


def _crossing(own_before, own_after, target_pos, target_heading, own_heading=0.0):
    """Two vessels, the own ship moving from ``own_before`` to ``own_after`` (m, world) on one
    step, the target (traffic) still at ``target_pos`` on ``target_heading`` (rad)."""
    scenario, events = _two_vessels(own_heading, target_pos, target_heading)
    events.pos_before = events.pos.clone()
    events.pos_before[0, 0] = torch.tensor(own_before, dtype=F64)
    events.pos[0, 0] = torch.tensor(own_after, dtype=F64)
    events.theta_before = events.theta.clone()
    return scenario, events


@pytest.mark.parametrize(
    ("case", "own_before", "own_after", "target_pos", "target_heading", "penalised"),
    [
        # the target 10 m to the East heading West, its course line x = 5 (North): the own ship
        # (heading North) steps from 1 m South of that line to 1 m North of it, 10 m ahead of
        # the target's bow: from the target's port side to its starboard side
        ("give way, crossing ahead", (4.0, 0.0), (6.0, 0.0), (5.0, 10.0), -1.5708, True),
        # the same step 10 m behind the target (abaft its beam): passing astern
        ("give way, passing astern", (4.0, 20.0), (6.0, 20.0), (5.0, 10.0), -1.5708, False),
        # the step after the crossing: already on the starboard side, nothing more
        ("after the crossing", (6.0, 0.0), (8.0, 0.0), (5.0, 10.0), -1.5708, False),
        # stand-on: the target to the West heading East; crossing its bow takes the own ship
        # from its starboard side to its port side, which the rule does not ask it to avoid
        ("stand on, crossing ahead", (4.0, 0.0), (6.0, 0.0), (5.0, -10.0), 1.5708, False),
        # the crossing 25 m ahead of the target's bow: beyond the 20 m range
        ("give way, far ahead", (4.0, 0.0), (6.0, 0.0), (5.0, 25.0), -1.5708, False),
        # head-on, the target dead ahead heading South (its port side is East): a turn to port
        # from East of its course line to West of it crosses its bow; to starboard does not
        ("head-on, turn to port", (0.0, 0.5), (1.0, -0.5), (15.0, 0.0), 3.1416, True),
        ("head-on, turn to starboard", (0.0, -0.5), (1.0, 0.5), (15.0, 0.0), 3.1416, False),
    ],
)
def test_the_bow_crossing_event_by_hand(
    case, own_before, own_after, target_pos, target_heading, penalised
):
    from marinenav.scenarios.give_way import bow_crossing_penalty

    scenario, events = _crossing(own_before, own_after, target_pos, target_heading)
    got = bow_crossing_penalty(scenario, events, weight=5.0)
    assert got.shape == (1, 2) and got.dtype == F64
    assert got[0, 1] == 0.0  # the traffic vessel earns nothing
    assert got[0, 0] == (-5.0 if penalised else 0.0), case


def test_the_bow_crossing_event_whom_it_counts() -> None:
    """Against policy vessels only with ``against="any"``; not against a deactivated vessel, a
    vessel that did not act earns nothing, and it needs the positions before the step."""
    from marinenav.scenarios.give_way import bow_crossing_penalty
    from marinenav.sim.constants import VesselRole

    scenario, events = _crossing((4.0, 0.0), (6.0, 0.0), (5.0, 10.0), -1.5708)
    scenario.robot_role[0, 1] = int(VesselRole.POLICY)
    assert bow_crossing_penalty(scenario, events, 5.0, against="traffic").tolist() == [[0, 0]]
    assert bow_crossing_penalty(scenario, events, 5.0, against="any").tolist() == [[-5.0, 0]]
    events.deactivated[0, 1] = True  # the other vessel arrived before the step: not a target
    assert bow_crossing_penalty(scenario, events, 5.0).tolist() == [[0, 0]]
    events.deactivated[0, 1] = False
    events.acted[0, 0] = False
    assert bow_crossing_penalty(scenario, events, 5.0).tolist() == [[0, 0]]
    events.pos_before = None
    with pytest.raises(ValueError, match="needs events.pos_before"):
        bow_crossing_penalty(scenario, events, 5.0)


def test_a_mixs_bow_crossing_term_in_the_simulator() -> None:
    """The mix's ``bow_crossing_penalty`` as the term ``bow_crossing``: an Imazu part whose own
    ships speed up a little and hold on (they reach the meeting point first) cross the
    give-way target's bow once, 14 m ahead of it (case 2: -5 on one step), both give-way
    targets' bows in case 6 (-10), and a stand-on target's never (case 4)."""
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}}, "bow_crossing_penalty": 5.0,
           "cross_ahead_of": "traffic"}  # fmt: skip
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "bow_crossing"
    assert "bow_crossing" not in make_layout("mix", MIX).rules.term_names
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
    total = torch.zeros(22, dtype=F64)
    for step in range(60):  # half the thrust change for one step, then hold the thrust
        r = sim.step(torch.full((22, 4, 2), 0.5 if step == 0 else 0.0, dtype=F64))
        total += r.reward_terms[:, 0, -1]
    assert total[1] == -5.0 and total[5] == -10.0 and total[3] == 0.0
    with pytest.raises(ValueError, match="scenario.bow_crossing_penalty must be >= 0"):
        make_layout("mix", {**MIX, "bow_crossing_penalty": -1.0})


def test_the_bow_crossing_events_range() -> None:
    """``within`` sets how far from the crossed vessel the event counts: a crossing 25 m ahead
    of a give-way target costs nothing at the default 20 m and the weight at 30 m; a range
    that is not positive is refused."""
    from marinenav.scenarios.give_way import bow_crossing_penalty

    scenario, events = _crossing((4.0, 0.0), (6.0, 0.0), (5.0, 25.0), -1.5708)
    assert bow_crossing_penalty(scenario, events, 5.0).tolist() == [[0, 0]]
    assert bow_crossing_penalty(scenario, events, 5.0, within=30.0).tolist() == [[-5.0, 0]]
    with pytest.raises(ValueError, match="range must be > 0 m"):
        bow_crossing_penalty(scenario, events, 5.0, within=0.0)


def test_a_racing_own_ship_escapes_the_20_m_event_but_not_a_40_m_one() -> None:
    """Own ships that speed up for three steps and hold on reach the meeting point well before
    the targets and cross every give-way target's course line more than 20 m ahead of it (as
    trained navigators do, docs/results.md): the mix's event at its default range never fires;
    with ``bow_crossing_range=40`` it fires once per give-way target crossed (case 2: one,
    case 6: two, case 14: three) and never for a stand-on target (case 4) or an overtaken one
    (case 3), nor in case 13 (a head-on target passed port to port, two stand-on targets)."""
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    totals = {}
    for within in (20.0, 40.0):
        mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
               "bow_crossing_penalty": 5.0, "cross_ahead_of": "traffic",
               "bow_crossing_range": within}  # fmt: skip
        sim = MarineNavSimulator.from_scenarios(
            scenarios, "continuous", dtype=F64, layout=make_layout("mix", mix)
        )
        total = torch.zeros(22, dtype=F64)
        for step in range(60):
            r = sim.step(torch.full((22, 4, 2), 1.0 if step < 3 else 0.0, dtype=F64))
            total += r.reward_terms[:, 0, -1]
        totals[within] = total
    assert totals[20.0].eq(0).all()
    far = totals[40.0]
    assert (far[1], far[5], far[13]) == (-5.0, -10.0, -15.0)
    assert (far[3], far[2], far[12]) == (0.0, 0.0, 0.0)
    for bad in (0.0, -1.0, True):
        with pytest.raises(ValueError, match="scenario.bow_crossing_range must be > 0 m"):
            make_layout("mix", {**MIX, "bow_crossing_range": bad})


@pytest.mark.parametrize(
    ("case", "own_before", "own_after", "target_pos", "target_heading", "penalised"),
    [
        # the target 10 m to the East heading West: the own ship (heading North) is closest to
        # it on this step, 10 m ahead of its bow, with it on the starboard side
        ("give way, passed ahead", (4.0, 0.0), (6.0, 0.0), (5.0, 10.0), -1.5708, True),
        # the same step 10 m behind it: passed astern
        ("give way, passed astern", (4.0, 20.0), (6.0, 20.0), (5.0, 10.0), -1.5708, False),
        # a step that still closes the distance: the closest approach is still to come
        ("before the closest approach", (2.0, 0.0), (4.0, 0.0), (5.0, 10.0), -1.5708, False),
        # stand-on: the target to the West heading East, passed ahead of its beam but on the
        # own ship's port side
        ("stand on, passed ahead", (4.0, 0.0), (6.0, 0.0), (5.0, -10.0), 1.5708, False),
        # 25 m ahead of its bow: farther than the 20 m the checks count as met
        ("give way, far ahead", (4.0, 0.0), (6.0, 0.0), (5.0, 25.0), -1.5708, False),
    ],
)
def test_the_passed_ahead_event_by_hand(
    case, own_before, own_after, target_pos, target_heading, penalised
):
    from marinenav.scenarios.give_way import passed_ahead_penalty

    scenario, events = _crossing(own_before, own_after, target_pos, target_heading)
    got = passed_ahead_penalty(scenario, events, weight=5.0)
    assert got.shape == (1, 2) and got.dtype == F64
    assert got[0, 1] == 0.0  # the traffic vessel earns nothing
    assert got[0, 0] == (-5.0 if penalised else 0.0), case
    events.pos_before = None
    with pytest.raises(ValueError, match="needs events.pos_before"):
        passed_ahead_penalty(scenario, events, 5.0)


def _checked_passes_ahead(scenarios, pos, theta, end) -> torch.Tensor:
    """``[E]``: per episode, the targets the rule-15 check (:mod:`marinenav.encounters`, read
    from the recorded tracks ``pos [T, E, R, 2]``, ``theta [T, E, R]``, each episode's first
    ``end[e] + 1`` rows) finds met and passed ahead."""
    from marinenav.encounters import episode_encounters

    return torch.tensor([
        sum(c.met and c.astern is False for c in episode_encounters(s, pos[:, e], theta[:, e],
                                                                    int(end[e])))
        for e, s in enumerate(scenarios)
    ], dtype=F64)  # fmt: skip


def test_the_passed_ahead_event_agrees_with_the_colregs_check() -> None:
    """Own ships that speed up a little for three steps and hold on through the 22 Imazu cases
    (the mix's ``passed_ahead_penalty`` as the term ``passed_ahead``): per case, the term
    fires once for every target the rule-15 check (``marinenav.encounters``, an independent
    reading of the recorded tracks) finds passed ahead, in 9 of the 22 cases (12 targets),
    and never elsewhere; a weight below 0 is refused."""

    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
           "passed_ahead_penalty": 1.0, "cross_ahead_of": "traffic"}  # fmt: skip
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "passed_ahead"
    sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
    total = torch.zeros(22, dtype=F64)
    pos, theta = [sim.state.pos.clone()], [sim.state.theta.clone()]
    end = torch.full((22,), 80)
    for step in range(80):
        r = sim.step(torch.full((22, 4, 2), 0.5 if step < 3 else 0.0, dtype=F64))
        total += r.reward_terms[:, 0, -1]
        pos.append(sim.state.pos.clone())
        theta.append(sim.state.theta.clone())
        ended = (r.info[:, 0] == InfoState.COLLISION) | (r.info[:, 0] == InfoState.REACH_GOAL)
        end = torch.where(ended & (end == 80), step + 1, end)
    pos, theta = torch.stack(pos), torch.stack(theta)
    passed_ahead = _checked_passes_ahead(scenarios, pos, theta, end)
    assert int(passed_ahead.gt(0).sum()) == 9 and int(passed_ahead.sum()) == 12
    assert torch.equal(-total, passed_ahead)
    with pytest.raises(ValueError, match="scenario.passed_ahead_penalty must be >= 0"):
        make_layout("mix", {**MIX, "passed_ahead_penalty": -1.0})


def _along_tracks(points, term, steps=61):
    """``term`` (a give-way rule with its weight) summed over the own ship's hand-built track
    through ``points`` (``straight_legs``) while a traffic vessel crosses from its
    starboard side (from (30, 30) West to (30, -30), 1 m per step), the events built as the
    simulator builds them (the closest approach kept with ``sim.approach``); with the lowest
    the running sum went and the rule-15 check's reading of the same tracks."""
    from marinenav.encounters import GIVE_WAY, check_target
    from marinenav.sim.approach import approach_now, closer
    from tests.track_utils import straight_legs

    own, own_heading = straight_legs(points, steps)
    target, target_heading = straight_legs([(30.0, 30.0), (30.0, -30.0)], steps)
    pos = torch.stack([own, target], dim=1).unsqueeze(1)  # [T, 1, 2, 2]
    theta = torch.stack([own_heading, target_heading], dim=1).unsqueeze(1)  # [T, 1, 2]
    scenario, events = _two_vessels(float(own_heading[0]), (30.0, 30.0), float(target_heading[0]))
    scenario.start.copy_(pos[0])
    scenario.init_theta.copy_(theta[0])
    scenario.init_velocity_r[0, :, 0] = torch.tensor([1.0, 0.0], dtype=F64)  # m/s, North
    made_good = torch.linalg.vector_norm(pos[1:] - pos[:-1], dim=-1)  # [T - 1, 1, 2] m a step
    speed = torch.cat([made_good[:1], made_good])  # [T, 1, 2], the first leg's at the start
    kept, total = approach_now(pos[0], theta[0], speed[0]), torch.zeros(1, 2, dtype=F64)
    lowest = total.clone()
    for t in range(1, steps):
        events.pos_before, events.pos = pos[t - 1], pos[t]
        events.theta_before, events.theta = theta[t - 1], theta[t]
        events.first_step = torch.tensor([t == 1])
        events.closest_before = kept
        events.closest = kept = closer(kept, approach_now(pos[t], theta[t], speed[t]))
        total += term(scenario, events)
        lowest = torch.minimum(lowest, total)
    check = check_target(own, own_heading, target, target_heading, 2.0, GIVE_WAY)
    return total, lowest, check


@pytest.mark.parametrize(
    ("case", "points", "broken"),
    [
        # the own ship (heading 347) crosses the target's course line 10 m ahead of its bow and
        # turns to port (to 253) as the target comes on astern of it: at the closest approach
        # (8.6 m, step 37) the target is on its port quarter (bearing 208) and the own ship
        # still ahead of the target's beam (11 deg on its bow)
        ("crossed ahead, turned away", [(0.0, 0.0), (34.0, -8.0), (24.0, -40.0)], True),
        # the own ship holds on at two thirds of the target's speed and turns to starboard
        # (39 deg) 10 m from it: it passes astern (9.0 m at step 32)
        ("turned to starboard, passed astern", [(0.0, 0.0), (20.0, 0.0), (45.0, 20.0)], False),
    ],
)
def test_the_give_way_check_term_on_hand_built_tracks(case, points, broken) -> None:
    """The give-way check term charges what the rule-15 check breaks on the same tracks,
    a crossing ahead followed by a turn away included, which the passed-ahead term (the target
    to starboard at the closest approach) does not charge; on the way to a pass astern it
    charges while the closest approach so far is ahead of the target's beam and pays it back."""
    from functools import partial

    from marinenav.scenarios.give_way import give_way_check_penalty, passed_ahead_penalty

    total, lowest, check = _along_tracks(points, partial(give_way_check_penalty, weight=5.0))
    assert check.met and check.astern is (not broken), case
    assert total[0, 0] == (-5.0 if broken else 0.0) and total[0, 1] == 0.0, case
    assert lowest[0, 0] == -5.0, case  # charged once on the way, never twice
    passed, _, _ = _along_tracks(points, partial(passed_ahead_penalty, weight=5.0))
    assert passed.eq(0).all(), case  # the other term reads the target to port: no charge


@pytest.mark.parametrize(
    ("case", "points", "charged_from_start", "charged_in_range"),
    [
        # the own ship heads away North-West (315) at 0.7 m a step with the target (1 m a step)
        # abeam to starboard: a give-way crossing at the start; the target comes up from abaft
        # its beam and is within 20 m at step 35, overtaking it; at the closest approach (8.6 m,
        # the last step) the own ship is still ahead of the target's beam
        ("ran before a target that came up astern", [(0.0, 0.0), (21.0, -21.0), (35.0, -37.0)],
         True, False),
        # heading East (84) the target is on the port side at the start (stand on); the own ship
        # turns to port (285) and meets it within 20 m at step 53 on its starboard side (give
        # way), passing ahead of it (18 m, the last step)
        ("turned to port into a give-way crossing", [(0.0, 0.0), (1.0, 9.0), (13.0, -36.0)],
         False, True),
    ],
)  # fmt: skip
def test_the_give_way_check_term_fixes_who_gives_way_at_the_start_or_where_met(
    case, points, charged_from_start, charged_in_range
) -> None:
    """By default the term fixes who gives way at the episode's start, as the check; with
    ``give_way_from="in_range"`` where the two first came within 20 m: a ship that a give-way
    target overtakes is not charged, one that turned into a give-way crossing is."""
    from functools import partial

    from marinenav.scenarios.give_way import give_way_check_penalty

    for give_way_from, charged in (("start", charged_from_start), ("in_range", charged_in_range)):
        term = partial(give_way_check_penalty, weight=5.0, give_way_from=give_way_from)
        total, _, check = _along_tracks(points, term)
        assert total[0, 0] == (-5.0 if charged else 0.0), (case, give_way_from)
    assert check.met and check.astern is False  # the check reads a pass ahead in both
    with pytest.raises(ValueError, match="give_way_from must be one of"):
        give_way_check_penalty(*_two_vessels(0.0, (30.0, 30.0), -1.5708), 1.0, "any", "met")
    with pytest.raises(ValueError, match="scenario.give_way_check_from must be one of"):
        make_layout("mix", {**MIX, "give_way_check_from": "met"})


def test_where_ships_hold_their_courses_until_they_meet_both_readings_are_the_checks() -> None:
    """Own ships that hold their courses at full ahead through the 22 Imazu cases meet every
    target as it started: the give-way check term charges the check's count per case whether it
    fixes who gives way at the start or where the two first came within 20 m."""
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    charged = {}
    for give_way_from in ("start", "in_range"):
        mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
               "give_way_check_penalty": 1.0, "give_way_check_from": give_way_from,
               "cross_ahead_of": "traffic"}  # fmt: skip
        run = _imazu_to_the_end(scenarios, mix, lambda step: torch.ones(22, 4, 2, dtype=F64))
        charged[give_way_from] = run["charged"]
    checked = _checked_passes_ahead(scenarios, run["pos"], run["theta"], run["end"])
    assert checked.sum() > 0
    assert torch.equal(charged["start"], checked) and torch.equal(charged["in_range"], checked)


def _alteration(ahead: int, turn: int, hand: float):
    """Continuous own-ship actions (left, right thrust change) for step ``s``: full ahead for
    ``ahead`` steps, a turn (``hand`` 1: to starboard, -1: to port) for ``turn`` steps, the
    opposite for as many, then hold (the thrusts stay as they are)."""

    def action(s: int) -> tuple[float, float]:
        if s < ahead:
            return (1.0, 1.0)
        if s < ahead + turn:
            return (-hand, hand)
        if s < ahead + 2 * turn:
            return (hand, -hand)
        return (0.0, 0.0)

    return action


def _own_ship_steers(action, dtype):
    """``step -> [22, 4, 2]`` actions: the own ship (slot 0) steered by ``action(step)``, the
    other slots' (traffic, which ignores them) 0."""

    def actions(step: int) -> torch.Tensor:
        out = torch.zeros(22, 4, 2, dtype=dtype)
        out[:, 0] = torch.tensor(action(step), dtype=dtype)
        return out

    return actions


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_the_give_way_check_term_sums_to_the_checks_count_whatever_the_own_ship_steers(dtype):
    """Own ships that gather way, turn either hand by different amounts and hold on (many of
    them circling back past their targets) through the 22 Imazu cases to their episodes' ends:
    per case the give-way check term sums to minus the targets the rule-15 check finds passed
    ahead of, in every steering, with refunds on the way (a closer approach astern overturning
    an earlier one); the passed-ahead term, which reads every closest approach of the step's
    motion with the target to starboard there, does not."""
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    refunded, other_term_differs = False, False
    for ahead, turn, hand in [(0, 2, 1.0), (4, 1, -1.0), (8, 3, 1.0), (12, 2, -1.0)]:
        actions = _own_ship_steers(_alteration(ahead, turn, hand), dtype)
        totals = {}
        for key in ("give_way_check_penalty", "passed_ahead_penalty"):
            mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
                   key: 1.0, "cross_ahead_of": "traffic"}  # fmt: skip
            run = _imazu_to_the_end(scenarios, mix, actions, dtype)
            totals[key] = run["charged"]
            refunded |= key == "give_way_check_penalty" and run["refunded"]
        pos, theta, end = run["pos"], run["theta"], run["end"]
        checked = _checked_passes_ahead(scenarios, pos, theta, end)
        assert checked.sum() > 0, (ahead, turn, hand)
        assert torch.equal(totals["give_way_check_penalty"], checked), (ahead, turn, hand)
        other_term_differs |= not torch.equal(totals["passed_ahead_penalty"], checked)
    assert refunded and other_term_differs
    # the simulator keeps the closest approaches only for rules that read them
    assert make_layout("mix", {**MIX, "give_way_check_penalty": 1.0}).rules.closest_approach
    assert not make_layout("mix", {**MIX, "passed_ahead_penalty": 1.0}).rules.closest_approach
    assert not make_layout("imazu").rules.closest_approach
    with pytest.raises(ValueError, match="scenario.give_way_check_penalty must be >= 0"):
        make_layout("mix", {**MIX, "give_way_check_penalty": -1.0})


def _imazu_to_the_end(scenarios, mix: dict, actions, dtype=F64) -> dict:
    """The 22 Imazu cases under the mixed layout ``mix`` (its last term the one watched), every
    vessel given ``actions(step)`` (traffic ignores it), to every episode's end (goal, collision
    or a step limit of 60): ``charged`` ``[22]`` minus the own ship's sum of the term,
    ``refunded`` whether it ever paid back, the tracks ``pos [T, 22, R, 2]``, ``theta [T, 22,
    R]`` (float64) and ``end`` ``[22]``, the step on which each own ship's episode ended."""
    sim = MarineNavSimulator.from_scenarios(
        scenarios, "continuous", dtype=dtype, layout=make_layout("mix", mix),
        max_episode_steps=60,
    )  # fmt: skip
    total, refunded = torch.zeros(22, dtype=F64), False
    pos, theta = [sim.state.pos.clone()], [sim.state.theta.clone()]
    end = torch.full((22,), 62)
    for step in range(61):
        r = sim.step(actions(step))
        paid = r.reward_terms[:, 0, -1].to(F64)
        total += paid
        refunded |= bool(paid.gt(0).any())
        pos.append(sim.state.pos.clone())
        theta.append(sim.state.theta.clone())
        end = torch.where(r.done[:, 0] & (end == 62), step + 1, end)
        if bool(r.env_done.all()):
            break
    return {"charged": -total, "refunded": refunded, "pos": torch.stack(pos).to(F64),
            "theta": torch.stack(theta).to(F64), "end": end}  # fmt: skip


def _boundary_events(own_velocity_before, own_velocity, first_step=False, ends=False):
    """The own ship (heading North) steps from (5, 0) to (7, -1) m, the target (traffic) 10 m
    to the East of its start heads West and stays put: the step's straight motion opens the
    distance from its start (its closest point is the start, 10 m ahead of the target's bow,
    with the target to starboard); the own ship's velocities (m/s, world) before and after the
    step say whether the distance closed into the step and closes out of it."""
    scenario, events = _crossing((5.0, 0.0), (7.0, -1.0), (5.0, 10.0), -1.5708)
    events.velocity_before = torch.tensor([[list(own_velocity_before), [0.0, 0.0]]], dtype=F64)
    events.velocity = torch.tensor([[list(own_velocity), [0.0, 0.0]]], dtype=F64)
    events.first_step = torch.tensor([first_step])
    events.reach_goal = torch.tensor([[ends, False]])
    return scenario, events


@pytest.mark.parametrize(
    ("case", "velocity_before", "velocity", "first_step", "ends", "charged"),
    [
        # closing into the step (toward the target, r0 . v0 < 0), opening out of it: the
        # closest approach is on the boundary, which no step's straight motion holds
        ("on the boundary", (1.0, 0.5), (1.0, -0.5), False, False, True),
        # already opening into the step: the closest approach was an earlier step's
        ("opening before the step", (1.0, -0.5), (1.0, -0.5), False, False, False),
        # the same on the episode's first step: the start is the closest approach
        ("opening from the start", (1.0, -0.5), (1.0, -0.5), True, False, True),
        # closing through the whole step: the closest approach is still to come
        ("closing on", (1.0, 0.5), (1.0, 0.5), False, False, False),
        # ... unless the own ship's episode ends on the step: its last place is the closest
        ("closing as the episode ends", (1.0, 0.5), (1.0, 0.5), False, True, True),
    ],
)
def test_the_passed_ahead_event_at_boundaries_by_hand(
    case, velocity_before, velocity, first_step, ends, charged
) -> None:
    from marinenav.scenarios.give_way import passed_ahead_penalty

    scenario, events = _boundary_events(velocity_before, velocity, first_step, ends)
    got = passed_ahead_penalty(scenario, events, weight=5.0, at_boundaries=True)
    assert got.shape == (1, 2) and got[0, 1] == 0.0
    assert float(got[0, 0]) == (-5.0 if charged else 0.0), case
    # by default none of these is a closest approach inside the step: nothing is charged
    assert passed_ahead_penalty(scenario, events, weight=5.0).eq(0).all(), case
    events.velocity = None
    with pytest.raises(ValueError, match=r"at_boundaries=True\) needs events.velocity"):
        passed_ahead_penalty(scenario, events, 5.0, at_boundaries=True)


@pytest.mark.parametrize(
    ("policy", "missed_by_default"),
    [
        # full ahead from the first step: the own ships gather way and leave the targets 10
        # degrees off their course (cases 6, 12 and 14) behind on a step boundary
        ("full ahead", 3),
        # astern for three steps, then steady: four more closest approaches on boundaries
        ("astern", 4),
        # steady from the start (course and thrust held): the step limit comes with every
        # target ahead of its beam still closing, its closest approach at the episode's end
        ("hold on", 18),
    ],
)
def test_the_passed_ahead_event_at_boundaries_agrees_with_the_colregs_check(
    policy, missed_by_default
) -> None:
    """Own ships run the 22 Imazu cases to their episodes' ends (goal, collision or a step limit
    of 60): with
    ``passed_ahead_at_boundaries`` the term fires once for every target the rule-15 check finds
    passed ahead (from the recorded tracks, every step and the start and the end included), in
    every case; by default it misses the closest approaches on step boundaries and at the ends
    of the episodes."""

    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    throttle = {"full ahead": lambda step: 1.0, "astern": lambda step: -1.0 if step < 3 else 0.0,
                "hold on": lambda step: 0.0}  # fmt: skip
    counted = {}
    for at_boundaries in (False, True):
        mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
               "passed_ahead_penalty": 1.0, "cross_ahead_of": "traffic",
               "passed_ahead_at_boundaries": at_boundaries}  # fmt: skip
        run = _imazu_to_the_end(
            scenarios, mix, lambda step: torch.full((22, 4, 2), throttle[policy](step), dtype=F64)
        )
        counted[at_boundaries] = run["charged"]
    pos, theta, end = run["pos"], run["theta"], run["end"]
    assert int(end.max()) <= 61  # every episode ended, at the latest at the step limit
    passed_ahead = _checked_passes_ahead(scenarios, pos, theta, end)
    assert torch.equal(counted[True], passed_ahead)
    assert int(passed_ahead.sum() - counted[False].sum()) == missed_by_default
    with pytest.raises(ValueError, match="scenario.passed_ahead_at_boundaries must be true or"):
        make_layout("mix", {**MIX, "passed_ahead_at_boundaries": 1})


@pytest.mark.parametrize(
    ("case", "own_before", "target_pos", "turn", "charged"),
    [
        # the own ship (heading North, now at the origin) came 1 m closer to a target 17 deg on
        # its starboard bow and turned 0.1 rad to port on the step
        ("to starboard, closing, turned to port", (-1.0, 0.0), (10.0, 3.0), -0.1, True),
        ("to starboard, closing, turned to starboard", (-1.0, 0.0), (10.0, 3.0), 0.1, False),
        # 6 deg on the port bow: head-on, a port turn is the wrong one
        ("dead ahead, closing, turned to port", (-1.0, 0.0), (10.0, -1.0), -0.1, True),
        # 27 deg on the port bow: a stand-on crossing, the rule asks nothing of the turn
        ("to port, closing, turned to port", (-1.0, 0.0), (10.0, -5.0), -0.1, False),
        ("to starboard, opening, turned to port", (1.0, 0.0), (10.0, 3.0), -0.1, False),
        ("to starboard, beyond 20 m, turned to port", (-1.0, 0.0), (30.0, 5.0), -0.1, False),
    ],
)
def test_the_port_turn_term_by_hand(case, own_before, target_pos, turn, charged) -> None:
    from marinenav.scenarios.give_way import port_turn_penalty

    scenario, events = _crossing(own_before, (0.0, 0.0), target_pos, 3.1416)
    events.theta_before[0, 0] = torch.remainder(events.theta[0, 0] - turn, 2 * math.pi)
    got = port_turn_penalty(scenario, events, weight=5.0)
    assert got.shape == (1, 2) and got[0, 1] == 0.0
    expected = -5.0 * 0.1 if charged else 0.0
    assert float(got[0, 0]) == pytest.approx(expected, abs=1e-12), case
    events.theta_before = None
    with pytest.raises(ValueError, match="needs events.pos_before and events.theta_before"):
        port_turn_penalty(scenario, events, 5.0)


def _helm_totals(layout) -> dict[str, torch.Tensor]:
    """Per helm ("port", "starboard"): the last reward term summed over 56 steps of the own
    ships in the 22 Imazu cases, holding on for 24 s, then two steps of that helm (one thrust
    down, the other up), then holding on again."""
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    totals = {}
    for helm in ("port", "starboard"):
        sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
        action = torch.zeros(22, 4, 2, dtype=F64)
        action[:, 0] = torch.tensor([-0.5, 0.5] if helm == "port" else [0.5, -0.5], dtype=F64)
        total = torch.zeros(22, dtype=F64)
        for step in range(56):
            r = sim.step(action if step in (48, 49) else torch.zeros_like(action))
            total += r.reward_terms[:, 0, -1]
        totals[helm] = total
    return totals


def test_a_mixs_port_turn_term_in_the_simulator() -> None:
    """The mix's ``port_turn_penalty`` as the term ``port_turn``: own ships that hold on for
    24 s and then put the helm to port (left thrust down, right up) in the Imazu cases pay per
    radian turned while a head-on or give-way target closes within 20 m (case 1, head-on, 18 m
    off then; case 2, crossing from starboard, 13 m), and nothing in case 4 (the one target
    crosses from port); turning to starboard costs nothing."""
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}}, "port_turn_penalty": 5.0,
           "cross_ahead_of": "traffic"}  # fmt: skip
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "port_turn"
    totals = _helm_totals(layout)
    assert totals["port"][0] < 0 and totals["port"][1] < 0 and totals["port"][3] == 0
    assert totals["starboard"].eq(0).all()
    with pytest.raises(ValueError, match="scenario.port_turn_penalty must be >= 0"):
        make_layout("mix", {**MIX, "port_turn_penalty": -1.0})


@pytest.mark.parametrize(
    ("case", "own_before", "target_pos", "target_heading", "charged"),
    [
        # the own ship (heading North, now at the origin) made 1.5 m good on the step towards a
        # target 17 deg on its starboard bow heading West, ahead of that target's beam
        ("to starboard, closing, ahead of its beam", (-1.5, 0.0), (10.0, 3.0), -1.5708, True),
        ("to starboard, opening", (1.5, 0.0), (10.0, 3.0), -1.5708, False),
        # the target heading North-West: the own ship is abaft its beam, astern of it
        ("to starboard, astern of it", (-1.5, 0.0), (10.0, 3.0), 0.3, False),
        # the target to port heading East: a stand-on crossing, nothing asked of the speed
        ("to port, closing", (-1.5, 0.0), (10.0, -3.0), 1.5708, False),
        ("to starboard, beyond 20 m", (-1.5, 0.0), (30.0, 5.0), -1.5708, False),
    ],
)
def test_the_give_way_speed_term_by_hand(case, own_before, target_pos, target_heading, charged):
    from marinenav.scenarios.give_way import give_way_speed_penalty

    scenario, events = _crossing(own_before, (0.0, 0.0), target_pos, target_heading)
    got = give_way_speed_penalty(scenario, events, weight=0.5)
    assert got.shape == (1, 2) and got[0, 1] == 0.0
    expected = -0.5 * 1.5 if charged else 0.0  # per metre made good
    assert float(got[0, 0]) == pytest.approx(expected, abs=1e-12), case
    events.pos_before = None
    with pytest.raises(ValueError, match="needs events.pos_before"):
        give_way_speed_penalty(scenario, events, 0.5)


def test_a_mixs_give_way_speed_term_in_the_simulator() -> None:
    """The mix's ``give_way_speed_penalty`` as the term ``give_way_speed``: in Imazu case 2
    (one target crossing from starboard) an own ship that holds course and speed (a collision
    course) pays for the way it makes once the target is within 20 m, one that stops its
    thrusters pays less, and one that races away at full thrust and is past before the target
    comes within 20 m pays nothing (the check reads no encounter there either); in case 4 (the
    target crosses from port) none pays."""
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
           "give_way_speed_penalty": 0.25, "cross_ahead_of": "traffic"}  # fmt: skip
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "give_way_speed"
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    totals = {}
    for helm, thrust in (("race", 1.0), ("hold", 0.0), ("stop", -1.0)):
        sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
        action = torch.zeros(22, 4, 2, dtype=F64)
        action[:, 0] = thrust  # both thrusters' change per step
        total = torch.zeros(22, dtype=F64)
        for _ in range(70):
            total += sim.step(action).reward_terms[:, 0, -1]
        totals[helm] = total
    assert totals["hold"][1] < totals["stop"][1] <= 0 and totals["race"][1] == 0
    # holding 1.5 m/s: 0.75 m a step for at most the 27 steps the target closes from 20 m
    assert -0.25 * 0.75 * 27 <= float(totals["hold"][1]) <= -0.25 * 5
    assert all(float(totals[helm][3]) == 0 for helm in totals)
    with pytest.raises(ValueError, match="scenario.give_way_speed_penalty must be >= 0"):
        make_layout("mix", {**MIX, "give_way_speed_penalty": -1.0})


@pytest.mark.parametrize(
    ("case", "own_before", "target_pos", "target_heading", "turn", "charged"),
    [
        # the own ship (heading North, now at the origin) came 1 m closer to a target 17 deg on
        # its port bow heading East: the target has it to starboard and is ahead of its beam,
        # so the target gives way and the own ship stands on
        ("stand on, closing, turned to port", (-1.0, 0.0), (10.0, -3.0), 1.5708, -0.1, True),
        ("stand on, closing, turned to starboard", (-1.0, 0.0), (10.0, -3.0), 1.5708, 0.1, False),
        ("stand on, opening, turned to port", (1.0, 0.0), (10.0, -3.0), 1.5708, -0.1, False),
        ("stand on, beyond 20 m, turned to port", (-1.0, 0.0), (30.0, -5.0), 1.5708, -0.1, False),
        # the target heading North-North-East: the own ship is abaft its beam (146 deg from
        # its bow), nothing the target must keep out of the way of
        ("own ship abaft its beam, turned to port", (-1.0, 0.0), (10.0, -3.0), 0.3, -0.1, False),
        # the target on the starboard bow heading West: the own ship gives way (the port-turn
        # term's case, not this one's)
        ("give way, turned to port", (-1.0, 0.0), (10.0, 3.0), -1.5708, -0.1, False),
    ],
)
def test_the_stand_on_turn_term_by_hand(
    case, own_before, target_pos, target_heading, turn, charged
) -> None:
    from marinenav.scenarios.give_way import stand_on_turn_penalty

    scenario, events = _crossing(own_before, (0.0, 0.0), target_pos, target_heading)
    events.theta_before[0, 0] = torch.remainder(events.theta[0, 0] - turn, 2 * math.pi)
    got = stand_on_turn_penalty(scenario, events, weight=5.0)
    assert got.shape == (1, 2) and got[0, 1] == 0.0  # the traffic vessel earns nothing
    expected = -5.0 * 0.1 if charged else 0.0
    assert float(got[0, 0]) == pytest.approx(expected, abs=1e-12), case
    events.theta_before = None
    with pytest.raises(ValueError, match="needs events.pos_before and events.theta_before"):
        stand_on_turn_penalty(scenario, events, 5.0)


def test_a_mixs_stand_on_turn_term_in_the_simulator() -> None:
    """The mix's ``stand_on_turn_penalty`` as the term ``stand_on_turn``: own ships that hold on
    for 24 s and then put the helm to port in the Imazu cases pay in case 4 (the one target
    crosses from port: it gives way, the own ship stands on) and nothing in case 1 (head-on) or
    case 2 (crossing from starboard: the own ship gives way); turning to starboard costs
    nothing; a weight below 0 is refused."""
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}}, "stand_on_turn_penalty": 5.0,
           "cross_ahead_of": "traffic"}  # fmt: skip
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "stand_on_turn"
    totals = _helm_totals(layout)
    assert totals["port"][3] < 0 and totals["port"][0] == 0 and totals["port"][1] == 0
    assert totals["starboard"].eq(0).all()
    with pytest.raises(ValueError, match="scenario.stand_on_turn_penalty must be >= 0"):
        make_layout("mix", {**MIX, "stand_on_turn_penalty": -1.0})


@pytest.mark.parametrize(
    ("case", "own_before", "target_pos", "target_heading", "charged"),
    [
        # the own ship (heading North, now at the origin) came 1 m closer to a target 15 m dead
        # ahead on the reciprocal course: head-on, nothing to port yet
        ("head-on, dead ahead", (-1.0, 0.0), (15.0, 0.0), 3.1416, 1.0),
        # the same target 5 m to port of the own course line (the own ship has altered): half
        # of the 10 m clearance is still short
        ("head-on, 5 m to port", (-1.0, 0.0), (15.0, -5.0), 3.1416, 0.5),
        ("head-on, 12 m to port", (-1.0, 0.0), (15.0, -12.0), 3.1416, 0.0),
        # to starboard: the pass starboard to starboard costs the most
        ("head-on, 3 m to starboard", (-1.0, 0.0), (15.0, 3.0), 3.1416, 1.0),
        ("head-on, opening", (1.0, 0.0), (15.0, 0.0), 3.1416, 0.0),
        # passed: the target abaft the own beam
        ("head-on, passed", (-1.0, 0.0), (-2.0, -6.0), 3.1416, 0.0),
        # crossing from starboard, heading West: not a head-on encounter
        ("give way", (-1.0, 0.0), (10.0, 3.0), -1.5708, 0.0),
    ],
)
def test_the_head_on_clearance_term_by_hand(case, own_before, target_pos, target_heading, charged):
    """The encounter is the one the two met in, as the simulator keeps it
    (``events.closest.encounter``): the head-on target was met dead ahead, 15 m off, before the
    own ship's alteration; the crossing one where it is now."""
    from marinenav.scenarios.give_way import head_on_clearance_penalty
    from marinenav.sim.approach import approach_now

    scenario, events = _crossing(own_before, (0.0, 0.0), target_pos, target_heading)
    met_at = events.pos.clone()
    if case.startswith("head-on"):
        met_at[0, 1] = torch.tensor([15.0, 0.0], dtype=F64)
    events.closest = approach_now(met_at, events.theta, torch.ones(1, 2, dtype=F64))
    got = head_on_clearance_penalty(scenario, events, weight=0.5)
    assert got.shape == (1, 2) and got[0, 1] == 0.0  # the traffic vessel earns nothing
    assert float(got[0, 0]) == pytest.approx(-0.5 * charged, abs=1e-12), case
    events.closest = None
    with pytest.raises(ValueError, match="needs events.closest and events.pos_before"):
        head_on_clearance_penalty(scenario, events, 0.5)


def test_a_mixs_head_on_clearance_term_in_the_simulator() -> None:
    """The mix's ``head_on_clearance_penalty`` as the term ``head_on_clearance``: own ships that
    hold on for 24 s in the Imazu cases pay it in case 1 (head-on, the target dead ahead from
    20 m) and nothing in case 2 (crossing from starboard) or case 4 (from port); an alteration to
    starboard then, which takes the target to port, pays less than one to port; a clearance of 0
    is refused."""
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
           "head_on_clearance_penalty": 0.5, "cross_ahead_of": "traffic"}  # fmt: skip
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "head_on_clearance" and layout.rules.closest_approach
    totals = _helm_totals(layout)
    for helm in ("port", "starboard"):
        assert totals[helm][0] < 0 and totals[helm][1] == 0 and totals[helm][3] == 0, helm
    assert totals["starboard"][0] > totals["port"][0]
    with pytest.raises(ValueError, match="scenario.head_on_clearance must be > 0 m"):
        make_layout("mix", {**MIX, "head_on_clearance": 0.0})
    with pytest.raises(ValueError, match="scenario.head_on_clearance_penalty must be >= 0"):
        make_layout("mix", {**MIX, "head_on_clearance_penalty": -1.0})


def test_the_closest_approaches_travel_in_the_simulators_checkpoint() -> None:
    """A simulator restored mid-episode from ``state_dict`` pays the give-way check term as the
    one it was taken from (the closest approaches so far are in the checkpoint); a checkpoint
    written before they were kept still loads (they restart where the vessels are, and the
    term pays otherwise)."""
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
           "give_way_check_penalty": 1.0, "cross_ahead_of": "traffic"}  # fmt: skip

    def make():
        layout = make_layout("mix", mix)
        return MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)

    actions = _own_ship_steers(_alteration(4, 2, -1.0), F64)
    sim = make()
    for step in range(20):
        sim.step(actions(step))
    state = sim.state_dict()
    restored, older = make(), make()
    restored.load_state_dict(state)
    older.load_state_dict({k: v for k, v in state.items() if k != "closest"})
    assert torch.equal(restored.closest.distance, sim.closest.distance)
    torch.testing.assert_close(older.closest.distance, torch.cdist(sim.state.pos, sim.state.pos))
    paid = {"went on": [], "restored": [], "older": []}
    for step in range(20, 45):
        for name, each in (("went on", sim), ("restored", restored), ("older", older)):
            paid[name].append(each.step(actions(step)).reward_terms[:, 0, -1])
    went_on, again = torch.stack(paid["went on"]), torch.stack(paid["restored"])
    assert went_on.ne(0).any() and torch.equal(went_on, again)
    assert not torch.equal(torch.stack(paid["older"]), went_on)  # the memory matters


def test_a_mix_rule_confined_to_parts_acts_in_their_episodes_only() -> None:
    """``scenario.rule_parts`` gates one mix rule by part: the same geometry earns the term in
    the named part's episodes and nothing in the others; the other rules stay in every part."""
    from marinenav.sim.constants import VesselRole

    layout = make_layout("mix", {**MIX, "cross_ahead_penalty": 0.3, "port_turn_penalty": 1.0,
                                 "rule_parts": {"cross_ahead_penalty": ["harbour"]}})  # fmt: skip
    scenario, events = _two_vessels(0.0, (10.0, 10.0), -1.5708)
    scenario.robot_role[0, 1] = int(VesselRole.POLICY)
    term = layout.rules.reward_terms["cross_ahead"]
    assert "port_turn" in layout.rules.reward_terms
    charged = {}
    for part in (0, 1):
        scenario.layout_part.fill_(part)
        charged[part] = term(scenario, events).tolist()
    assert charged == {0: [[0.0, 0.0]], 1: [[-0.3, 0.0]]}
    both = make_layout("mix", {**MIX, "cross_ahead_penalty": 0.3,
                               "rule_parts": {"cross_ahead_penalty": ["open", "harbour"]}})
    for part in (0, 1):
        scenario.layout_part.fill_(part)
        assert both.rules.reward_terms["cross_ahead"](scenario, events).tolist() == [[-0.3, 0]]


@pytest.mark.parametrize(
    ("rule_parts", "message"),
    [({"cross_ahead": ["open"]}, "scenario.rule_parts.cross_ahead: no mix rule 'cross_ahead'"),
     ({"port_turn_penalty": ["open"]}, "confines a rule that is off"),
     ({"cross_ahead_penalty": []}, "must be a non-empty list of distinct part names"),
     ({"cross_ahead_penalty": "open"}, "must be a non-empty list of distinct part names"),
     ({"cross_ahead_penalty": ["open", "open"]}, "non-empty list of distinct part names"),
     ({"cross_ahead_penalty": ["imazu"]}, "names no part 'imazu'; the parts: open, harbour")],
)  # fmt: skip
def test_bad_rule_parts_are_refused_in_one_line(rule_parts, message) -> None:
    with pytest.raises(ValueError, match=message):
        make_layout("mix", {**MIX, "cross_ahead_penalty": 0.3, "rule_parts": rule_parts})


@pytest.mark.parametrize(
    ("velocity", "expected"),
    [((3.0, 0.0), -0.2 * 1.0), ((0.0, -2.5), -0.2 * 0.5), ((1.2, 1.6), 0.0), ((0.0, 0.0), 0.0)],
)
def test_the_overspeed_term_by_hand(velocity, expected) -> None:
    """``overspeed_penalty``: -weight per m/s of speed over the ground above the safe speed,
    whatever the heading, nothing at or below it (1.2, 1.6 is exactly 2 m/s)."""
    from marinenav.scenarios.safe_speed import overspeed_penalty

    scenario, events = _two_vessels(0.0, (10.0, 3.0), 0.0)
    events.velocity = torch.tensor([[list(velocity), [5.0, 0.0]]], dtype=F64)
    got = overspeed_penalty(scenario, events, weight=0.2, safe_speed=2.0)
    assert got.shape == (1, 2)
    assert float(got[0, 0]) == pytest.approx(expected, abs=1e-12)
    assert float(got[0, 1]) == pytest.approx(-0.2 * 3.0)  # the rule itself does not ask who
    events.velocity = None
    with pytest.raises(ValueError, match="needs events.velocity"):
        overspeed_penalty(scenario, events, 0.2)


def test_a_mixs_overspeed_term_in_the_simulator() -> None:
    """The mix's ``overspeed_penalty`` as the term ``overspeed``: in the Imazu cases an own ship
    that holds its 1.5 m/s pays nothing, one that races at full thrust pays on every step past
    the safe speed (2 m/s), and the traffic never pays (reward terms are the policy's)."""
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}}, "overspeed_penalty": 0.2}
    layout = make_layout("mix", mix)
    assert layout.rules.term_names[-1] == "overspeed"
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    totals = {}
    for helm, thrust in (("race", 1.0), ("hold", 0.0)):
        sim = MarineNavSimulator.from_scenarios(scenarios, "continuous", dtype=F64, layout=layout)
        action = torch.zeros(22, 4, 2, dtype=F64)
        action[:, 0] = thrust
        total = torch.zeros(22, 4, dtype=F64)
        for _ in range(20):
            total += sim.step(action).reward_terms[..., -1]
        totals[helm] = total
    assert totals["hold"].eq(0).all()
    assert bool((totals["race"][:, 0] < 0).all()) and totals["race"][:, 1:].eq(0).all()
    # full thrust makes at most about 3.3 m/s: at most 1.4 m/s over, 0.28 a step
    assert float(totals["race"][:, 0].min()) > -0.2 * 1.4 * 20
    with pytest.raises(ValueError, match="scenario.overspeed_penalty must be >= 0"):
        make_layout("mix", {**MIX, "overspeed_penalty": -1.0})
    with pytest.raises(ValueError, match="scenario.safe_speed must be > 0 m/s"):
        make_layout("mix", {**MIX, "safe_speed": 0.0})
