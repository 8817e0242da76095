"""Who hits whom in the harbour (docs/results.md, "The pass event at 10, and at 20 against
traffic only"): every episode of the harbour's large set run alone with a planner
(``marinenav.viz.episode.record_episode``: the episode's own conditions; the perception noise of
an episode run alone differs a little from the same episode run among its set), and for each
failed one, at its first collision, each vessel that collided then and what is nearest to it:
another vessel (northbound, southbound, crossing) or a moored boat.

``python benchmarks/harbour_collisions.py PLANNER [PLANNER ...] [--episodes N]`` prints per
planner the failed episodes, the median time of their first collision, and a count per kind of
contact ("crossing x northbound / northbound x crossing": both vessels collided, each nearest to
the other). The harbour layout's defaults: slots 0-1 northbound, 2-3 southbound, 4 crossing.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from marinenav.scenarios.harbour import HarbourConfig
from marinenav.sim.constants import ROBOT_DEFAULTS


def vessel_kinds(config: HarbourConfig) -> list[str]:
    """The kind of each vessel slot of a harbour episode, in the layout's order."""
    return (["northbound"] * config.northbound + ["southbound"] * config.southbound
            + ["crossing"] * config.crossing)  # fmt: skip


def first_collision_step(recording) -> int | None:
    """The first step on which a vessel collided (``None``: the episode had no collision)."""
    collided = recording.collided.any(axis=1)  # [T + 1] bool, cumulative
    return int(np.argmax(collided)) if collided[-1] else None


def first_contact(recording, kinds: list[str]) -> str:
    """``"time out"`` for a failed episode without a collision; else, at the first step on which
    a vessel collided, ``"<kind> x <nearest>"`` for each vessel that collided on that step
    (nearest by clearance: centre distance less both collision radii for a vessel, less the
    boat's radius and the vessel's for a moored boat), sorted and joined by " / "."""
    collided = recording.collided  # [T + 1, R] bool, cumulative
    k = first_collision_step(recording)
    if k is None:
        return "time out"
    pos = recording.positions[k]
    present = recording.present
    r = float(ROBOT_DEFAULTS["r"])
    boats = recording.map.obstacle_present[0].numpy()
    boat_pos = recording.map.obstacle_pos[0].numpy()[boats]
    boat_r = recording.map.obstacle_radius[0].numpy()[boats]
    pairs = set()
    for v in np.nonzero(collided[k] & ~collided[k - 1])[0]:
        near = [(float(np.linalg.norm(pos[v] - pos[w])) - 2 * r, kinds[w])
                for w in range(len(kinds)) if w != v and present[w]]  # fmt: skip
        near += [(float(np.linalg.norm(pos[v] - p)) - b - r, "moored boat")
                 for p, b in zip(boat_pos, boat_r, strict=True)]  # fmt: skip
        pairs.add(f"{kinds[v]} x {min(near)[1]}")
    return " / ".join(sorted(pairs))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("planners", nargs="+", type=Path, help="planner files (TorchScript)")
    parser.add_argument("--episodes", type=int, help="the first N episodes (default: all)")
    args = parser.parse_args(argv)
    if args.episodes is not None and args.episodes < 1:
        parser.error("--episodes must be at least 1")
    from marinenav.planner import planner_policy
    from marinenav.scenarios import make_layout
    from marinenav.training.evaluation import EvaluationSet
    from marinenav.viz.episode import record_episode

    torch.set_num_threads(1)
    layout = make_layout("harbour")
    evaluation_set = EvaluationSet.named("large", layout)
    kinds = vessel_kinds(layout.config)
    count = len(evaluation_set)
    if args.episodes is not None:
        count = min(args.episodes, count)
    for path in args.planners:
        agent = planner_policy(path)
        contacts, times = Counter(), []
        for index in range(count):
            recording = record_episode(agent, evaluation_set, index, alone=True)
            if recording.success:
                continue
            contacts[first_contact(recording, kinds)] += 1
            step = first_collision_step(recording)
            if step is not None:
                times.append(step * recording.step_time)
        failed = sum(contacts.values())
        median = f"{np.median(times):.1f} s" if times else "-"
        print(f"{path}: {count} episodes, {failed} failed, first collision median {median}")
        print("| contact | episodes |")
        print("| --- | ---: |")
        for what, n in contacts.most_common():
            print(f"| {what} | {n} |")
        print()


if __name__ == "__main__":
    main()
