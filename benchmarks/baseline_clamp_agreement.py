"""How much the node's unclamped thrust changes the classical baselines' decisions.

The node's APF and MPC (``variant="original"``) score each candidate with its unclamped thrust
``T + change * 0.5 s``; the same planners with ``clamp_thrust = True`` score the thrust clamped
to the motor limits [-500, 1000] N first. On random situations (goal, velocity, 5 object slots
about half present, thrusts uniform in [-500, 1000] N; one seed) this counts, per planner and
prediction step, the situations where both pick the same action index and where both apply the
same thrust once the simulator clamps it.

Usage: ``python benchmarks/baseline_clamp_agreement.py [--situations 3000] [--seed 0]``; prints
one Markdown row per planner and prediction step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marinenav.baselines import baseline_policy  # noqa: E402
from marinenav.baselines.prediction import (  # noqa: E402
    ACTION_DURATION,
    MAX_THRUST,
    MIN_THRUST,
    candidate_changes,
)


def situations(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(self_state [n, 7], objects [n, 5, 5], mask [n, 5])`` in the RL frame, float64. Normal
    draws with standard deviations: goal 30 m and object positions 12 m per axis, surge 2 m/s,
    sway 0.5 m/s, yaw rate 0.3 rad/s, object velocities 1.5 m/s per axis; radii 1 m plus a
    half-normal 0.5 m; thrusts uniform in [-500, 1000] N."""
    g = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    motion = torch.randn(n, 5, generator=g, dtype=f64) * torch.tensor(
        [30, 30, 2, 0.5, 0.3], dtype=f64
    )
    thrust = torch.empty(n, 2, dtype=f64).uniform_(MIN_THRUST, MAX_THRUST, generator=g)
    objects = torch.randn(n, 5, 5, generator=g, dtype=f64) * torch.tensor(
        [12, 12, 1.5, 1.5, 0.5], dtype=f64
    )
    objects[..., 4] = objects[..., 4].abs() + 1  # radius (m)
    mask = torch.rand(n, 5, generator=g) < 0.5
    return torch.cat((motion, thrust), dim=-1), objects, mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--situations", type=int, default=3000, help="random situations")
    parser.add_argument("--seed", type=int, default=0, help="seed of the situations")
    args = parser.parse_args()
    self_state, objects, mask = situations(args.situations, args.seed)
    changes = candidate_changes()
    print("| planner | prediction step | same action | same applied thrust | situations |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in ("apf", "mpc"):
        for period in (0.25, 0.5):
            node = baseline_policy(name, "original", planning_period=period)
            clamped = baseline_policy(name, "original", planning_period=period)
            clamped.clamp_thrust = True  # the node's planner, scoring the clamped thrust
            picked = [p.act(self_state, objects, mask) for p in (node, clamped)]
            applied = [
                (self_state[:, 5:7] + changes[a] * ACTION_DURATION).clamp(MIN_THRUST, MAX_THRUST)
                for a in picked
            ]
            same_action = int((picked[0] == picked[1]).sum())
            same_thrust = int((applied[0] == applied[1]).all(dim=-1).sum())
            print(f"| {name} | {period} s | {same_action:,} | {same_thrust:,} | "
                  f"{args.situations:,} |")  # fmt: skip


if __name__ == "__main__":
    main()
