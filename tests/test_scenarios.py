"""Scenario layouts as plug-ins (marinenav.scenarios): the default reproduces the curriculum's
random scenarios, the harbour and files layouts keep their promises, a layout written in a test
plugs into the simulator, the trainer and the evaluator, and the reward is reported by term."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from marinenav.evaluate import main as evaluate_main
from marinenav.scenarios import (
    LAYOUTS,
    HarbourLayout,
    RandomLayout,
    ScenarioLayout,
    make_layout,
    register_layout,
)
from marinenav.scenarios.base import DeviceConstant
from marinenav.sim import InfoState, MarineNavSimulator, save_scenario_file
from marinenav.sim.constants import VesselRole
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule, CurriculumTable
from marinenav.sim.generation import generate_scenarios
from marinenav.sim.rules import REWARD_TERMS
from marinenav.sim.scenario import Scenario, Slots, default_scenario
from marinenav.sim.traffic import cruise_thrust
from marinenav.training.config import layout_of
from marinenav.training.trainer import Trainer
from tests.run_utils import logged_scalars, tiny_config

SHORT = CurriculumSchedule(
    timesteps=[0, 64, 128], num_robots=[2, 3, 4], num_cores=[0, 1, 2], num_obstacles=[1, 2, 3],
    min_start_goal_dis=[20.0, 25.0, 30.0],
)  # fmt: skip


def _equal(a: Scenario, b: Scenario) -> None:
    for name, value in a.tensors().items():
        assert torch.equal(value, getattr(b, name)), name


# ---------------------------------------------------------------------------- random (default)
def test_the_default_layout_is_the_curriculum_sampler_step_for_step() -> None:
    """The simulator's default scenarios equal the sampler called directly with the stage
    counts of the clock, over stage changes, from the same seed (E = 8, 5 resets)."""
    sim = MarineNavSimulator(8, schedule=SHORT, seed=7)
    assert isinstance(sim.layout, RandomLayout)
    table = CurriculumTable(SHORT)
    base = default_scenario(8, *sim.layout.slots)
    stages = set()
    for _ in range(5):
        generator = torch.Generator()
        generator.set_state(sim.generator.get_state())
        step = sim.curriculum_step.clone()
        stages.add(int(table.stage_index(step)))  # host: test
        sim.reset()
        expected = generate_scenarios(base, *table.stage_params(step, 8), generator=generator)
        _equal(sim.scenario, expected)
        for _ in range(10):  # 80 timesteps: the clock crosses a stage start
            sim.step(torch.zeros(8, sim.robot_slots, dtype=torch.int64))
    assert stages == {0, 1, 2}
    assert int(sim.curriculum_step) == 400  # host: test


def test_a_run_config_gives_the_random_layout_of_its_curriculum() -> None:
    cfg = tiny_config("curriculum.timesteps=[0,80]", "curriculum.num_robots=[2,3]",
                      "curriculum.num_obstacles=[0,1]", "curriculum.num_cores=[0,0]",
                      "curriculum.min_start_goal_dis=[30.0,35.0]")  # fmt: skip
    layout = layout_of(cfg)
    assert isinstance(layout, RandomLayout)
    assert layout.schedule.timesteps == (0, 80) and layout.schedule.num_robots == (2, 3)
    assert layout.slots == Slots(3, 1, 0)
    # a checkpoint's config of an earlier version (no scenario node) gets the same
    saved = {"curriculum": dict(cfg.curriculum)}
    assert layout_of(saved).schedule == layout.schedule


def test_the_random_evaluation_set_is_unchanged_by_the_layout() -> None:
    """``named_scenarios`` and the layout's own set are one function of (schedule, seed)."""
    from marinenav.training.evaluation import evaluation_scenarios, named_scenarios

    paper = named_scenarios("paper")
    assert len(paper) == 60
    assert paper == evaluation_scenarios(DEFAULT_TRAINING_SCHEDULE, 10, 253, (5, 4, 0))
    robots = [s["env"]["num_robots"] for s in paper]
    assert robots == [3] * 10 + [4] * 10 + [5] * 40  # stage by stage, the paper's counts


