"""``MarineNavEnv``: specs, multi-agent keys, partial resets, collectors, fixture replay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torchrl.collectors import Collector
from torchrl.envs.utils import check_env_specs

from marinenav.envs import MarineNavEnv
from marinenav.envs.trail import TrailRecorder
from marinenav.scenarios import HarbourLayout
from marinenav.sim import InfoState
from marinenav.sim.scenario_json import load_scenario_file
from tests.reference_data import REFERENCE_DIR
from tests.sync_utils import count_read_backs, take_the_cuda_code_path

ONE_ROBOT = json.loads((Path(__file__).parent / "data" / "one_robot_one_obstacle.json").read_text())
KINDS = ["discrete", "continuous"]


def _random_action(env: MarineNavEnv, gen: torch.Generator) -> TensorDict:
    E, R = env.num_envs, env.num_robots
    if env.action_kind == "discrete":
        action = torch.randint(0, 25, (E, R), generator=gen)
    else:
        action = torch.rand((E, R, 2), generator=gen) * 2 - 1
    return TensorDict({("agents", "action"): action}, batch_size=[E])


@pytest.mark.parametrize("kind", KINDS)
def test_check_env_specs(kind: str) -> None:
    env = MarineNavEnv(3, kind, seed=0)
    check_env_specs(env, seed=1)
    assert env.full_done_spec["agents", "done"].shape == (3, 5, 1)
    assert env.full_done_spec["done"].shape == (3, 1)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", KINDS)
def test_check_env_specs_cuda(kind: str) -> None:
    check_env_specs(MarineNavEnv(3, kind, device="cuda"))


@pytest.mark.parametrize("kind", KINDS)
def test_reset_and_step_shapes_and_dtypes(kind: str) -> None:
    env = MarineNavEnv(4, kind, dtype=torch.float64)
    td = env.reset()
    agents = td["agents"]
    assert agents.batch_size == (4, 5)
    assert agents["self_state"].shape == (4, 5, 7) and agents["self_state"].dtype == torch.float64
    assert agents["objects"].shape == (4, 5, 5, 5)
    assert agents["objects_mask"].dtype == torch.bool and agents["active"].dtype == torch.bool
    # stage 0 of the default curriculum: 3 robots in 5 slots
    assert agents["active"].sum(-1).tolist() == [3, 3, 3, 3]
    td = env.rand_step(td)
    nxt = td["next"]
    assert nxt["agents", "reward"].shape == (4, 5, 1)
    assert nxt["agents", "reward"].dtype == torch.float64
    assert nxt["done"].shape == (4, 1) and nxt["agents", "done"].shape == (4, 5, 1)
    action = td["agents", "action"]
    assert action.shape == ((4, 5) if kind == "discrete" else (4, 5, 2))


def test_partial_reset_touches_only_masked_envs() -> None:
    env = MarineNavEnv(4, "discrete", seed=3)
    td = env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        td = env.step(td.update(_random_action(env, gen)))["next"]
    before = td.clone()
    reset = torch.tensor([[True], [False], [False], [True]])
    after = env.reset(td.clone().set("_reset", reset))
    keep = ~reset.squeeze(-1)
    for key in ("self_state", "objects", "objects_mask", "active"):
        assert torch.equal(after["agents", key][keep], before["agents", key][keep]), key
    assert not torch.equal(
        after["agents", "self_state"][~keep], before["agents", "self_state"][~keep]
    )
    assert (env.sim.episode_steps == torch.tensor([0, 3, 3, 0])).all()


@pytest.mark.parametrize("kind", KINDS)
def test_collector_rollouts_keep_terminal_observations(kind: str) -> None:
    torch.manual_seed(0)  # the collector's random policy draws from the global stream
    env = MarineNavEnv(2, kind, num_robots=2, num_obstacles=1, max_episode_steps=15, seed=1)
    collector = Collector(env, policy=None, frames_per_batch=2 * 40, total_frames=2 * 80)
    batches = list(collector)
    collector.shutdown()
    assert len(batches) == 2
    data = batches[0]
    assert data.batch_size == (2, 40)
    ended = data["next", "done"].squeeze(-1)  # [2, 40]
    assert ended.any(), "an episode of 16 steps must end within 40"
    for e, t in ended.nonzero().tolist():
        # the episode ended by the step limit or by its last robot's collision or arrival,
        # and the stored next observation is the terminal one, not the reset one
        agents = data["next", "agents"]
        assert (agents["truncated"][e, t] | agents["terminated"][e, t]).any()
        if t + 1 < data.shape[1]:
            restarted = data["agents", "self_state"][e, t + 1]
            terminal = data["next", "agents", "self_state"][e, t]
            assert not torch.equal(restarted, terminal)
            assert data["agents", "active"][e, t + 1].sum() == 2
    # robots inactive before a step get no reward
    inactive = ~data["agents", "active"]
    assert (data["next", "agents", "reward"][inactive] == 0).all()


def test_step_and_maybe_reset_resets_only_finished_envs() -> None:
    env = MarineNavEnv.from_scenarios([ONE_ROBOT, ONE_ROBOT], max_episode_steps=2)
    td = env.reset()
    zero = torch.zeros(2, 1, dtype=torch.long)
    for _ in range(3):
        td.set(("agents", "action"), zero)
        data, td = env.step_and_maybe_reset(td)
    assert data["next", "truncated"].all() and data["next", "agents", "truncated"].all()
    assert not data["next", "agents", "terminated"].any()
    assert (env.sim.episode_steps == 0).all()
    assert td["agents", "active"].all()


def test_inactive_robot_transitions_are_flagged_and_unrewarded() -> None:
    scenario = json.loads(json.dumps(ONE_ROBOT))
    scenario["robots"]["goal"] = [[22.0, 20.6]]  # 2.09 m away: reached on the first step
    scenario["robots"]["init_velocity_r"] = [[0.5, 0.0, 0.0]]
    env = MarineNavEnv.from_scenarios([scenario], robot_slots=2, dtype=torch.float64)
    td = env.reset()
    assert td["agents", "active"].tolist() == [[True, False]]
    assert td["agents", "done"].squeeze(-1).tolist() == [[False, True]]  # padding slot
    td.set(("agents", "action"), torch.zeros(1, 2, dtype=torch.long))
    out = env.step(td)["next"]
    assert int(out["agents", "info"][0, 0]) == InfoState.REACH_GOAL
    assert out["agents", "terminated"][0, 0].item() and not out["agents", "truncated"].any()
    assert out["terminated"].item() and out["done"].item()
    assert not out["agents", "active"][0, 0].item()
    assert out["agents", "reward"][0, 1].item() == 0.0


def test_end_on_collision_ends_the_episode() -> None:
    paths = sorted(REFERENCE_DIR.glob("reference_*.json"))
    if not paths:
        pytest.skip("no reference fixtures")
    data = json.loads(paths[0].read_text())
    env = MarineNavEnv.from_scenarios(
        load_scenario_file(paths[0]), action_kind="discrete", end_on_collision=True,
        dtype=torch.float64,
    )  # fmt: skip
    td = env.reset()
    for t, step in enumerate(data["steps"]):
        actions = torch.tensor([[a if a is not None else 0 for a in step["actions"]]])
        out = env.step(td.set(("agents", "action"), actions))["next"]
        collided = any(r["info"] == "collision" for r in step["robots"])
        assert out["done"].item() == collided, f"step {t}"
        if collided:
            assert out["terminated"].item()
            break
        td = out


@pytest.mark.parametrize("index", [1, 6])
def test_env_replays_a_reference_recording(index: int) -> None:
    path = REFERENCE_DIR / f"reference_{index:03d}.json"
    if not path.exists():
        pytest.skip("no reference fixtures")
    data = json.loads(path.read_text())
    kind = data["action_kind"]
    env = MarineNavEnv.from_scenarios(load_scenario_file(path), action_kind=kind,
                                      dtype=torch.float64)  # fmt: skip
    td = env.reset()
    for t, step in enumerate(data["steps"]):
        if kind == "discrete":
            actions = torch.tensor([[a if a is not None else 0 for a in step["actions"]]])
        else:
            actions = torch.tensor(
                [[a if a is not None else [0.0, 0.0] for a in step["actions"]]],
                dtype=torch.float64,
            )
        assert td["agents", "active"][0].tolist() == [a is not None for a in step["actions"]]
        out = env.step(td.set(("agents", "action"), actions))["next"]
        for i, rec in enumerate(step["robots"]):
            reward = out["agents", "reward"][0, i, 0].item()
            assert reward == pytest.approx(rec["reward"], rel=1e-6, abs=1e-6), f"step {t}"
            assert out["agents", "done"][0, i, 0].item() == rec["done"]
            if rec["self_obs"] is not None:
                torch.testing.assert_close(
                    out["agents", "self_state"][0, i],
                    torch.tensor(rec["self_obs"], dtype=torch.float64), rtol=1e-6, atol=1e-6,
                )  # fmt: skip
        td = out


def test_set_seed_reproduces() -> None:
    def run() -> torch.Tensor:
        env = MarineNavEnv(3, "continuous")
        env.set_seed(42)
        torch.manual_seed(0)
        return env.rollout(20, break_when_any_done=False)["next", "agents", "self_state"]

    assert torch.equal(run(), run())


def test_step_and_reset_make_no_read_back() -> None:
    env = MarineNavEnv(4, "discrete", validate=False, max_episode_steps=10)
    take_the_cuda_code_path(env.sim)
    td = env.reset()
    gen = torch.Generator().manual_seed(0)
    with count_read_backs() as counts:
        for _ in range(40):
            out = env._step(td.update(_random_action(env, gen)))
            td = env._reset(TensorDict({"_reset": out["done"]}, batch_size=[4]))
    assert sum(counts.values()) == 0, dict(counts)


def test_bad_construction() -> None:
    with pytest.raises(ValueError, match="not several"):
        MarineNavEnv(2, num_robots=3, schedule={"timesteps": [0], "num_robots": [3],
                                                "num_cores": [0], "num_obstacles": [0],
                                                "min_start_goal_dis": [30.0]})  # fmt: skip
    with pytest.raises(ValueError, match="not several"):
        MarineNavEnv(2, num_robots=3, layout=HarbourLayout())
    with pytest.raises(ValueError, match="action_kind"):
        MarineNavEnv(2, "hybrid")


def test_render_draws_the_environment(tmp_path: Path) -> None:
    env = MarineNavEnv(2, "continuous", num_robots=3, num_obstacles=2, num_cores=2, seed=0)
    td = env.reset()
    for _ in range(10):
        td = env.rand_step(td)["next"]
    image = env.render(path=tmp_path / "frame.png")
    assert image.shape == (600, 600, 3) and image.dtype == np.uint8
    assert (tmp_path / "frame.png").stat().st_size > 10_000
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # not blank
    assert env.trail.trail().shape == (11, 3, 2)


def test_envs_import_no_drawing_code() -> None:
    """The environments load neither ``marinenav.viz`` nor matplotlib (drawing is imported only
    by ``render``); a fresh interpreter, since this one may have loaded them already."""
    code = (
        "import sys\n"
        "import marinenav.envs, marinenav.envs.pettingzoo_adapter\n"
        "print(sorted({m.split('.')[0] if m.startswith('matplotlib') else m for m in sys.modules"
        " if m.startswith(('matplotlib', 'marinenav.viz'))}))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_trail_recorder_keeps_the_current_episode_only() -> None:
    """The trail holds the positions since the last reset of the drawn environment, one row per
    step; ``marinenav.viz`` re-exports the same class."""
    from marinenav.viz import TrailRecorder as VizTrailRecorder

    assert VizTrailRecorder is TrailRecorder
    env = MarineNavEnv(2, "continuous", num_robots=2, seed=0, render_env=1)
    td = env.reset()
    for _ in range(4):
        td = env.rand_step(td)["next"]
    assert env.trail.trail().shape == (5, 2, 2)
    env.reset()
    trail = env.trail.trail()
    assert trail.shape == (1, 2, 2)
    np.testing.assert_array_equal(trail[0], env.sim.state.pos[1].numpy())
    with pytest.raises(ValueError, match="env_index"):
        TrailRecorder(env.sim, 2)
