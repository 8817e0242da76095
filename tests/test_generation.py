"""Scenario generation: the acceptance rules, the shared 500-attempt budget, seeding
(docs/simulator.md, "Scenarios and the curriculum").

The property tests check every rule on thousands of generated scenarios; the equivalence tests
replay the very same candidate draws through a slow, one-candidate-at-a-time transcription of
the original's loops and require identical scenarios.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from marinenav.sim.constants import SCENARIO_ATTEMPTS
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE
from marinenav.sim.generation import (
    _accept_cores,
    _accept_obstacles,
    _accept_robots,
    _place_candidates,
    _sample_candidates,
    generate_scenarios,
)
from marinenav.sim.scenario import Scenario, default_scenario

GAMMA = 2 * math.pi * 0.5 * 3.0  # generated cores: 2 pi r v_edge with v_edge = 3
GENERATED = {
    "robot_present", "start", "goal", "init_theta", "init_velocity_r", "init_thrust",
    "init_thruster_angle", "obstacle_pos", "obstacle_radius", "obstacle_present", "core_pos",
    "core_clockwise", "core_gamma", "core_present",
}  # fmt: skip


def _generate(
    n: int,
    slots: tuple[int, int, int],
    counts: tuple[int, int, int],
    min_dis: float,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    base: Scenario | None = None,
) -> tuple[Scenario, tuple[torch.Tensor, ...]]:
    """Generate ``n`` scenarios with (robots, obstacles, cores) ``counts`` in ``slots``."""
    base = default_scenario(n, *slots, dtype=dtype) if base is None else base
    args = (
        torch.full((n,), counts[0]),
        torch.full((n,), counts[1]),
        torch.full((n,), counts[2]),
        torch.full((n,), min_dis, dtype=dtype),
    )
    generator = torch.Generator().manual_seed(seed)
    return generate_scenarios(base, *args, generator=generator), args


def _pair_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``[n, K, 2], [n, L, 2] -> [n, K, L]`` Euclidean distances."""
    return np.linalg.norm(a[:, :, None, :] - b[:, None, :, :], axis=-1)


