"""Where the first course alteration of the own ship is made in the Imazu cases: the one the
rule-14 and rule-15 checks read (:func:`marinenav.encounters.first_alteration_at`, as
:func:`~marinenav.encounters.check_target` reads it: the first change of more than
``TURN_THRESHOLD`` degrees from the start heading before the closest approach, "turned
to port" when it is to port), with the distance to the nearest target then, and whether any
target was within the perception range (``ENCOUNTER_RANGE``, 20 m) at that step: an alteration
made with every target farther off is made blind.

``python benchmarks/imazu_first_alteration.py PLANNER ... [--cases 1 5 8 13]`` replays each
planner file (ours or the original's) on the 22 cases as ``marinenav.evaluate --scenario imazu``
runs them (the evaluation set's conditions; episodes recorded by
:func:`marinenav.viz.episode.record_episodes`) and prints one Markdown row per planner and case:
the step of the first alteration (0.5 s each), its angle (deg, + to starboard), the nearest
target's distance (m) and "blind" or "seen".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from marinenav.encounters import first_alteration_at
from marinenav.sim.situation import ENCOUNTER_RANGE


def first_alterations(planner: Path, cases: list[int]) -> list[str]:
    """One Markdown row per case (1-based) for the planner file."""
    from marinenav.planner import planner_policy
    from marinenav.scenarios import make_layout
    from marinenav.training.evaluation import EvaluationSet
    from marinenav.viz.episode import record_episodes

    evaluation_set = EvaluationSet.named("paper", make_layout("imazu"))
    recordings = record_episodes(planner_policy(planner), evaluation_set, [c - 1 for c in cases])
    rows = []
    for case, rec in zip(cases, recordings, strict=True):
        targets = rec.present.copy()
        targets[0] = False  # slot 0 is the own ship
        distance = np.linalg.norm(rec.positions[:, targets] - rec.positions[:, :1], axis=-1)
        found = first_alteration_at(torch.from_numpy(rec.headings[:, 0]))  # the checks' reading
        if found is None:
            rows.append(f"| {planner} | case {case} | held course | | | |")
            continue
        k, angle = found
        nearest = float(distance[k].min())
        seen = "seen" if nearest <= ENCOUNTER_RANGE else "blind"
        rows.append(f"| {planner} | case {case} | {k} | {angle:+.0f} | {nearest:.0f} | {seen} |")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("planners", nargs="+", type=Path, help="planner files (.pt)")
    parser.add_argument("--cases", nargs="+", type=int, default=list(range(1, 23)),
                        help="Imazu cases, 1-22 (default: all)")  # fmt: skip
    args = parser.parse_args(argv)
    if not all(1 <= c <= 22 for c in args.cases):
        parser.error(f"--cases must be in 1..22, got {args.cases}")
    print("| planner | case | first alteration (step) | angle (deg) | nearest target (m) | |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for planner in args.planners:
        for row in first_alterations(planner, args.cases):
            print(row)


if __name__ == "__main__":
    main()
