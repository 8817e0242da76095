"""Work-skipping perception (``perceive(compact=True)``, the eager CPU default): only the robots
that perceive and the candidate slots they may see are computed, with the same numbers, bit for
bit, as the dense path that computes every (robot, candidate) pair (the compiled and CUDA
path)."""

from __future__ import annotations

import pytest
import torch

import marinenav.sim.perception as perception
from marinenav.sim import MarineNavSimulator
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.sim.dynamics import VesselState


def _simulator(robots: int, obstacles: int, num_envs: int = 16, **kwargs) -> MarineNavSimulator:
    """5 robot and 4 obstacle slots, ``robots`` and ``obstacles`` of them filled."""
    schedule = CurriculumSchedule(
        timesteps=[0], num_robots=[robots], num_cores=[1], num_obstacles=[obstacles],
        min_start_goal_dis=[30.0],
    )  # fmt: skip
    return MarineNavSimulator(
        num_envs, schedule=schedule, robot_slots=5, obstacle_slots=4, core_slots=1,
        dtype=torch.float64, seed=3, validate=False, max_episode_steps=25, **kwargs,
    )  # fmt: skip


def _perceive(sim: MarineNavSimulator, active: torch.Tensor, compact: bool):
    noise = sim._draw_noise(sim.num_envs)
    return perception.perceive(
        sim.state, sim.scenario, active, noise, sim._radius_noise, sim._robot_index,
        sim._slot_index, compact=compact,
    )  # fmt: skip


def _assert_identical(a, b, where: str) -> None:
    for name in ("self_state", "objects", "objects_mask"):
        x, y = getattr(a.observation, name), getattr(b.observation, name)
        assert torch.equal(x, y), f"{where}: {name}"
    assert torch.equal(a.collision, b.collision), f"{where}: collision"
    assert torch.equal(a.reach_goal, b.reach_goal), f"{where}: reach_goal"


@pytest.mark.parametrize(("robots", "obstacles"), [(5, 4), (3, 0), (2, 1), (1, 0)])
def test_compact_perception_equals_dense_bit_for_bit(robots: int, obstacles: int, monkeypatch):
    """Same noise, same state: compact (always taken here) and dense give identical
    observations and flags, with some robots finished, whole environments done, and no robot
    perceiving at all."""
    monkeypatch.setattr(perception, "COMPACT_FRACTION", 2.0)
    sim = _simulator(robots, obstacles)
    gen = torch.Generator().manual_seed(0)
    finished = torch.rand(16, 5, generator=gen) < 0.3
    finished[:4] = True  # environments done
    for active in (sim.active, sim.active & ~finished, torch.zeros_like(sim.active)):
        for t in range(3):
            state = sim.generator.get_state()
            dense = _perceive(sim, active, compact=False)
            sim.generator.set_state(state)
            compact = _perceive(sim, active, compact=True)
            _assert_identical(dense, compact, f"{robots} robots, step {t}")
            sim.step(torch.randint(0, 25, (16, 5), generator=gen))


def test_compact_simulator_follows_the_dense_one() -> None:
    """Two simulators, compact and dense perception, driven with the same actions over 80 steps
    with resets (curriculum's first stage: 3 robots, no obstacles, where compaction is taken):
    states, flags and observations stay identical."""
    compact, dense = _simulator(3, 0), _simulator(3, 0)
    dense.compact_perception = False
    assert compact.compact_perception  # the CPU default
    gen = torch.Generator().manual_seed(1)
    for t in range(80):
        actions = torch.randint(0, 25, (16, 5), generator=gen)
        results = [sim.step(actions) for sim in (compact, dense)]
        assert torch.equal(results[0].reward, results[1].reward), t
        for sim, result in zip((compact, dense), results, strict=True):
            sim.reset(result.env_done)
        for name in VesselState.__dataclass_fields__:
            assert torch.equal(getattr(compact.state, name), getattr(dense.state, name)), name
        for name in ("self_state", "objects", "objects_mask"):
            a, b = getattr(compact.observation, name), getattr(dense.observation, name)
            assert torch.equal(a, b), f"step {t}: {name}"
        assert torch.equal(compact.collision, dense.collision)


def test_compaction_is_taken_only_where_it_skips_enough(monkeypatch) -> None:
    """Picking costs about a tenth of a dense perception: with every robot and candidate slot
    in use the dense path runs; with 3 of 5 robots and no obstacles (3 perceiving robots x 3
    visible candidate slots: 9 of the 5 x 9 pairs of an environment) the picked rows run."""
    rows_seen: list[int] = []
    original = perception._nearest_objects

    def spy(ego, *args):
        rows_seen.append(ego.pos.shape[:-1].numel())
        return original(ego, *args)

    full, first_stage = _simulator(5, 4), _simulator(3, 0)
    monkeypatch.setattr(perception, "_nearest_objects", spy)
    _perceive(full, full.active, compact=True)
    assert rows_seen == [16 * 5]  # dense: every robot slot
    rows_seen.clear()
    _perceive(first_stage, first_stage.active, compact=True)
    assert rows_seen == [16 * 3]  # compact: the 3 robots of each environment
