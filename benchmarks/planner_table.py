"""Evaluate planner files on a named set and print the results table of ``docs/results.md``.

``python benchmarks/planner_table.py --set large --out results/evaluations FILE.pt ...``
evaluates every file (``--sac-action both`` evaluates a sampling planner, SAC, MAPPO or IPPO,
both sampling, as the C++ planner acts, and with its mean action), writes each file's metrics to
``OUT/<label>.json`` and prints one Markdown row per evaluation: overall success with its
Wilson 95% interval, the success rate of every stage, the mean discounted return, and the wall
clock of the evaluation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.evaluate import evaluate_planner  # noqa: E402
from marinenav.files import write_text  # noqa: E402
from marinenav.planner import planner_policy  # noqa: E402
from marinenav.stats import format_rate  # noqa: E402
from marinenav.training.evaluation import EVALUATION_SETS, EvaluationSet  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--set", default="large", choices=tuple(EVALUATION_SETS))
    parser.add_argument("--label", default="", help="prefix of the row labels and JSON names")
    parser.add_argument("--sac-action", choices=("sample", "mean", "both"), default="both")
    parser.add_argument("--out", type=Path, default=None, help="directory for the JSON metrics")
    args = parser.parse_args()
    torch.set_num_threads(1)
    evaluation_set = EvaluationSet.named(args.set)  # the original's conditions, as evaluate's
    scenarios = evaluation_set.scenarios
    print(f"| planner | success (95% CI, n={len(scenarios)}) | "
          + " | ".join(f"stage {s}" for s in range(6)) + " | return | eval wall clock |")
    print("| --- | ---: " + "| ---: " * 6 + "| ---: | ---: |")
    for path in args.files:
        probe = planner_policy(path)
        modes = [args.sac_action] if args.sac_action != "both" else ["sample", "mean"]
        sampling = probe.sample_noise  # an action rule that samples (SAC, PPO): both modes
        for mode in modes if sampling else ["sample"]:
            policy = planner_policy(path, sac_action=mode)
            start = time.perf_counter()
            metrics = evaluate_planner(policy, evaluation_set)
            seconds = time.perf_counter() - start
            label = args.label + policy.agent_type + (f" ({mode})" if sampling else "")
            successes = sum(metrics["episodes"]["success"])
            stages = [metrics[f"eval/success_rate_stage{s}"] for s in range(6)]
            print(f"| {label} | {format_rate(successes, len(scenarios))} | "
                  + " | ".join(f"{r:.2f}" for r in stages)
                  + f" | {metrics['eval/return']:.1f} | {seconds:.0f} s |", flush=True)
            if args.out:
                metrics["planner"] = {"file": str(path), "agent": policy.agent_type,
                                      "sac_action": mode, "set": args.set}  # fmt: skip
                name = label.replace(" ", "_").replace("(", "").replace(")", "")
                write_text(args.out / f"{name}.json", json.dumps(metrics))


if __name__ == "__main__":
    main()