def _assert_rules_hold(s: Scenario, counts: tuple[torch.Tensor, ...], tol: float) -> None:
    """Every acceptance rule of the original for every present item, in float64 numpy with
    tolerance ``tol``."""
    t = {
        name: value.double().numpy() if value.is_floating_point() else value.numpy()
        for name, value in s.tensors().items()
    }
    num_robots, num_obstacles, num_cores, min_dis = (c.double().numpy() for c in counts)
    W, H = t["width"][:, None], t["height"][:, None]  # [n, 1]
    r, clear = t["core_radius"][:, None], t["clear_r"][:, None]

    for kind, present, requested in (
        ("robot", t["robot_present"], num_robots),
        ("obstacle", t["obstacle_present"], num_obstacles),
        ("core", t["core_present"], num_cores),
    ):
        # present slots form a prefix, never more than requested
        assert (present[:, 1:] <= present[:, :-1]).all(), kind
        assert (present.sum(1) <= requested).all(), kind

    # robots: boxes, start-goal distance, start-start and goal-goal clearance
    rp, start, goal = t["robot_present"], t["start"], t["goal"]
    for p in (start, goal):
        inside = (p >= 2).all(-1) & (p[..., 0] <= W - 2) & (p[..., 1] <= H - 2)
        assert inside[rp].all()
    assert (np.linalg.norm(goal - start, axis=-1) >= min_dis[:, None] - tol)[rp].all()
    both = rp[:, :, None] & rp[:, None, :] & ~np.eye(rp.shape[1], dtype=bool)
    for p in (start, goal):  # start-start and goal-goal only (a kept quirk)
        assert (_pair_distances(p, p) > clear[:, :, None] - tol)[both].all()
    assert (t["init_theta"][rp] >= 0).all() and (t["init_theta"][rp] < 2 * math.pi).all()
    assert (t["init_theta"][~rp] == 0).all()
    assert (start[~rp] == 0).all() and (goal[~rp] == 0).all()
    for name in ("init_velocity_r", "init_thrust", "init_thruster_angle"):
        assert (t[name] == 0).all(), name

    robot_points = np.concatenate([start, goal], axis=1)
    robot_points_present = np.concatenate([rp, rp], axis=1)

    # cores: inside (y upper bound uses the width), clearance to robots, pairwise rules
    cp, cpos, cw, gamma = t["core_present"], t["core_pos"], t["core_clockwise"], t["core_gamma"]
    x, y = cpos[..., 0], cpos[..., 1]
    inside = (x - r >= -tol) & (x + r <= W + tol) & (y - r >= -tol) & (y + r <= W + tol)
    assert inside[cp].all()
    lo, hi = t["v_range"][:, :1], t["v_range"][:, 1:]
    g_lo, g_hi = 2 * math.pi * r * lo, 2 * math.pi * r * hi
    assert ((gamma >= g_lo - tol) & (gamma <= g_hi + tol))[cp].all()
    d = _pair_distances(cpos, robot_points)
    pair = cp[:, :, None] & robot_points_present[:, None, :]
    assert (d >= (r + clear)[:, :, None] - tol)[pair].all()
    d = _pair_distances(cpos, cpos)
    pair = cp[:, :, None] & cp[:, None, :] & ~np.eye(cp.shape[1], dtype=bool)
    same = cw[:, :, None] == cw[:, None, :]
    v_rel = t["v_rel_max"][:, None, None]
    g_i, g_j = gamma[:, :, None], gamma[:, None, :]
    same_ok = d >= g_i / (2 * math.pi * v_rel) + g_j / (2 * math.pi * v_rel) - tol
    # opposite: reject iff v1 > p v2 with d >= 2r; i.e. accept iff d < 2r or
    # d - 2r >= max(G) r / (p min(G))
    rr, p = r[:, :, None], t["p"][:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # absent or zero-circulation cores
        limit = np.maximum(g_i, g_j) * rr / (p * np.minimum(g_i, g_j))
    opposite_ok = (d < 2 * rr + tol) | (d - 2 * rr >= limit - tol)
    assert np.where(same, same_ok, opposite_ok)[pair].all()
    assert (cpos[~cp] == 0).all() and (gamma[~cp] == 0).all() and not cw[~cp].any()

    # obstacles: box, radius range, clearance to robots and cores, no overlap
    op, opos, orad = t["obstacle_present"], t["obstacle_pos"], t["obstacle_radius"]
    inside = (opos >= 5 - tol).all(-1) & (opos[..., 0] <= W - 5 + tol)
    inside &= opos[..., 1] <= H - 5 + tol
    assert inside[op].all()
    lo, hi = t["obs_r_range"][:, :1], t["obs_r_range"][:, 1:]
    assert ((orad >= lo - tol) & (orad <= hi + tol))[op].all()
    d = _pair_distances(opos, robot_points)
    pair = op[:, :, None] & robot_points_present[:, None, :]
    need = (orad + clear)[:, :, None]
    assert (d >= need - tol)[pair].all()
    d = _pair_distances(opos, cpos)
    pair = op[:, :, None] & cp[:, None, :]
    need = (orad + r)[:, :, None]
    assert (d > need - tol)[pair].all()
    d = _pair_distances(opos, opos)
    pair = op[:, :, None] & op[:, None, :] & ~np.eye(op.shape[1], dtype=bool)
    assert (d > orad[:, :, None] + orad[:, None, :] - tol)[pair].all()
    assert (opos[~op] == 0).all() and (orad[~op] == 0).all()


SETTINGS = {
    # name: (slots (R, O, C), counts (robots, obstacles, cores), min start-goal distance)
    "stage0": ((5, 4, 0), (3, 0, 0), 30.0),
    "stage2": ((5, 4, 0), (5, 0, 0), 40.0),
    "stage5": ((5, 4, 0), (5, 4, 0), 40.0),
    "stage5_with_8_cores": ((5, 4, 8), (5, 4, 8), 40.0),
    "spec_a1_defaults": ((6, 8, 8), (6, 8, 8), 30.0),
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_rule_holds_on_2000_scenarios(name: str) -> None:
    slots, counts, min_dis = SETTINGS[name]
    s, args = _generate(2000, slots, counts, min_dis, seed=7)
    _assert_rules_hold(s, args, tol=1e-4)
    # the budget is essentially never hit at these settings
    for present, requested in zip(
        (s.robot_present, s.obstacle_present, s.core_present), counts, strict=True
    ):
        assert (present.sum(1) == requested).double().mean() > 0.99


def test_shipped_schedule_stages_get_their_full_counts() -> None:
    schedule = DEFAULT_TRAINING_SCHEDULE
    for k in range(schedule.num_stages):
        counts = (schedule.num_robots[k], schedule.num_obstacles[k], schedule.num_cores[k])
        s, _ = _generate(1000, (5, 4, 0), counts, schedule.min_start_goal_dis[k], seed=k)
        assert (s.robot_present.sum(1) == counts[0]).all(), k
        assert (s.obstacle_present.sum(1) == counts[1]).all(), k


def test_positions_and_headings_are_spread_uniformly() -> None:
    s, _ = _generate(2000, (5, 4, 0), (5, 4, 0), 40.0, seed=3)
    # every acceptance rule is symmetric about the map centre, so the means sit at 27.5 m
    # (per-coordinate standard error about 0.15 m for 10000 starts)
    start = s.start[s.robot_present].double()
    goal = s.goal[s.robot_present].double()
    obstacles = s.obstacle_pos[s.obstacle_present].double()
    for points in (start, goal, obstacles):
        centre = torch.full((2,), 27.5, dtype=torch.float64)
        torch.testing.assert_close(points.mean(0), centre, atol=0.6, rtol=0)
    # start coordinates cover the sampling box [2, 53]
    assert start.min() < 2.5 and start.max() > 52.5
    theta = s.init_theta[s.robot_present].double()
    assert abs(theta.mean().item() - math.pi) < 0.1
    assert abs(theta.var().item() - (2 * math.pi) ** 2 / 12) < 0.2


def test_requested_counts_per_environment_are_respected() -> None:
    n = 300
    base = default_scenario(n, 5, 4, 3)
    num_robots = torch.arange(n) % 6  # 0..5
    num_obstacles = torch.arange(n) % 5
    num_cores = torch.arange(n) % 4
    min_dis = torch.full((n,), 30.0)
    generator = torch.Generator().manual_seed(11)
    s = generate_scenarios(base, num_robots, num_obstacles, num_cores, min_dis, generator)
    assert torch.equal(s.robot_present.sum(1), num_robots)
    assert torch.equal(s.obstacle_present.sum(1), num_obstacles)
    assert torch.equal(s.core_present.sum(1), num_cores)
    _assert_rules_hold(s, (num_robots, num_obstacles, num_cores, min_dis), tol=1e-4)


def test_counts_above_the_slot_count_fill_the_slots() -> None:
    s, _ = _generate(50, (3, 2, 1), (9, 9, 9), 20.0)
    assert s.robot_present.all() and s.obstacle_present.all() and s.core_present.all()


def test_constants_come_from_base_and_are_copied() -> None:
    n = 20
    base = default_scenario(n, 5, 4, 0)
    base.radius.fill_(1.25)
    base.goal_reward.fill_(7.0)
    base.start.fill_(-1.0)
    s, _ = _generate(n, (5, 4, 0), (5, 4, 0), 40.0, base=base)
    for field in dataclasses.fields(Scenario):
        if field.name in GENERATED:
            continue
        assert torch.equal(getattr(s, field.name), getattr(base, field.name)), field.name
        assert getattr(s, field.name).data_ptr() != getattr(base, field.name).data_ptr()
    assert (s.start[s.robot_present] >= 2).all()  # not base's -1


def test_map_size_and_clear_r_of_base_are_used() -> None:
    n = 500
    base = default_scenario(n, 4, 3, 2)
    base.width.fill_(80.0)
    base.height.fill_(40.0)
    base.clear_r.fill_(6.0)
    base.obs_r_range[:, 0] = 0.5
    base.obs_r_range[:, 1] = 2.0
    base.v_range[:, 0] = 1.0
    s, args = _generate(n, (4, 3, 2), (4, 3, 2), 25.0, base=base, seed=5)
    _assert_rules_hold(s, args, tol=1e-4)
    assert s.start[..., 0].max() > 70 and s.start[..., 1].max() < 38
    radii = s.obstacle_radius[s.obstacle_present]
    assert radii.min() < 0.7 and radii.max() > 1.8
    assert s.core_gamma[s.core_present].min() < 2 * math.pi * 0.5 * 1.5


def test_same_seed_same_scenarios_and_different_seed_differs() -> None:
    a, _ = _generate(64, (5, 4, 2), (5, 4, 2), 40.0, seed=1)
    b, _ = _generate(64, (5, 4, 2), (5, 4, 2), 40.0, seed=1)
    c, _ = _generate(64, (5, 4, 2), (5, 4, 2), 40.0, seed=2)
    for name, value in a.tensors().items():
        assert torch.equal(value, getattr(b, name)), name
    for name in ("start", "goal", "init_theta", "obstacle_pos", "core_pos"):
        assert not torch.equal(getattr(a, name), getattr(c, name)), name


def test_float64_generation() -> None:
    s, args = _generate(500, (5, 4, 2), (5, 4, 2), 40.0, dtype=torch.float64, seed=4)
    for name, value in s.tensors().items():
        if value.is_floating_point():
            assert value.dtype == torch.float64, name
    _assert_rules_hold(s, args, tol=1e-9)
    assert s.robot_present.all() and s.obstacle_present.all() and s.core_present.all()


def test_generate_is_sample_then_place() -> None:
    n = 32
    base = default_scenario(n, 5, 4, 2)
    counts = (torch.full((n,), 5), torch.full((n,), 4), torch.full((n,), 2))
    min_dis = torch.full((n,), 40.0)
    s = generate_scenarios(base, *counts, min_dis, torch.Generator().manual_seed(9))
    candidates = _sample_candidates(base, torch.Generator().manual_seed(9))
    assert candidates.robot_start.shape == (n, SCENARIO_ATTEMPTS, 2)
    assert candidates.core_pos.shape == (n, SCENARIO_ATTEMPTS, 2)
    assert candidates.obstacle_radius.shape == (n, SCENARIO_ATTEMPTS)
    placed = _place_candidates(base, candidates, *counts, min_dis)
    for name, value in s.tensors().items():
        assert torch.equal(value, getattr(placed, name)), name


@pytest.mark.parametrize(
    "field", ["num_robots", "num_obstacles", "num_cores", "min_start_goal_dis"]
)
def test_shape_mismatch_raises(field: str) -> None:
    n = 4
    args = {
        "num_robots": torch.full((n,), 3),
        "num_obstacles": torch.full((n,), 2),
        "num_cores": torch.full((n,), 0),
        "min_start_goal_dis": torch.full((n,), 30.0),
    }
    args[field] = args[field][:3]
    with pytest.raises(ValueError, match=field):
        generate_scenarios(default_scenario(n, 5, 4, 0), **args, generator=torch.Generator())


# --- equivalence with the original's sequential scan ------------------------------------------


def _reference_scan(base: Scenario, candidates, counts, min_dis) -> dict[str, list]:
    """A transcription of the original's three ``while`` loops, one candidate at a
    time, on the given candidate draws. Returns, per environment, the accepted indices."""
    n = base.num_envs
    c = {f.name: getattr(candidates, f.name).tolist() for f in dataclasses.fields(candidates)}
    num_robots, num_obstacles, num_cores = (x.tolist() for x in counts)
    min_dis = min_dis.tolist()
    out = {"robots": [], "cores": [], "obstacles": []}
    for e in range(n):
        W, H = base.width[e].item(), base.height[e].item()
        r, clear = base.core_radius[e].item(), base.clear_r[e].item()
        v_rel_max, p = base.v_rel_max[e].item(), base.p[e].item()

        robots: list[int] = []
        for t in range(SCENARIO_ATTEMPTS):
            if len(robots) >= num_robots[e]:
                break
            start, goal = c["robot_start"][e][t], c["robot_goal"][e][t]
            if math.dist(start, goal) < min_dis[e]:
                continue
            if any(
                math.dist(c["robot_start"][e][k], start) <= clear
                or math.dist(c["robot_goal"][e][k], goal) <= clear
                for k in robots
            ):
                continue
            robots.append(t)
        robot_points = [c["robot_start"][e][k] for k in robots] + [
            c["robot_goal"][e][k] for k in robots
        ]

        cores: list[int] = []
        for t in range(len(c["core_pos"][e])):
            if len(cores) >= num_cores[e]:
                break
            (x, y), cw, gamma = (
                c["core_pos"][e][t],
                c["core_clockwise"][e][t],
                c["core_gamma"][e][t],
            )
            if not (x - r >= 0 and x + r <= W and y - r >= 0 and y + r <= W):  # quirk: W for y
                continue
            if any(math.dist(q, (x, y)) < r + clear for q in robot_points):
                continue
            ok = True
            for k in cores:
                d = math.dist(c["core_pos"][e][k], (x, y))
                gamma_k = c["core_gamma"][e][k]
                if c["core_clockwise"][e][k] == cw:
                    if d < gamma_k / (2 * math.pi * v_rel_max) + gamma / (2 * math.pi * v_rel_max):
                        ok = False
                else:
                    big, small = max(gamma_k, gamma), min(gamma_k, gamma)
                    with np.errstate(divide="ignore"):
                        v1 = np.float64(big) / (2 * math.pi * np.float64(d - 2 * r))
                    v2 = small / (2 * math.pi * r)
                    if v1 > p * v2:
                        ok = False
            if ok:
                cores.append(t)

        obstacles: list[int] = []
        for t in range(len(c["obstacle_pos"][e])):
            if len(obstacles) >= num_obstacles[e]:
                break
            (x, y), r_o = c["obstacle_pos"][e][t], c["obstacle_radius"][e][t]
            if not (x - r_o >= 0 and x + r_o <= W and y - r_o >= 0 and y + r_o <= H):
                continue
            if any(math.dist(q, (x, y)) < r_o + clear for q in robot_points):
                continue
            if any(math.dist(c["core_pos"][e][k], (x, y)) <= r + r_o for k in cores):
                continue
            if any(
                math.dist(c["obstacle_pos"][e][k], (x, y)) <= c["obstacle_radius"][e][k] + r_o
                for k in obstacles
            ):
                continue
            obstacles.append(t)

        out["robots"].append(robots)
        out["cores"].append(cores)
        out["obstacles"].append(obstacles)
    return out


EQUIVALENCE_CASES = {
    # name: (slots, counts, min start-goal distance, base changes)
    "stage5_with_cores": ((5, 4, 3), (5, 4, 3), 40.0, {}),
    "spec_a1_defaults": ((6, 8, 8), (6, 8, 8), 30.0, {}),
    # about 1 in 70 candidate pairs is 66 m apart: the budget runs out after a few robots
    "robot_budget_runs_out": ((5, 2, 0), (5, 2, 0), 66.0, {}),
    # clear_r = 25: robots, cores and obstacles all run out of room and of attempts
    "huge_clear_r": ((5, 8, 4), (5, 8, 4), 20.0, {"clear_r": 25.0}),
    # zero circulation: every core pair is compatible, so only "not twice" stops reuse
    "zero_circulation": ((2, 0, 6), (2, 0, 6), 20.0, {"v_range": (0.0, 0.0)}),
    # a wide v_range and many cores: both core pair rules with unequal circulations
    "dense_cores": ((2, 6, 24), (2, 6, 24), 20.0, {"clear_r": 3.0, "v_range": (0.5, 4.0)}),
}


@pytest.mark.parametrize("name", list(EQUIVALENCE_CASES))
def test_equals_the_sequential_scan_of_the_same_draws(name: str) -> None:
    slots, counts, min_dis, changes = EQUIVALENCE_CASES[name]
    n = 12
    base = default_scenario(n, *slots, dtype=torch.float64)
    for field, value in changes.items():
        getattr(base, field)[:] = torch.tensor(value, dtype=torch.float64)
    count_tensors = tuple(torch.full((n,), c) for c in counts)
    min_dis_tensor = torch.full((n,), min_dis, dtype=torch.float64)
    candidates = _sample_candidates(base, torch.Generator().manual_seed(21))
    s = _place_candidates(base, candidates, *count_tensors, min_dis_tensor)
    ref = _reference_scan(base, candidates, count_tensors, min_dis_tensor)

    for kind, present, pos, cand_pos in (
        ("robots", s.robot_present, s.start, candidates.robot_start),
        ("cores", s.core_present, s.core_pos, candidates.core_pos),
        ("obstacles", s.obstacle_present, s.obstacle_pos, candidates.obstacle_pos),
    ):
        for e in range(n):
            accepted = ref[kind][e]
            assert present[e].sum().item() == len(accepted), (kind, e)
            assert torch.equal(pos[e, : len(accepted)], cand_pos[e, accepted]), (kind, e)
    for e in range(n):
        k = ref["robots"][e]
        assert torch.equal(s.goal[e, : len(k)], candidates.robot_goal[e, k])
        k = ref["cores"][e]
        assert torch.equal(s.core_gamma[e, : len(k)], candidates.core_gamma[e, k])
        assert torch.equal(s.core_clockwise[e, : len(k)], candidates.core_clockwise[e, k])
        k = ref["obstacles"][e]
        assert torch.equal(s.obstacle_radius[e, : len(k)], candidates.obstacle_radius[e, k])

    placed = {kind: sum(len(x) for x in ref[kind]) for kind in ref}
    if name == "robot_budget_runs_out":
        assert placed["robots"] < n * counts[0]
    if name == "huge_clear_r":
        assert placed["robots"] < n * counts[0] and placed["obstacles"] < n * counts[1]


# --- hand-made candidates: the exact rule boundaries and quirks --------------------------------


def _tensor(values, dtype=torch.float64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def test_robot_rules_at_their_boundaries() -> None:
    base = default_scenario(1, 3, 0, 0, dtype=torch.float64)  # clear_r = 10
    start = _tensor([[[10, 10], [20, 10], [10, 25], [38, 14], [10, 40]]])
    goal = _tensor([[[40, 10], [45, 45], [40, 25], [8, 14], [40, 40]]])
    # 0: |g-s| = 30 = min_start_goal_dis (>= is enough): accepted
    # 1: start exactly clear_r = 10 from start 0 (> needed): rejected
    # 2: starts and goals 15 apart: accepted
    # 3: start 4.5 m from goal 0, but start-goal pairs are not checked (a kept quirk): accepted
    # 4: never reached: 3 robots requested
    index, present = _accept_robots(base, start, goal, torch.tensor([3]), _tensor([30.0]))
    assert present.tolist() == [[True, True, True]]
    assert index.tolist() == [[0, 2, 3]]


def test_core_pair_quirks() -> None:
    base = default_scenario(1, 0, 0, 2, dtype=torch.float64)
    base.height.fill_(20.0)  # the y upper bound is checked against the width (55)
    no_robots = torch.zeros((1, 0, 2), dtype=torch.float64)
    none_present = torch.zeros((1, 0), dtype=torch.bool)

    def accept(positions, clockwise, gamma=GAMMA):
        gamma = torch.full((1, len(clockwise)), gamma, dtype=torch.float64)
        index, present = _accept_cores(
            base,
            _tensor([positions]),
            torch.tensor([clockwise]),
            gamma,
            no_robots,
            no_robots,
            none_present,
            torch.tensor([2]),
        )
        return [i for i, ok in zip(index[0].tolist(), present[0].tolist(), strict=True) if ok]

    # y = 40 > H but <= W - r: accepted (quirk); x = 54.8 > W - r: rejected
    assert accept([[54.8, 10.0], [10.0, 40.0]], [True, True]) == [1]
    # opposite directions: d = 2r exactly gives v1 = +inf, rejected; d = 0.5 < 2r gives a
    # negative v1, accepted (quirk)
    assert accept([[10.0, 10.0], [11.0, 10.0], [10.5, 10.0]], [True, False, False]) == [0, 2]
    # opposite directions reject 1 <= d < 1.625 (equal Gamma): 1.6 rejected, 1.63 accepted
    assert accept([[10.0, 10.0], [11.6, 10.0], [11.63, 10.0]], [True, False, False]) == [0, 2]
    # same direction needs d >= 1.5 + 1.5
    assert accept([[10.0, 10.0], [12.99, 10.0], [13.01, 10.0]], [True, True, True]) == [0, 2]
    # exact equality at both pair rules, with values whose round-off is exact:
    # Gamma = 2 pi and v_rel_max = 1: same direction needs d >= 1 + 1, so d = 2 is accepted
    assert accept([[10.0, 10.0], [12.0, 10.0]], [True, True], gamma=2 * math.pi) == [0, 1]
    # p = 1/2: v1 = G/(2 pi (2 - 1)) equals p v2 = G/(2 pi) at d = 2, and only v1 > p v2 rejects
    base.p.fill_(0.5)
    assert accept([[10.0, 10.0], [12.0, 10.0]], [True, False]) == [0, 1]


def test_obstacle_rules_at_their_boundaries() -> None:
    base = default_scenario(1, 1, 3, 1, dtype=torch.float64)  # clear_r 10, core r 0.5
    robot_start, robot_goal = _tensor([[[10.0, 10.0]]]), _tensor([[[40.0, 40.0]]])
    robot_present = torch.tensor([[True]])
    core_pos, core_present = _tensor([[[30.0, 10.0]]]), torch.tensor([[True]])
    pos = _tensor([[[21.0, 10.0], [30.0, 11.5], [30.0, 12.0], [32.0, 12.0], [34.0, 12.0]]])
    radius = torch.ones((1, 5), dtype=torch.float64)
    # 0: exactly r_o + clear_r = 11 from a start: accepted (>=)
    # 1: 1.5 = r + r_o from the core: rejected (> needed); 2: 2.0 from it: accepted
    # 3: exactly 2 r_o from obstacle 2: rejected; 4: 4 from it: accepted
    index, present = _accept_obstacles(
        base,
        pos,
        radius,
        robot_start,
        robot_goal,
        robot_present,
        core_pos,
        core_present,
        torch.tensor([3]),
    )
    assert present.tolist() == [[True, True, True]]
    assert index.tolist() == [[0, 2, 4]]
    # absent robots and cores are ignored
    index, present = _accept_obstacles(
        base,
        pos,
        radius,
        robot_start,
        robot_goal,
        ~robot_present,
        core_pos,
        ~core_present,
        torch.tensor([3]),
    )
    assert index.tolist() == [[0, 1, 3]]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_generation_makes_no_sync_and_keeps_the_rules() -> None:
    n = 1024
    base = default_scenario(n, 5, 4, 8, device="cuda")
    counts = (
        torch.full((n,), 5, device="cuda"),
        torch.full((n,), 4, device="cuda"),
        torch.full((n,), 8, device="cuda"),
    )
    min_dis = torch.full((n,), 40.0, device="cuda")
    generator = torch.Generator(device="cuda").manual_seed(0)
    generate_scenarios(base, *counts, min_dis, generator)  # warm-up (lazy CUDA init syncs)
    torch.cuda.set_sync_debug_mode("error")
    try:
        s = generate_scenarios(base, *counts, min_dis, generator)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    _assert_rules_hold(s.to("cpu"), tuple(c.cpu() for c in (*counts, min_dis)), tol=1e-4)
