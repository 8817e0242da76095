"""Traffic that does not give way (docs/simulator.md, "Traffic"): vessels the policy does not
steer hold course and speed or follow their route, are seen like any vessel, earn nothing,
never end an episode, and a policy vessel touching one fails."""

from __future__ import annotations

import json
import math

import pytest
import torch

from marinenav.envs import MarineNavEnv
from marinenav.sim import MarineNavSimulator, load_scenario_file
from marinenav.sim.constants import InfoState, VesselRole
from marinenav.sim.scenario import default_scenario
from marinenav.sim.scenario_json import scenarios_from_dicts, scenarios_to_dicts
from marinenav.sim.traffic import WAYPOINT_REACHED, cruise_thrust, under_way

F64 = torch.float64


def _scenario(vessels: list[dict], obstacles: int = 0):
    """One environment with the given vessels: dicts of start, goal, heading (rad), speed (m/s,
    along the heading, thrusts holding it), role and route."""
    s = default_scenario(1, len(vessels), obstacles, 0, dtype=F64)
    for k, v in enumerate(vessels):
        s.robot_present[0, k] = True
        s.start[0, k] = torch.tensor(v["start"], dtype=F64)
        s.goal[0, k] = torch.tensor(v.get("goal", [50.0, 50.0]), dtype=F64)
        heading = torch.tensor(v.get("heading", 0.0), dtype=F64)
        speed = torch.tensor(v.get("speed", 0.0), dtype=F64)
        s.init_theta[0, k], s.init_velocity_r[0, k], s.init_thrust[0, k] = under_way(heading, speed)
        s.robot_role[0, k] = int(v.get("role", VesselRole.POLICY))
        route = v.get("route", [])
        if route:
            s.route[0, k, : len(route)] = torch.tensor(route, dtype=F64)
            s.route_length[0, k] = len(route)
    return s


def _simulator(scenario) -> MarineNavSimulator:
    slots = scenario.slots
    schedule = dict(timesteps=[0], num_robots=[slots.robots], num_cores=[0],
                    num_obstacles=[slots.obstacles], min_start_goal_dis=[30.0])  # fmt: skip
    sim = MarineNavSimulator(1, "continuous", *slots, schedule=schedule, dtype=F64)
    sim.load_scenarios(scenario)
    return sim


def _still(sim: MarineNavSimulator) -> torch.Tensor:
    return torch.zeros(1, sim.robot_slots, 2, dtype=F64)


def test_a_hold_vessel_keeps_its_thrusts_course_and_speed() -> None:
    """Full-rate actions for every slot: the policy's vessel obeys them, the HOLD vessel keeps
    its starting thrusts, heading and (steady) speed exactly, whatever the actions say."""
    sim = _simulator(_scenario([
        {"start": [5.0, 5.0]},
        {"start": [5.0, 40.0], "heading": 0.3, "speed": 1.5, "role": VesselRole.HOLD},
    ]))  # fmt: skip
    full = torch.ones(1, 2, 2, dtype=F64)
    for _ in range(20):
        sim.step(full)
    thrust = float(cruise_thrust(torch.tensor(1.5, dtype=F64)))
    assert sim.state.thrust[0, 1].tolist() == [thrust, thrust]
    assert float(sim.state.theta[0, 1]) == pytest.approx(0.3, abs=1e-6)
    torch.testing.assert_close(
        sim.state.velocity[0, 1, :2], 1.5 * torch.tensor([math.cos(0.3), math.sin(0.3)], dtype=F64)
    )
    assert sim.state.thrust[0, 0].tolist() == [1000.0, 1000.0]  # the policy's vessel obeyed