def _random_with(traffic: float, n: int = 512, seed: int = 3, **options) -> Scenario:
    """Stage 2 of SHORT (four vessels, cores), from ``seed``, with traffic at ``traffic``."""
    fields = {name: list(getattr(SHORT, name)) for name in (
        "timesteps", "num_robots", "num_cores", "num_obstacles", "min_start_goal_dis")}  # fmt: skip
    layout = make_layout("random", {**fields, "traffic": traffic, **options})
    base = default_scenario(n, *layout.slots, dtype=torch.float64)
    step = torch.tensor(200, dtype=torch.int64)
    return layout.generate(base, step, torch.Generator().manual_seed(seed))


def test_random_traffic_off_is_the_original_episodes_and_stream() -> None:
    """``traffic=0`` draws nothing: the episodes equal the sampler's, every vessel the
    policy's, and the generator is where the sampler leaves it."""
    layout = make_layout("random", {"traffic": 0.0})
    base = default_scenario(16, *layout.slots)
    step = torch.tensor(0, dtype=torch.int64)
    ours, theirs = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    got = layout.generate(base, step, ours)
    table = CurriculumTable(layout.schedule)
    _equal(got, generate_scenarios(base, *table.stage_params(step, 16), generator=theirs))
    assert torch.equal(ours.get_state(), theirs.get_state())
    assert bool((got.robot_role == 0).all())


def test_random_traffic_holds_course_for_its_goal_at_its_speed() -> None:
    """With ``traffic``, about that share of the vessels after the first hold course: each
    heads from its start straight for its goal, under way at ``traffic_speed`` with the
    thrusts that keep it there; the first vessel and the placement stay as without traffic."""
    plain, mixed = _random_with(0.0), _random_with(0.4, traffic_speed=2.0)
    for name in ("robot_present", "start", "goal", "obstacle_present", "core_present"):
        assert torch.equal(getattr(plain, name), getattr(mixed, name)), name
    hold = mixed.robot_role == int(VesselRole.HOLD)
    others = mixed.robot_present.clone()
    others[:, 0] = False
    assert not bool(hold[:, 0].any()) and bool((hold <= others).all())
    share = float(hold.sum() / others.sum())  # host: test
    assert 0.35 < share < 0.45  # about 1,500 vessels at chance 0.4
    course = mixed.goal - mixed.start
    heading = torch.atan2(course[..., 1], course[..., 0]).remainder(2 * math.pi)
    torch.testing.assert_close(mixed.init_theta[hold], heading[hold])
    speed = torch.linalg.vector_norm(mixed.init_velocity_r[..., :2], dim=-1)
    torch.testing.assert_close(speed[hold], torch.full_like(speed[hold], 2.0))
    along = (mixed.init_velocity_r[..., :2] * course).sum(-1)
    assert bool((along[hold] > 0).all())  # toward the goal, not away
    thrust = float(cruise_thrust(torch.tensor(2.0, dtype=torch.float64)))
    assert bool((mixed.init_thrust[hold] == thrust).all())
    policy = ~hold
    for name in ("init_theta", "init_velocity_r", "init_thrust"):
        assert torch.equal(getattr(mixed, name)[policy], getattr(plain, name)[policy]), name


def test_random_traffic_sails_straight_and_the_set_to_measure_on_stays_the_originals() -> None:
    """In the simulator a holding vessel of the random layout keeps its speed along its
    start-goal line (no cores in stage 0); the evaluation set has no traffic."""
    layout = make_layout("random", {"traffic": 1.0, "num_cores": [0] * 6})
    sim = MarineNavSimulator(32, "continuous", *layout.slots, layout=layout, seed=1,
                             dtype=torch.float64)  # fmt: skip
    sim.reset()
    hold = sim.scenario.robot_role == int(VesselRole.HOLD)
    assert bool(hold.any())
    for _ in range(4):
        sim.step(torch.zeros(32, sim.robot_slots, 2, dtype=torch.float64))
    course = sim.scenario.goal - sim.scenario.start
    made = sim.state.pos - sim.scenario.start
    off_line = (course[..., 0] * made[..., 1] - course[..., 1] * made[..., 0]).abs()
    off_line = off_line / torch.linalg.vector_norm(course, dim=-1)
    assert float(off_line[hold].max()) < 1e-6  # host: test
    speed = torch.linalg.vector_norm(sim.state.velocity[..., :2], dim=-1)
    torch.testing.assert_close(speed[hold], torch.full_like(speed[hold], 1.5))
    assert layout.evaluation_scenarios(10, 253, (5, 4, 0)) == make_layout(
        "random", {"num_cores": [0] * 6}
    ).evaluation_scenarios(10, 253, (5, 4, 0))


