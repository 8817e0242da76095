"""Simulator behaviour beyond the recordings: resets, seeding, episode rules, bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from marinenav.scenarios import make_layout
from marinenav.sim import InfoState, MarineNavSimulator
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.sim.rules import (
    StepEvents,
    outcome_codes,
    step_limit_reached,
    step_reward,
    terminal_reward,
    terminate,
)
from marinenav.sim.scenario import Slots, default_scenario
from marinenav.sim.scenario_json import load_scenario_file, scenarios_from_dicts, slots_needed
from marinenav.training.evaluation import named_scenarios
from tests.reference_data import REFERENCE_DIR

DATA = Path(__file__).parent / "data"
ONE_ROBOT = json.loads((DATA / "one_robot_one_obstacle.json").read_text())


def _state_snapshot(sim: MarineNavSimulator) -> dict[str, torch.Tensor]:
    st, obs = sim.state, sim.observation
    tensors = {
        "pos": st.pos,
        "theta": st.theta,
        "velocity_r": st.velocity_r,
        "velocity": st.velocity,
        "thrust": st.thrust,
        "collision": sim.collision,
        "reach_goal": sim.reach_goal,
        "deactivated": sim.deactivated,
        "episode_steps": sim.episode_steps,
        "self_state": obs.self_state,
        "objects": obs.objects,
        "objects_mask": obs.objects_mask,
    }
    tensors.update({f"scenario.{k}": v for k, v in sim.scenario.tensors().items()})
    return {k: v.clone() for k, v in tensors.items()}


def _random_actions(sim: MarineNavSimulator, gen: torch.Generator) -> torch.Tensor:
    E, R = sim.num_envs, sim.robot_slots
    if sim.action_kind == "discrete":
        return torch.randint(0, 25, (E, R), generator=gen)
    return torch.rand((E, R, 2), generator=gen) * 2 - 1


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "merge"])
@pytest.mark.parametrize("action_kind", ["discrete", "continuous"])
def test_partial_reset_touches_only_masked_envs(action_kind: str, compact: bool) -> None:
    sim = MarineNavSimulator(8, action_kind, seed=1)
    sim.compact_resets = compact
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        sim.step(_random_actions(sim, gen))
    before = _state_snapshot(sim)
    mask = torch.tensor([True, False, False, True, False, False, False, True])
    sim.reset(mask)
    after = _state_snapshot(sim)
    for name, old in before.items():
        new = after[name]
        assert torch.equal(new[~mask], old[~mask]), f"{name} changed in an unmasked env"
    assert (after["episode_steps"][mask] == 0).all()
    assert not torch.equal(after["scenario.start"][mask], before["scenario.start"][mask])
    torch.testing.assert_close(after["pos"][mask], after["scenario.start"][mask])


def test_same_seed_same_trajectories_different_seed_differs() -> None:
    def run(seed: int) -> torch.Tensor:
        sim = MarineNavSimulator(4, "continuous", seed=seed, dtype=torch.float64)
        gen = torch.Generator().manual_seed(7)
        trace = []
        for t in range(30):
            result = sim.step(_random_actions(sim, gen))
            if t % 10 == 9:
                sim.reset(result.env_done | (torch.arange(4) == t % 4))
            trace.append(torch.cat((sim.state.pos.flatten(), sim.observation.objects.flatten())))
        return torch.stack(trace)

    assert torch.equal(run(3), run(3))
    assert not torch.equal(run(3), run(4))


def test_fixed_and_generated_environments_mix() -> None:
    for compact in (True, False):
        sim = MarineNavSimulator(3, seed=2)
        sim.compact_resets = compact
        sim.load_scenarios([ONE_ROBOT], env_ids=[1])
        before = sim.scenario.start.clone()
        sim.reset()
        assert torch.equal(sim.scenario.start[1], before[1])  # fixed: the same scenario
        assert sim.scenario.robot_present[1].tolist() == [True, False, False, False, False]
        assert not torch.equal(sim.scenario.start[0], before[0])  # generated: a new one
        sim.load_scenarios([ONE_ROBOT], env_ids=[1], fixed=False)
        sim.reset()
        assert int(sim.scenario.robot_present[1].sum()) == 3  # stage 0 of the curriculum


def test_set_seed_restarts_the_stream() -> None:
    sim = MarineNavSimulator(3, seed=5)
    first = sim.scenario.start.clone()
    sim.generator.manual_seed(5)
    sim.reset()
    assert torch.equal(sim.scenario.start, first)


def test_generated_scenarios_follow_the_curriculum_stage() -> None:
    schedule = CurriculumSchedule(
        timesteps=[0, 20],
        num_robots=[2, 4],
        num_cores=[0, 1],
        num_obstacles=[1, 3],
        min_start_goal_dis=[30.0, 40.0],
    )
    sim = MarineNavSimulator(4, schedule=schedule)
    assert sim.scenario.robot_present.sum(1).tolist() == [2, 2, 2, 2]
    assert sim.scenario.obstacle_present.sum(1).tolist() == [1, 1, 1, 1]
    actions = torch.zeros(4, 4, dtype=torch.long)
    for _ in range(5):  # 5 batched steps of 4 envs: the clock reads 20 env steps
        sim.step(actions)
    assert int(sim.curriculum_step) == 20
    sim.reset(torch.tensor([True, False, True, False]))
    assert sim.scenario.robot_present.sum(1).tolist() == [4, 2, 4, 2]
    assert sim.scenario.core_present.sum(1).tolist() == [1, 0, 1, 0]
    gap = torch.linalg.vector_norm(sim.scenario.goal - sim.scenario.start, dim=-1)
    assert (gap[0, :4] >= 40.0).all()


def test_inactive_robot_is_frozen_rewarded_zero_and_ignored() -> None:
    sim = MarineNavSimulator(2, "continuous", dtype=torch.float64)
    sim.deactivated[0, 1] = True
    sim.collision[0, 1] = True
    frozen = sim.state.pos[0, 1].clone()
    actions = torch.zeros(2, 5, 2, dtype=torch.float64)
    actions[0, 1] = float("nan")  # an inactive robot's action is ignored, even in validation
    result = sim.step(actions)
    assert torch.equal(sim.state.pos[0, 1], frozen)
    assert result.reward[0, 1] == 0 and bool(result.done[0, 1])
    assert not bool(result.was_active[0, 1])
    assert int(result.info[0, 1]) == InfoState.DEACTIVATED_AFTER_COLLISION
    assert (sim.observation.self_state[0, 1] == 0).all()
    assert not sim.observation.objects_mask[0, 1].any()
    # invisible to the others
    others = sim.observation.objects[0, [0, 2, 3, 4]]
    assert not torch.isclose(others[..., 4], sim.scenario.radius[0, 1]).any()


def test_empty_slots_report_done_with_the_padding_state() -> None:
    schedule = CurriculumSchedule([0], [2], [0], [0], [30.0])
    sim = MarineNavSimulator(3, schedule=schedule, robot_slots=4)
    result = sim.step(torch.zeros(3, 4, dtype=torch.long))
    assert (result.info[:, 2:] == InfoState.EMPTY_SLOT).all()
    assert result.done[:, 2:].all() and (result.reward[:, 2:] == 0).all()


def test_step_limit_is_a_truncation() -> None:
    sim = MarineNavSimulator.from_scenarios([ONE_ROBOT], max_episode_steps=3)
    actions = torch.zeros(1, 1, dtype=torch.long)
    for _ in range(3):
        result = sim.step(actions)
        assert not bool(result.env_done[0])
    result = sim.step(actions)  # pre-increment counter == 3: the original's 1001st step
    assert int(result.info[0, 0]) == InfoState.TOO_LONG_EPISODE
    assert bool(result.truncated[0, 0]) and not bool(result.terminated[0, 0])
    assert bool(result.env_done[0]) and bool(result.env_truncated[0])


def test_goal_reached_terminates_and_deactivates() -> None:
    scenario = copy.deepcopy(ONE_ROBOT)
    scenario["robots"]["goal"] = [[22.0, 20.6]]  # 2.09 m away: within goal_dis after one step
    scenario["robots"]["init_velocity_r"] = [[0.5, 0.0, 0.0]]
    sim = MarineNavSimulator.from_scenarios([scenario], dtype=torch.float64)
    result = sim.step(torch.zeros(1, 1, dtype=torch.long))
    assert int(result.info[0, 0]) == InfoState.REACH_GOAL
    assert bool(result.terminated[0, 0]) and bool(result.env_done[0])
    assert result.reward[0, 0] > 9.0
    assert bool(sim.deactivated[0, 0])
    # reset of a fixed scenario restarts it exactly
    sim.reset()
    assert not bool(sim.deactivated[0, 0])
    torch.testing.assert_close(sim.state.pos[0, 0], torch.tensor([20.0, 20.0], dtype=torch.float64))


def test_float32_follows_float64() -> None:
    path = sorted(REFERENCE_DIR.glob("reference_*.json"))
    if not path:
        pytest.skip("no reference fixtures")
    scenario = load_scenario_file(path[2])
    sims = [
        MarineNavSimulator.from_scenarios(scenario, dtype=d) for d in (torch.float32, torch.float64)
    ]
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        actions = torch.randint(0, 25, (1, sims[0].robot_slots), generator=gen)
        results = [sim.step(actions) for sim in sims]
    torch.testing.assert_close(sims[0].state.pos.double(), sims[1].state.pos, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(results[0].reward.double(), results[1].reward, rtol=1e-3, atol=1e-3)


def test_export_then_load_reproduces_the_environment() -> None:
    sim = MarineNavSimulator(3, "discrete", core_slots=2, seed=11, dtype=torch.float64)
    sim.reset()
    exported = sim.export_scenarios()
    json.dumps(exported)  # plain JSON types only
    clone = MarineNavSimulator.from_scenarios(
        exported, robot_slots=5, obstacle_slots=4, core_slots=2, dtype=torch.float64
    )
    for name, value in sim.scenario.tensors().items():
        if name in ("seed", "is_eval_env"):
            continue
        assert torch.equal(getattr(clone.scenario, name), value), name
    torch.testing.assert_close(clone.state.pos, sim.state.pos)
    torch.testing.assert_close(clone.state.velocity, sim.state.velocity)
    actions = torch.randint(0, 25, (3, 5), generator=torch.Generator().manual_seed(0))
    clone.generator.manual_seed(99)
    sim.generator.manual_seed(99)
    torch.testing.assert_close(clone.step(actions).reward, sim.step(actions).reward)


def test_export_of_a_loaded_original_scenario_gives_its_values_back() -> None:
    paths = sorted(REFERENCE_DIR.glob("reference_*.json"))
    if not paths:
        pytest.skip("no reference fixtures")
    original = load_scenario_file(paths[0])[0]
    sim = MarineNavSimulator.from_scenarios([original], dtype=torch.float64)
    exported = sim.export_scenarios()[0]
    for key, value in original["env"].items():
        if key in ("cores", "obstacles"):
            for sub, entries in value.items():
                assert exported["env"][key][sub] == entries, f"env.{key}.{sub}"
        else:
            assert exported["env"][key] == value, f"env.{key}"
    for key, value in original["robots"].items():
        if key in ("observation_history", "action_history", "trajectory"):
            continue
        if key == "perception":
            for sub, entries in value.items():
                assert exported["robots"][key][sub] == entries, sub
        else:
            assert exported["robots"][key] == value, f"robots.{key}"
    # first trajectory row: x, y, theta, velocity_r, velocity (with the current), angles, thrusts
    initial = json.loads(paths[0].read_text())["initial"]
    for row, rec in zip(exported["robots"]["trajectory"], initial, strict=True):
        expected = [
            rec["x"],
            rec["y"],
            rec["theta"],
            *rec["velocity_r"],
            *rec["velocity"],
            0.0,
            0.0,
            rec["left_thrust"],
            rec["right_thrust"],
        ]
        assert row[0] == pytest.approx(expected, abs=1e-9)


# ---------------------------------------------------------------- bad input
@pytest.fixture
def discrete_sim() -> MarineNavSimulator:
    return MarineNavSimulator(2, "discrete")


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (torch.zeros(2, 4, dtype=torch.long), "shape"),
        (torch.zeros(2, 5, 1, dtype=torch.long), "shape"),
        (torch.zeros(2, 5), "integer"),
        (torch.full((2, 5), 25, dtype=torch.long), "outside 0..24"),
        (torch.full((2, 5), -1, dtype=torch.long), "outside 0..24"),
        ([[0] * 5] * 2, "torch.Tensor"),
    ],
)
def test_bad_discrete_actions_raise(discrete_sim, actions, message) -> None:
    with pytest.raises(ValueError, match=message):
        discrete_sim.step(actions)


@pytest.mark.parametrize(
    ("value", "shape", "dtype", "message"),
    [
        (float("nan"), (2, 5, 2), torch.float32, "NaN or infinite"),
        (float("inf"), (2, 5, 2), torch.float32, "NaN or infinite"),
        (0.0, (2, 5), torch.float32, "shape"),
        (0, (2, 5, 2), torch.int64, "floating point"),
    ],
)
def test_bad_continuous_actions_raise(value, shape, dtype, message) -> None:
    sim = MarineNavSimulator(2, "continuous")
    with pytest.raises(ValueError, match=message):
        sim.step(torch.full(shape, value, dtype=dtype))


@pytest.mark.parametrize("value", [1.0001, 2.0, -5.0, 100.0])
def test_a_continuous_action_outside_the_spec_is_refused_in_validation_mode(value) -> None:
    sim = MarineNavSimulator(2, "continuous")
    actions = torch.zeros(2, 5, 2)
    actions[1, 0, 0] = value
    with pytest.raises(ValueError, match=r"outside \[-1, 1\] for an active robot \(\|a\| = "):
        sim.step(actions)
    sim.deactivated[1, 0] = True  # an inactive robot's action is ignored, whatever it is
    sim.step(actions)


def test_without_validation_a_continuous_action_is_clamped_to_the_rate_limit() -> None:
    """From rest, actions 2, 5 and 100 gave 1,000 N after one 0.5 s step where the
    rate limit (1000 N/s) allows 500 N; each now gives what 1 (or -1) gives."""
    thrusts = {}
    for value in (1.0, 2.0, 5.0, 100.0, -1.0, -100.0):
        sim = MarineNavSimulator(1, "continuous", validate=False, seed=0, dtype=torch.float64)
        sim.step(torch.full((1, 5, 2), value, dtype=torch.float64))
        thrusts[value] = sim.state.thrust[0, 0].clone()
    assert torch.allclose(thrusts[1.0], torch.full((2,), 500.0, dtype=torch.float64))
    for value in (2.0, 5.0, 100.0):
        assert torch.equal(thrusts[value], thrusts[1.0]), value
    assert torch.equal(thrusts[-100.0], thrusts[-1.0])


def test_bad_reset_mask_raises(discrete_sim) -> None:
    with pytest.raises(ValueError, match="shape"):
        discrete_sim.reset(torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool"):
        discrete_sim.reset(torch.ones(2))


def test_bad_construction_raises() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        MarineNavSimulator(0)
    with pytest.raises(ValueError, match="action_kind"):
        MarineNavSimulator(1, "hybrid")
    with pytest.raises(ValueError, match="robot"):
        MarineNavSimulator(1, robot_slots=3)  # the default schedule needs 5


def _broken(edit) -> dict:
    scenario = copy.deepcopy(ONE_ROBOT)
    edit(scenario)
    return scenario


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["env"].pop("width"), "missing key env.width"),
        (lambda s: s["robots"].pop("goal"), "missing key robots.goal"),
        (lambda s: s["robots"]["perception"].pop("range"), "missing key robots.perception.range"),
        (lambda s: s.pop("robots"), r"scenario 0: missing key robots \(a dict\)$"),
        (
            lambda s: s["robots"].__setitem__("start", [[1.0, 2.0], [3.0, 4.0]]),
            "robots.start has 2",
        ),
        (lambda s: s["env"]["obstacles"].__setitem__("r", [1.0, 1.0]), "env.obstacles.r has 2"),
        (
            lambda s: s["env"]["cores"].__setitem__("Gamma", [1.0]),
            "env.cores.Gamma has 1 entries, expected 0",
        ),
        (lambda s: s["robots"].__setitem__("N", [5]), "robots.N must be 10"),
        (lambda s: s["robots"].__setitem__("init_theta", [float("nan")]), "non-finite"),
        # checked number by number: inside nested lists, and an int past float64's range
        (lambda s: s["robots"]["start"][0].__setitem__(1, float("-inf")),
         "scenario 0: scenario key robots.start holds a non-finite number$"),
        (lambda s: s["env"]["obstacles"]["r"].__setitem__(0, 10**400),
         "scenario 0: scenario key env.obstacles.r holds a non-finite number$"),
        (lambda s: s["robots"].__setitem__("m", [20.0]), "singular"),
        # strings used to be refused naming no key (or read: float("55")), and a start
        # 1,000 km off the 55 m map was accepted
        (lambda s: s["env"].__setitem__("width", "55"),
         "scenario 0: scenario key env.width must hold numbers, got '55'$"),
        (lambda s: s["robots"].__setitem__("r", ["0.8"]),
         "scenario 0: scenario key robots.r must hold numbers, got '0.8'$"),
        (lambda s: s["robots"]["start"][0].__setitem__(0, 1e6),
         r"scenario 0: robots.start\[0\] = \[1e\+06, [0-9.]+\] lies outside the map, \[0, 55\] x "
         r"\[0, 55\] m \(env.width, env.height\)$"),
        (lambda s: s["robots"]["goal"][0].__setitem__(1, -3.0),
         r"scenario 0: robots.goal\[0\] = \[[0-9.]+, -3\] lies outside the map"),
        (lambda s: s["env"].__setitem__("num_robots", "1"),
         "scenario 0: env.num_robots must be an integer, got '1'$"),
        # an entry of the wrong shape is refused naming its key: these raised torch's or
        # Python's own errors (naming no key, or no scenario), and robots.r = [[0.8]] loaded
        (lambda s: s["robots"].__setitem__("r", [[0.8]]),
         r"scenario 0: robots.r must hold one number per robot, got \[0.8\]$"),
        (lambda s: s["env"].__setitem__("width", [55.0]),
         r"scenario 0: env.width must be one number, got \[55.0\]$"),
        (lambda s: s["env"]["obstacles"]["positions"].__setitem__(0, [1.0, 2.0, 3.0]),
         r"scenario 0: env.obstacles.positions must hold an \[x, y\] pair per obstacle$"),
        (lambda s: s["robots"].__setitem__("left_thrust_change", [[1.0, 2.0, 3.0]]),
         "scenario 0: robots.left_thrust_change must hold 5 change rates per robot$"),
        (lambda s: s["robots"]["start"].__setitem__(0, 1.0),
         r"scenario 0: robots.start must hold an \[x, y\] pair per robot$"),
        (lambda s: s["env"]["cores"].__setitem__("positions", 3.0),
         "scenario 0: scenario key env.cores.positions must be a list, got float$"),
        # a perceived-object count the observation has no room for, or below zero
        (lambda s: s["robots"]["perception"].__setitem__("max_obj_num", [1e30]),
         r"scenario 0: robots.perception.max_obj_num must be in \[0, 5\], got \[1000000"),
        (lambda s: s["robots"]["perception"].__setitem__("max_obj_num", [-1]),
         r"scenario 0: robots.perception.max_obj_num must be in \[0, 5\], got \[-1\]$"),
    ],
)  # fmt: skip
def test_bad_scenario_dicts_raise(edit, message) -> None:
    with pytest.raises(ValueError, match=message):
        MarineNavSimulator.from_scenarios([_broken(edit)])


def test_more_items_than_slots_raise() -> None:
    crowded = _broken(
        lambda s: s["env"]["obstacles"].update(positions=[[10.0, 10.0]] * 3, r=[1.0] * 3)
    )
    with pytest.raises(ValueError, match="3 obstacles but the simulator has 2 obstacle slots"):
        MarineNavSimulator.from_scenarios([crowded], obstacle_slots=2)
    cored = _broken(
        lambda s: s["env"]["cores"].update(
            positions=[[10.0, 10.0]] * 2, clockwise=[1, 0], Gamma=[9.0, 9.0]
        )
    )
    with pytest.raises(ValueError, match="2 vortex cores but the simulator has 1 core slots"):
        MarineNavSimulator.from_scenarios([cored], core_slots=1)
    sim = MarineNavSimulator(1, robot_slots=5)
    two = _broken(lambda s: s["env"].__setitem__("num_robots", 6))
    with pytest.raises(ValueError, match="6 robots but the simulator has 5 robot slots"):
        sim.load_scenarios([two])


def test_a_batch_of_dicts_loads_as_each_dict_alone() -> None:
    """The loader gathers each key over all dicts and writes it once: every environment of the
    batch equals the same dict loaded alone into the same slots, across robot, obstacle, core
    and waypoint counts that differ from dict to dict (traffic holding its course and following
    routes, vortex cores, the paper's episodes)."""
    dicts = [*named_scenarios("paper")[::12], ONE_ROBOT]
    dicts += make_layout("imazu").evaluation_scenarios(1, 0, make_layout("imazu").slots)[::5]
    harbour = make_layout("harbour", {"traffic": 2})
    dicts += harbour.evaluation_scenarios(2, 0, harbour.slots)
    currents = make_layout("random", {"num_cores": [8] * 6, "num_obstacles": [3] * 6})
    dicts += currents.evaluation_scenarios(1, 0, Slots(5, 8, 8))[::2]
    roles = {role for d in dicts for role in d["robots"].get("role", ["policy"])}
    assert roles == {"policy", "hold", "route"}  # the set holds every kind of vessel
    assert len({len(d["env"]["cores"]["positions"]) for d in dicts}) > 1
    slots = slots_needed(dicts)
    batch = scenarios_from_dicts(dicts, slots, dtype=torch.float64)
    for e, scenario in enumerate(dicts):
        alone = scenarios_from_dicts([scenario], slots, dtype=torch.float64)
        for name, tensor in alone.tensors().items():
            assert torch.equal(batch.tensors()[name][e], tensor[0]), (e, name)


def test_the_first_dict_at_fault_is_named_whatever_its_fault() -> None:
    """A dict with a malformed key and an earlier one whose placement is impossible: the earlier
    is named (keys are read dict by dict, placements checked for all dicts at once)."""
    at_goal = _broken(
        lambda s: s["robots"].__setitem__("goal", copy.deepcopy(s["robots"]["start"]))
    )
    malformed = _broken(lambda s: s["robots"].__setitem__("r", ["0.8"]))
    slots = Slots(1, 1, 0)
    with pytest.raises(ValueError, match="^scenario 1: robots.goal.0. is 0 m from"):
        scenarios_from_dicts([ONE_ROBOT, at_goal, malformed], slots)
    with pytest.raises(ValueError, match="^scenario 1: scenario key robots.r must hold numbers"):
        scenarios_from_dicts([ONE_ROBOT, malformed, at_goal], slots)


@pytest.mark.parametrize(("angle", "seen"), [(0.4, True), (0.3, False), (6.283185307179586, True)])
def test_perception_sector_limits_detection(angle: float, seen: bool) -> None:
    # the obstacle sits at bearing atan2(4, 8) - 0.3 = 0.164 rad in the robot frame
    scenario = _broken(lambda s: s["robots"]["perception"].__setitem__("angle", [angle]))
    scenario["robots"]["perception"]["pos_std"] = [0.0]
    scenario["robots"]["perception"]["vel_std"] = [0.0]
    sim = MarineNavSimulator.from_scenarios([scenario], dtype=torch.float64)
    assert bool(sim.observation.objects_mask[0, 0, 0]) == seen


def test_objects_beyond_range_are_not_seen() -> None:
    far = _broken(lambda s: s["env"]["obstacles"].__setitem__("positions", [[20.0, 41.5]]))
    sim = MarineNavSimulator.from_scenarios([far], dtype=torch.float64)
    # 21.5 m away: beyond range 20 + radius 1 even with the largest noisy radius
    assert not sim.observation.objects_mask.any()
    near = _broken(lambda s: s["env"]["obstacles"].__setitem__("positions", [[20.0, 40.5]]))
    near["robots"]["perception"]["r_mean_ratio"] = [1.0]
    near["robots"]["perception"]["pos_std"] = [0.0]
    sim = MarineNavSimulator.from_scenarios([near], dtype=torch.float64)
    assert bool(sim.observation.objects_mask[0, 0, 0])  # 20.5 m <= 20 + 1


def _events(**flags: list[list]) -> StepEvents:
    """Step events of 3 environments x 4 robot slots (float64); unnamed flags are false."""
    tensor = lambda key, kind: torch.tensor(flags[key], dtype=kind)  # noqa: E731
    false = torch.zeros(3, 4, dtype=torch.bool)
    return StepEvents(
        acted=tensor("acted", torch.bool),
        deactivated=tensor("deactivated", torch.bool) if "deactivated" in flags else false,
        goal_distance_before=torch.full((3, 4), 20.0, dtype=torch.float64),
        goal_distance_after=20.0 - tensor("progress", torch.float64),
        apply_colregs=tensor("apply_colregs", torch.bool) if "apply_colregs" in flags else false,
        turn_angle=tensor("turn_angle", torch.float64),
        collision=tensor("collision", torch.bool),
        reach_goal=tensor("reach_goal", torch.bool),
        timeout=torch.tensor([False, True, False]),
    )


def test_rules_reward_outcome_and_termination_follow_the_spec() -> None:
    """The reward, outcome and termination rules (docs/simulator.md, "The model in equations",
    "Episode rules") with hand-computed numbers. Env 0 (defaults): a normal step (+0.3 m), a
    COLREGs turn of 0.5 rad still needed, collision and goal on one step (collision wins), a
    goal. Env 1: the step limit (no terminal reward, every acting robot truncated), a robot
    deactivated after reaching its goal and a padding slot. Env 2: its own constants."""
    scenario = default_scenario(3, 4, 0, 0, dtype=torch.float64)
    scenario.robot_present[:] = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]]).bool()
    scenario.collision_penalty[2] = -1.0
    scenario.goal_reward[2] = 3.0
    scenario.timestep_penalty[2] = -0.5
    events = _events(
        acted=[[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]],
        deactivated=[[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]],
        progress=[[0.3, 0.0, 0.0, 1.0], [0.2, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0]],
        apply_colregs=[[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]],
        turn_angle=[[0.0, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
        collision=[[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]],
        reach_goal=[[0, 0, 1, 1], [0, 0, 1, 0], [0, 1, 0, 0]],
    )
    expected_reward = torch.tensor(
        [[0.2, -0.15, -5.1, 10.9], [0.0, -0.1, 0.0, 0.0], [-1.5, 3.0, 0.0, 0.0]],
        dtype=torch.float64,
    )
    torch.testing.assert_close(step_reward(scenario, events), expected_reward)
    torch.testing.assert_close(
        terminal_reward(scenario, events)[:, :2],
        torch.tensor([[0.0, 0.0], [0.0, 0.0], [-1.0, 3.0]], dtype=torch.float64),
    )
    I = InfoState  # noqa: E741
    assert outcome_codes(scenario, events).tolist() == [
        [I.NORMAL, I.NORMAL, I.COLLISION, I.REACH_GOAL],
        [I.TOO_LONG_EPISODE, I.TOO_LONG_EPISODE, I.DEACTIVATED_AFTER_REACHING_GOAL, I.EMPTY_SLOT],
        [I.COLLISION, I.REACH_GOAL, I.EMPTY_SLOT, I.EMPTY_SLOT],
    ]
    end = terminate(scenario, events)
    assert end.done.tolist() == [[0, 0, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]
    assert end.terminated.tolist() == [[0, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]]
    assert end.truncated.tolist() == [[0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]]
    # a collision on the timeout step still deactivates (the trainer's rule)
    assert end.deactivated.tolist() == [[0, 0, 1, 1], [0, 1, 1, 0], [1, 1, 0, 0]]
    assert end.env_done.tolist() == [False, True, True]
    assert end.env_truncated.tolist() == [False, True, False]
    steps = torch.tensor([999, 1000, 1001])
    assert step_limit_reached(steps, 1000).tolist() == [False, True, True]