def test_under_way_starts_a_vessel_steady_on_its_heading() -> None:
    """``under_way``: the heading brought into [0, 2 pi), the velocity along it with no yaw
    rate, the cruise thrust on both thrusters, for any batch shape; a vessel started with it
    and left alone sails on at that speed and heading."""
    heading = torch.tensor([[-math.pi / 2, 0.3, 2 * math.pi + 0.1]], dtype=F64)  # [1, 3]
    speed = torch.tensor([[1.5, 2.0, 0.5]], dtype=F64)
    theta, velocity, thrust = under_way(heading, speed)
    assert theta.shape == (1, 3) and velocity.shape == (1, 3, 3) and thrust.shape == (1, 3, 2)
    torch.testing.assert_close(theta, torch.tensor([[1.5 * math.pi, 0.3, 0.1]], dtype=F64))
    torch.testing.assert_close(velocity[0, 0], torch.tensor([0.0, -1.5, 0.0], dtype=F64))
    torch.testing.assert_close(
        velocity[0, 1], torch.tensor([2 * math.cos(0.3), 2 * math.sin(0.3), 0.0], dtype=F64)
    )
    assert thrust[0, 2].tolist() == [float(cruise_thrust(torch.tensor(0.5, dtype=F64)))] * 2

    sim = _simulator(_scenario([
        {"start": [5.0, 5.0]},
        {"start": [40.0, 40.0], "heading": -math.pi / 2, "speed": 1.5, "role": VesselRole.HOLD},
    ]))  # fmt: skip
    for _ in range(20):
        sim.step(_still(sim))
    assert float(sim.state.theta[0, 1]) == pytest.approx(1.5 * math.pi, abs=1e-6)
    torch.testing.assert_close(
        sim.state.velocity[0, 1, :2], torch.tensor([0.0, -1.5], dtype=F64), atol=1e-6, rtol=0
    )


def test_a_route_vessel_passes_its_waypoints_in_order_then_holds_its_course() -> None:
    route = [[25.0, 10.0], [40.0, 25.0], [40.0, 40.0]]
    sim = _simulator(_scenario([
        {"start": [5.0, 50.0]},
        {"start": [10.0, 10.0], "speed": 1.5, "role": VesselRole.ROUTE, "route": route},
    ]))  # fmt: skip
    passed, closest = [], [math.inf] * 3
    for _ in range(200):
        sim.step(_still(sim))
        pos = sim.state.pos[0, 1]
        for k, point in enumerate(route):
            closest[k] = min(closest[k], float(torch.dist(pos, torch.tensor(point, dtype=F64))))
        if not passed or passed[-1] != int(sim.waypoint[0, 1]):
            passed.append(int(sim.waypoint[0, 1]))
    assert passed == [0, 1, 2, 3]  # each waypoint in turn, then past the last
    assert max(closest) <= WAYPOINT_REACHED
    theta = float(sim.state.theta[0, 1])
    for _ in range(20):
        sim.step(_still(sim))
    assert float(sim.state.theta[0, 1]) == pytest.approx(theta, abs=0.02)  # holds its course


def test_traffic_earns_nothing_is_never_an_agent_and_does_not_keep_the_episode_going() -> None:
    """The env's agents are the policy's vessels: traffic is inactive, done, TRAFFIC, with zero
    reward; when the policy's vessel reaches its goal the episode ends though traffic sails on;
    the policy's vessel still perceives the traffic."""
    env = MarineNavEnv.from_scenarios(scenarios_to_dicts(_scenario([
        {"start": [10.0, 10.0], "goal": [10.0, 14.0], "heading": math.pi / 2, "speed": 1.5},
        {"start": [10.0, 20.0], "heading": 0.0, "speed": 1.0, "role": VesselRole.HOLD},
    ])), action_kind="continuous", dtype=F64)  # fmt: skip
    td = env.reset()
    assert td["agents", "active"].tolist() == [[True, False]]
    assert td["agents", "info"].tolist() == [[InfoState.NORMAL, InfoState.TRAFFIC]]
    assert bool(td["agents", "objects_mask"][0, 0].any())  # the traffic is seen
    td["agents", "action"] = torch.zeros(1, 2, 2, dtype=F64)
    done_at = None
    for step in range(20):
        out = env.step(td)["next"]
        assert float(out["agents", "reward"][0, 1]) == 0.0
        assert bool(out["agents", "done"][0, 1])
        if bool(out["done"]):
            done_at = step
            break
        td = out.set(("agents", "action"), td["agents", "action"])
    assert done_at is not None
    assert int(out["agents", "info"][0, 0]) == InfoState.REACH_GOAL
    assert bool(env.sim.active[0, 1])  # the traffic still sails


def test_a_policy_vessel_touching_traffic_fails_and_the_traffic_sails_on() -> None:
    sim = _simulator(_scenario([
        {"start": [20.0, 10.0], "goal": [20.0, 45.0], "heading": math.pi / 2, "speed": 1.5},
        {"start": [20.0, 25.0], "heading": -math.pi / 2, "speed": 1.5, "role": VesselRole.HOLD},
        {"start": [26.0, 32.0], "heading": -math.pi / 2, "speed": 1.5, "role": VesselRole.HOLD},
    ]))  # fmt: skip
    infos = []
    for _ in range(20):
        infos.append(sim.step(_still(sim)).info[0].tolist())
    assert [InfoState.COLLISION, InfoState.TRAFFIC, InfoState.TRAFFIC] in infos
    assert bool(sim.active[0, 1]) and bool(sim.active[0, 2])  # traffic is never deactivated