@pytest.mark.parametrize(
    ("options", "message"),
    [({"traffic": 1.5}, "scenario.traffic must be in [0, 1]"),
     ({"traffic": -0.1}, "scenario.traffic must be in [0, 1]"),
     ({"traffic_speed": 4.0}, "scenario.traffic_speed must be in [0.5, 3] m/s")],
)  # fmt: skip
def test_bad_random_traffic_options_are_refused_in_one_line(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make_layout("random", options)


# ---------------------------------------------------------------------------- harbour
def _harbour(n: int = 256, seed: int = 0, **options) -> tuple[HarbourLayout, Scenario]:
    layout = make_layout("harbour", options)
    base = default_scenario(n, *layout.slots, dtype=torch.float64)
    step = torch.zeros((), dtype=torch.int64)
    return layout, layout.generate(base, step, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    "options",
    [{}, {"northbound": 3, "southbound": 3, "crossing": 2, "boats_per_bank": 6},
     {"channel_width": 18.0, "boat_radius": 0.5, "crossing": 0}],
)  # fmt: skip
def test_harbour_scenarios_start_clear_and_in_their_lanes(options: dict) -> None:
    layout, s = _harbour(**options)
    c = layout.config
    vessels = c.northbound + c.southbound + c.crossing
    assert s.robot_present.sum(1).eq(vessels).all()
    assert s.obstacle_present.sum(1).eq(2 * c.boats_per_bank).all()
    start, goal, r = s.start[:, :vessels], s.goal[:, :vessels], s.radius[:, :vessels]
    # no two hulls touch at the start, and no hull touches a moored boat
    apart = torch.cdist(start, start) + torch.eye(vessels) * 1e3
    assert (apart > r[:, :, None] + r[:, None, :]).all()
    if c.boats_per_bank:
        to_boats = torch.cdist(start, s.obstacle_pos[:, : 2 * c.boats_per_bank])
        assert (to_boats > r[..., None] + c.boat_radius).all()
    assert (torch.linalg.vector_norm(goal - start, dim=-1) > s.goal_dis[:, :vessels]).all()
    assert ((goal >= 0) & (goal <= 55)).all() and ((start >= 0) & (start <= 55)).all()
    # keep to starboard: northbound on +y heading +x, southbound on -y heading -x
    centre = 27.5
    north, south = slice(0, c.northbound), slice(c.northbound, c.northbound + c.southbound)
    assert (start[:, north, 1] > centre).all() and (goal[:, north, 0] > start[:, north, 0]).all()
    assert (start[:, south, 1] < centre).all() and (goal[:, south, 0] < start[:, south, 0]).all()
    crossing = slice(c.northbound + c.southbound, vessels)
    assert (start[:, crossing, 1] < centre).all() and (goal[:, crossing, 1] > centre).all()
    bearing = torch.atan2(*(goal - start).unbind(-1)[::-1])
    off = torch.remainder(s.init_theta[:, :vessels] - bearing + math.pi, 2 * math.pi) - math.pi
    assert off.abs().max() <= math.pi / 6 + 1e-9
    # the boats lie on the banks, channel_width apart
    boats_y = s.obstacle_pos[:, : 2 * c.boats_per_bank, 1]
    assert torch.allclose((boats_y - centre).abs(), torch.tensor(c.channel_width / 2,
                                                                 dtype=torch.float64))  # fmt: skip


def test_harbour_is_a_function_of_the_seed() -> None:
    _, a = _harbour(seed=3)
    _, b = _harbour(seed=3)
    _, c = _harbour(seed=4)
    _equal(a, b)
    assert not torch.equal(a.start, c.start)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"northbound": 4}, "scenario.northbound must be an integer in \\[0, 3\\]"),
     ({"crossing": -1}, "scenario.crossing"),
     ({"northbound": 0, "southbound": 0, "crossing": 0}, "at least one vessel"),
     ({"channel_width": 12.0}, "leaves no traffic lanes; it must be at least"),
     ({"boat_radius": 0.0}, "scenario.boat_radius"),
     ({"boats": 3}, "has no option 'boats'; its options: boat_radius, boats_per_bank")],
)  # fmt: skip
def test_bad_harbour_options_are_refused_in_one_line(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_layout("harbour", options)


def test_a_simulator_too_small_for_a_layout_says_which_slots() -> None:
    with pytest.raises(ValueError, match="places up to 6 obstacles .* env.obstacle_slots=6"):
        MarineNavSimulator(2, layout=HarbourLayout(), obstacle_slots=4)


# ---------------------------------------------------------------------------- files
def _file_of(layout: ScenarioLayout, path: Path, episodes: int, seed: int) -> list[dict]:
    dicts = layout.evaluation_scenarios(episodes, seed, layout.slots)
    save_scenario_file(dicts, path)
    return dicts


def test_files_layout_draws_the_files_episodes_uniformly(tmp_path: Path) -> None:
    first = _file_of(HarbourLayout(), tmp_path / "a.json", 2, seed=1)
    second = _file_of(RandomLayout(schedule=SHORT), tmp_path / "b.json", 1, seed=2)
    second[0]["env"]["goal_reward"] = 25.0  # a file's constants win
    save_scenario_file(second, tmp_path / "b.json")
    layout = make_layout("files", {"paths": [str(tmp_path / "a.json"), str(tmp_path / "b.json")]})
    assert layout.evaluation_scenarios(10, 0, layout.slots) == first + second  # once, in order
    templates = layout.templates(default_scenario(1, *layout.slots))
    base = default_scenario(3000, *layout.slots)
    drawn = layout.generate(base, torch.zeros((), dtype=torch.int64),
                            torch.Generator().manual_seed(0))  # fmt: skip
    # every drawn scenario is one of the 5 templates, each about a fifth of the time
    match = (drawn.start[:, None] == templates.start[None]).flatten(2).all(-1)  # [3000, 5]
    assert match.any(1).all()
    share = match.double().mean(0)
    assert ((share - 0.2).abs() < 0.03).all(), share
    edited = match[:, len(first)]  # the first episode of b.json
    assert (drawn.goal_reward[edited] == 25.0).all() and (drawn.goal_reward[~edited] == 10.0).all()


def test_files_layout_refuses_a_missing_list_or_a_bad_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs scenario.paths"):
        make_layout("files")
    (tmp_path / "bad.json").write_text("[1, 2]")
    layout = make_layout("files", {"paths": [str(tmp_path / "bad.json")]})
    with pytest.raises(ValueError, match="bad.json: episode 0: not an episode dict, got int$"):
        _ = layout.slots
    with pytest.raises(FileNotFoundError, match="no scenario file"):
        _ = make_layout("files", {"paths": [str(tmp_path / "none.json")]}).slots


# ---------------------------------------------------------------------------- plug-in
@dataclass
class _LineConfig:
    length: float = 30.0  # m from start to goal


class _Line(ScenarioLayout):
    """One vessel sailing a straight line along y = 10 m (what a user might write)."""

    name = "test_line"
    Config = _LineConfig

    def __init__(self, config: _LineConfig | None = None) -> None:
        self.config = config or _LineConfig()

    @property
    def slots(self) -> Slots:
        return Slots(1, 0, 0)

    def generate(self, base: Scenario, step, generator) -> Scenario:
        out = {name: value.clone() for name, value in base.tensors().items()}
        n = base.num_envs
        x0 = 5.0 + torch.rand(n, generator=generator, dtype=base.start.dtype)
        out["robot_present"][:, 0] = True
        out["start"][:, 0] = torch.stack((x0, torch.full_like(x0, 10.0)), -1)
        out["goal"][:, 0] = torch.stack((x0 + self.config.length, torch.full_like(x0, 10.0)), -1)
        return Scenario(**out)


@pytest.fixture
def line_layout():
    register_layout(_Line)
    yield _Line
    del LAYOUTS["test_line"]


def test_a_users_layout_plugs_into_the_simulator(line_layout) -> None:
    sim = MarineNavSimulator(4, layout=make_layout("test_line", {"length": 20.0}))
    assert (sim.scenario.robot_present.sum(1) == 1).all()
    assert torch.allclose((sim.scenario.goal - sim.scenario.start)[:, 0, 0], torch.tensor(20.0))
    with pytest.raises(ValueError, match="registered already"):
        register_layout(type("Other", (_Line,), {}))
    with pytest.raises(TypeError, match="needs a dataclass Config"):
        register_layout(type("NoConfig", (_Line,), {"Config": None, "name": "x"}))
    assert dataclasses.is_dataclass(LAYOUTS["test_line"].Config)


# ---------------------------------------------------------------------------- reward terms
def test_reward_terms_add_up_to_the_reward_and_follow_the_rules() -> None:
    sim = MarineNavSimulator(32, schedule=SHORT, seed=0)
    generator = torch.Generator().manual_seed(1)
    names = list(REWARD_TERMS)
    seen_terminal = set()
    for _ in range(120):
        actions = torch.randint(25, (32, sim.robot_slots), generator=generator)
        before = sim.state.pos.clone()
        goal, penalty = sim.scenario.goal.clone(), sim.scenario.timestep_penalty.clone()
        r = sim.step(actions)
        terms = r.reward_terms
        assert terms.shape == (32, sim.robot_slots, len(names))
        assert torch.equal(terms.sum(-1) if len(names) == 1 else
                           terms[..., 0] + terms[..., 1] + terms[..., 2], r.reward)  # fmt: skip
        acted = r.was_active
        progress = penalty[:, None] + (
            torch.linalg.vector_norm(goal - before, dim=-1)
            - torch.linalg.vector_norm(goal - sim.state.pos, dim=-1)
        )
        assert torch.allclose(terms[..., 0][acted], progress[acted], atol=1e-5)
        assert (terms[..., 1] <= 0).all()
        terminal = terms[..., 2]
        assert (terminal[r.info == InfoState.COLLISION] == -5.0).all()
        assert (terminal[r.info == InfoState.REACH_GOAL] == 10.0).all()
        assert (terminal[(r.info == InfoState.NORMAL) | ~acted] == 0.0).all()
        assert (terms[~acted] == 0).all()
        seen_terminal |= set(terminal.unique().tolist())
        sim.reset(r.env_done)
    assert -5.0 in seen_terminal  # the run met collisions (random thrusts)


def _column(run_dir: Path, name: str) -> list[float]:
    return list(logged_scalars(run_dir, f"train/{name}").values())


def test_the_trainer_logs_each_terms_sum_per_episode(tmp_path: Path) -> None:
    """train/reward_<term> are the terms' per-episode sums (per robot, as the return): they
    add up to train/episode_return at every log."""
    trainer = Trainer(tiny_config("agent=dqn", "training.total_timesteps=400",
                                  "evaluation.max_steps=4"), tmp_path)  # fmt: skip
    trainer.train()
    returns = _column(tmp_path, "episode_return")
    terms = [_column(tmp_path, f"reward_{name}") for name in REWARD_TERMS]
    finished = [k for k, value in enumerate(returns) if not math.isnan(value)]
    assert finished, "no episode ended in the tiny run"
    for k in finished:
        # float32 steps summed in float64: equal to float32 round-off
        assert sum(term[k] for term in terms) == pytest.approx(returns[k], rel=1e-6, abs=1e-6)


# ---------------------------------------------------------------------------- train / evaluate
def test_train_and_evaluate_on_the_harbour(tmp_path: Path, capsys) -> None:
    cfg = tiny_config("agent=dqn", "scenario=harbour", "scenario.crossing=0",
                      "scenario.boats_per_bank=2", "env.robot_slots=4")  # fmt: skip
    trainer = Trainer(cfg, tmp_path)
    assert isinstance(trainer.env.sim.layout, HarbourLayout)
    assert trainer.env.sim.obstacle_slots == 6  # the harbour file's slots
    metrics = trainer.train()
    scenarios = json.loads((tmp_path / "eval_configs.json").read_text())
    assert len(scenarios) == 2 and len(metrics["episodes"]["success"]) == 2  # one stage
    assert all(len(s["env"]["obstacles"]["positions"]) == 4 for s in scenarios)
    assert evaluate_main([str(tmp_path), "--scenario", "harbour"]) == 0
    out = capsys.readouterr().out
    assert "(n=10)" in out and "success_rate_stage0" in out and "stage1" not in out
    # a named set of a run is its own layout's, with the run's options (it was the
    # random layout's 600 or 60 episodes, without a word)
    assert evaluate_main([str(tmp_path), "--set", "paper", "--max-steps", "5"]) == 0
    printed = capsys.readouterr()
    assert printed.err.splitlines()[-1] == (
        "marinenav: evaluated on the paper set of the run's layout, harbour (10 episodes)"
    )
    assert "(n=10)" in printed.out and "stage1" not in printed.out


def test_a_one_stage_layout_validates_on_100_episodes_and_the_random_layout_on_its_60() -> None:
    """The harbour (one stage) validated on the curriculum's 10 episodes, so its best
    checkpoint was chance; 100 give a binomial standard error of at most 0.05. The random
    layout's set (6 stages x 10, seed 253) is unchanged."""
    from marinenav.training.evaluation import EvaluationSet, run_conditions
    from tests.run_utils import compose_config

    harbour = compose_config("scenario=harbour")
    assert EvaluationSet.size_of_run(harbour) == 100 and layout_of(harbour).num_stages == 1
    assert run_conditions(harbour)["noise_seed"] == 253
    assert math.sqrt(0.25 / 100) == 0.05  # the worst case, a success rate of 0.5
    for recipe in ("fast", "paper"):
        random = compose_config(f"recipe={recipe}")
        assert EvaluationSet.size_of_run(random) == 60 and layout_of(random).num_stages == 6
        assert run_conditions(random)["noise_seed"] == 253


def test_train_on_scenario_files(tmp_path: Path) -> None:
    path = tmp_path / "set.json"
    dicts = _file_of(RandomLayout(schedule=SHORT), path, 2, seed=5)
    cfg = tiny_config("agent=dqn", "scenario=files", f"scenario.paths=[{path}]",
                      "env.core_slots=2")  # fmt: skip
    trainer = Trainer(cfg, tmp_path / "run")
    trainer.train()
    assert json.loads((tmp_path / "run" / "eval_configs.json").read_text()) == dicts


@pytest.mark.parametrize(
    ("overrides", "message"),
    [(["scenario=harbour", "env.obstacle_slots=4"], "set env.obstacle_slots=6 or more"),
     (["scenario=harbour", "scenario.northbound=5"], "scenario.northbound must be"),
     (["scenario=files", "scenario.paths=[/nonexistent/a.json]"], "no scenario file at"),
     (["scenario=files"], "needs scenario.paths"),
     (["scenario.traffic=2.0"], "scenario.traffic must be in [0, 1]"),
     (["scenario=mix", "+scenario.parts.open_water.options.traffic=2.0"],
      "scenario.traffic must be in [0, 1]")],
)  # fmt: skip
def test_bad_scenario_configs_fail_before_a_run_starts(overrides: list, message: str) -> None:
    from marinenav.training.validation import ConfigError, validate

    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(tiny_config("agent=dqn", *overrides))


def test_a_device_constant_is_copied_once_per_device() -> None:
    host = torch.tensor([0.25, 1.0], dtype=torch.float64)
    table = DeviceConstant(host)
    assert table.on(torch.device("cpu")) is host  # the host's own: no copy
    elsewhere = table.on(torch.device("meta"))  # a second device (meta: shapes only)
    assert elsewhere.device.type == "meta" and elsewhere.dtype == torch.float64
    assert elsewhere.shape == host.shape
    assert table.on(torch.device("meta")) is elsewhere  # kept, not copied again
