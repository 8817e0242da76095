"""benchmarks/harbour_collisions.py: at a failed harbour episode's first collision, each vessel
that collided and what is nearest to it (a vessel by kind, or a moored boat)."""

from __future__ import annotations

import numpy as np
import torch

from marinenav.scenarios.harbour import HarbourConfig
from marinenav.sim.scenario import default_scenario
from marinenav.viz.episode import EpisodeRecording
from tests.run_utils import ROOT, benchmark_module, benchmark_py

_SCRIPT = benchmark_module("harbour_collisions.py")
first_contact, vessel_kinds = _SCRIPT.first_contact, _SCRIPT.vessel_kinds
first_collision_step = _SCRIPT.first_collision_step

KINDS = ["northbound", "northbound", "southbound", "southbound", "crossing"]


def _recording(positions: list[list[list[float]]], collided: list[list[bool]]) -> EpisodeRecording:
    """Five vessels over len(positions) instants, one moored boat of radius 1 m at (20, 5)."""
    s = default_scenario(1, 5, 1, 0, dtype=torch.float64)
    s.robot_present[0] = True
    s.obstacle_present[0, 0] = True
    s.obstacle_pos[0, 0] = torch.tensor([20.0, 5.0], dtype=torch.float64)
    s.obstacle_radius[0, 0] = 1.0
    T = len(positions) - 1
    pos = np.array(positions, dtype=float)
    hit = np.logical_or.accumulate(np.array(collided, dtype=bool), axis=0)
    return EpisodeRecording(
        scenario={}, map=s, positions=pos, headings=np.zeros((T + 1, 5)),
        velocities=np.zeros((T + 1, 5, 2)), active=~hit, collided=hit,
        reached=np.zeros((T + 1, 5), bool), rewards=np.zeros((T, 5)),
        info=np.zeros((T, 5), int), step_time=0.5,
    )  # fmt: skip


def test_the_default_harbour_slots_are_two_northbound_two_southbound_one_crossing() -> None:
    assert vessel_kinds(HarbourConfig()) == KINDS


def test_the_first_contact_names_each_collided_vessel_and_its_nearest() -> None:
    far = [[0.0, 0.0], [0.0, 40.0], [40.0, 0.0], [40.0, 40.0], [10.0, 10.0]]
    # at the second instant the crossing vessel (4) touches northbound 0; southbound 2 touches
    # the moored boat one instant later (after the first collision: not counted)
    touch = [[10.0, 8.5], [0.0, 40.0], [40.0, 0.0], [40.0, 40.0], [10.0, 10.0]]
    later = [[10.0, 8.5], [0.0, 40.0], [20.0, 3.2], [40.0, 40.0], [10.0, 10.0]]
    none, both = [False] * 5, [True, False, False, False, True]
    rec = _recording([far, touch, later], [none, both, [True, False, True, False, True]])
    assert first_contact(rec, KINDS) == "crossing x northbound / northbound x crossing"
    assert first_collision_step(rec) == 1
    boat = [[0.0, 0.0], [0.0, 40.0], [20.0, 3.2], [40.0, 40.0], [10.0, 10.0]]
    rec = _recording([far, boat], [none, [False, False, True, False, False]])
    assert first_contact(rec, KINDS) == "southbound x moored boat"
    rec = _recording([far, far], [none, none])
    assert first_contact(rec, KINDS) == "time out"
    assert first_collision_step(rec) is None


def test_the_script_counts_the_failed_episodes_by_contact() -> None:
    planner = ROOT / "tests/data/pretrained/traced_AC_IQN_model.pt"
    out = benchmark_py("harbour_collisions.py", planner, "--episodes", "3")
    assert out.returncode == 0, out.stderr
    head, *rows = out.stdout.strip().splitlines()
    failed = int(head.split(", ")[1].split()[0])
    assert head.startswith(f"{planner}: 3 episodes, ")
    counts = [int(row.rsplit("|", 2)[1]) for row in rows[2:]]
    assert sum(counts) == failed
    out = benchmark_py("harbour_collisions.py", planner, "--episodes", "0")
    assert out.returncode == 2 and "--episodes must be at least 1" in out.stderr