def test_traffic_round_trips_through_scenario_json_and_paper_files_stay_the_originals() -> None:
    s = _scenario([
        {"start": [5.0, 5.0]},
        {"start": [30.0, 30.0], "speed": 1.0, "role": VesselRole.ROUTE,
         "route": [[40.0, 30.0], [45.0, 45.0]]},
        {"start": [45.0, 10.0], "speed": 1.0, "role": VesselRole.HOLD},
    ])  # fmt: skip
    (d,) = scenarios_to_dicts(s)
    assert d["robots"]["role"] == ["policy", "route", "hold"]
    assert d["robots"]["route"] == [[], [[40.0, 30.0], [45.0, 45.0]], []]
    back = scenarios_from_dicts([d], s.slots, dtype=F64)
    for name in ("robot_role", "route", "route_length"):
        assert torch.equal(getattr(back, name), getattr(s, name)), name
    (paper,) = scenarios_to_dicts(_scenario([{"start": [5.0, 5.0]}]))
    assert "role" not in paper["robots"] and "route" not in paper["robots"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.__setitem__("role", ["policy", "drift", "hold"]),
         "robots.role[1] must be one of policy, hold, route, got 'drift'"),
        (lambda r: r["route"].__setitem__(1, []),
         "robots.route[1] is empty: a 'route' vessel needs at least one waypoint"),
        (lambda r: r["route"].__setitem__(2, [[1.0, 2.0]]),
         "robots.route[2] is given for a 'hold' vessel"),
        (lambda r: r.__setitem__("role", ["hold", "route", "hold"]),
         "robots.role names no 'policy' vessel"),
        (lambda r: r["route"].__setitem__(1, [[1.0, 2.0]] * 5), "robots.route[1] has 5 waypoints"),
    ],
)  # fmt: skip
def test_bad_traffic_keys_are_refused_naming_file_episode_and_key(tmp_path, change, message):
    s = _scenario([
        {"start": [5.0, 5.0]},
        {"start": [30.0, 30.0], "speed": 1.0, "role": VesselRole.ROUTE, "route": [[40.0, 30.0]]},
        {"start": [45.0, 10.0], "speed": 1.0, "role": VesselRole.HOLD},
    ])  # fmt: skip
    (good,) = scenarios_to_dicts(s)
    bad = json.loads(json.dumps(good))
    change(bad["robots"])
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps([good, bad]))
    with pytest.raises(ValueError) as error:
        load_scenario_file(path)
    assert str(error.value).startswith(f"{path}: episode 1: {message}")


def test_the_trainer_counts_an_episode_a_success_when_every_policy_vessel_arrives(tmp_path):
    """Traffic neither arrives nor counts among the robots: an own ship at its goal beside two
    target ships is a success with its own return (not shared among the targets)."""
    from tensordict import TensorDict

    from marinenav.training.trainer import Trainer
    from tests.run_utils import tiny_config

    trainer = Trainer(tiny_config("agent=dqn", "scenario=imazu", "env.num_envs=2"), tmp_path)
    I = InfoState  # noqa: E741
    info = torch.tensor([[I.REACH_GOAL, I.TRAFFIC, I.TRAFFIC, I.EMPTY_SLOT, I.EMPTY_SLOT],
                         [I.COLLISION, I.TRAFFIC, I.EMPTY_SLOT, I.EMPTY_SLOT, I.EMPTY_SLOT]])
    reward = torch.tensor([[10.0, 0.0, 0.0, 0.0, 0.0], [-5.0, 0.0, 0.0, 0.0, 0.0]]).unsqueeze(-1)
    terms = torch.zeros(2, 5, 3)
    step_output = TensorDict({("agents", "info"): info, ("agents", "reward"): reward,
                              ("agents", "reward_terms"): terms,
                              "done": torch.ones(2, 1, dtype=torch.bool)}, [2])  # fmt: skip
    step_input = TensorDict({("agents", "active"): info == I.REACH_GOAL}, [2])
    trainer._track_episodes(step_input, step_output)
    assert float(trainer.metrics["episodes"]) == 2.0
    assert float(trainer.metrics["successes"]) == 1.0
    assert float(trainer.metrics["return_sum"]) == pytest.approx(10.0 - 5.0)
