"""How fast planners sail in the Imazu cases: the own ships' mean speed per window of steps
(docs/results.md, "A safe speed").

Every case starts the own ship at 1.5 m/s, 45 m from a meeting point that every ship, holding
course and speed, reaches at 30 s (step 60); targets come into the 20 m perception range only
seconds before it. This script evaluates each planner file as the node runs it (float64, noise
seed 253, ``marinenav.evaluate --planner FILE --scenario imazu``) and prints, per planner, the
own ships' speed over the ground (as their observations carry it) averaged over the cases still
sailing at each step and over each window of ``--window`` steps, and the speed made good over
the whole case (the 65 m from start to goal of ``ImazuConfig`` over the mean travel time of the
solved cases).

    python benchmarks/imazu_speeds.py PLANNER.pt ... [--labels A B ...] [--window 20]
        [--windows 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch


def window_means(per_step: list[float], window: int, windows: int) -> list[float | None]:
    """The mean of ``per_step`` over each of the first ``windows`` windows of ``window`` steps
    (``None`` for a window no step reached)."""
    out: list[float | None] = []
    for k in range(windows):
        part = per_step[k * window : (k + 1) * window]
        out.append(sum(part) / len(part) if part else None)
    return out


def sail(planner: Path) -> tuple[list[float], float]:
    """One evaluation of ``planner`` on the 22 cases: the mean own-ship speed (m/s) at each step
    over the ships still sailing, and the mean travel time (s) of the solved cases."""
    from marinenav.evaluate import evaluate_planner
    from marinenav.planner import planner_policy
    from marinenav.scenarios import make_layout
    from marinenav.training.evaluation import EvaluationSet

    evaluation_set = EvaluationSet.named(
        "paper", make_layout("imazu"), dtype=torch.float64, noise_seed=253
    )
    policy = planner_policy(planner)
    per_step: list[float] = []
    act = policy.act

    def recording_act(self_state, objects, objects_mask):
        speed = torch.linalg.vector_norm(self_state[:, 2:4], dim=-1).mean()
        per_step.append(float(speed))  # host: the script's record, once per step
        return act(self_state, objects, objects_mask)

    policy.act = recording_act
    metrics = evaluate_planner(policy, evaluation_set)
    return per_step, float(metrics["eval/travel_time"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("planners", nargs="+", type=Path, help="planner files")
    parser.add_argument("--labels", nargs="*", help="a name per planner (default: the paths)")
    parser.add_argument("--window", type=int, default=20, help="steps per window (default 20)")
    parser.add_argument("--windows", type=int, default=3, help="windows to print (default 3)")
    args = parser.parse_args(argv)
    labels = args.labels or [str(p) for p in args.planners]
    if len(labels) != len(args.planners):
        parser.error("give one label per planner")
    if args.window < 1 or args.windows < 1:
        parser.error("--window and --windows must be at least 1")
    torch.set_num_threads(1)
    from marinenav.scenarios.imazu import ImazuConfig

    config = ImazuConfig()
    start_to_goal = config.distance + config.goal_beyond  # m, the evaluation set's cases
    heads = [f"steps {k * args.window + 1}-{(k + 1) * args.window}" for k in range(args.windows)]
    print("| planner | " + " | ".join(heads) + " | travel time (s) | made good (m/s) |")
    print("| --- |" + " ---: |" * (args.windows + 2))
    for label, planner in zip(labels, args.planners, strict=True):
        per_step, travel_time = sail(planner)
        means = window_means(per_step, args.window, args.windows)
        cells = ["" if m is None else f"{m:.2f}" for m in means]
        print(f"| {label} | " + " | ".join(cells)
              + f" | {travel_time:.1f} | {start_to_goal / travel_time:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
