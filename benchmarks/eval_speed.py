"""Evaluation speed of the planner files: the original's loop shape (one episode, one robot at a
time: ``benchmarks/sequential_evaluation.py``) against the batched evaluator, with and without
compaction, and the compacted one with the planner called on the whole batch at once or in
cache-sized blocks of robots (the default), on the same scenarios, in one process.

Usage: ``python benchmarks/eval_speed.py [--set large] [--per-stage 25] [--planners AC_IQN ...]``
(the first ``per-stage`` episodes of every stage of a named set: by default 150 episodes of the
large set, noise on, each planner acting by its own rule). Prints one Markdown row per
planner: the seconds of each loop and the speed-ups.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from sequential_evaluation import PLANNERS, evaluate_sequentially  # noqa: E402

from marinenav.evaluate import evaluate_planner  # noqa: E402
from marinenav.planner import planner_policy  # noqa: E402
from marinenav.training.evaluation import EvaluationSet, named_scenarios  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="large", help="named evaluation set to draw from")
    parser.add_argument("--per-stage", type=int, default=25)
    parser.add_argument("--planners", nargs="*", default=list(PLANNERS))
    parser.add_argument("--pretrained", type=Path, default=ROOT / "tests/data/pretrained")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    full = named_scenarios(args.set)
    k, size = args.per_stage, len(full) // 6
    if not 0 < k <= size:
        parser.error(f"--per-stage must be in 1..{size} for the {args.set} set")
    scenarios = [full[s * size + i] for s in range(6) for i in range(k)]
    n = len(scenarios)
    chosen = EvaluationSet(scenarios, episodes_per_stage=k)  # the original's conditions
    cpu = platform.processor() or platform.machine()
    print(f"# {n} episodes ({args.set} set, {k} per stage), {cpu}, "
          f"{torch.get_num_threads()} thread(s), torch {torch.__version__}")  # fmt: skip
    print("| planner | one robot at a time (s) | batched, full (s) | compacted, one call (s) "
          "| compacted, blocks (s) | speed-up full | speed-up one call "
          "| speed-up blocks |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for agent in args.planners:
        path = args.pretrained / f"traced_{agent}_model.pt"
        start = time.perf_counter()
        evaluate_sequentially(path, agent, scenarios, sac_action="sample", iqn_taus="random")
        sequential = time.perf_counter() - start
        timings = []
        for compact, block in ((False, {}), (True, {"block_rows": 10**9}), (True, {})):
            start = time.perf_counter()
            evaluate_planner(planner_policy(path, **block), chosen, compact=compact)
            timings.append(time.perf_counter() - start)
        print(f"| {agent} | {sequential:.1f} | "
              + " | ".join(f"{t:.1f}" for t in timings) + " | "
              + " | ".join(f"{sequential / t:.1f}x" for t in timings) + " |", flush=True)


if __name__ == "__main__":
    main()
