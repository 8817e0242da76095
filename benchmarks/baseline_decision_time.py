"""Time per decision of the classical baselines (APF textbook / original, MPC) on the CPU.

Observations are real ones: the robots of the paper evaluation set after reset (300 rows, float64
as the evaluation runs), repeated to the batch size. One call decides for the whole batch; the
table gives the median wall time of a call over ``--repeats`` calls and per decision (call time /
batch).

Usage: ``python benchmarks/baseline_decision_time.py [--batch 1 1024] [--repeats 50]
[--threads 1] [--dtype float64]``; prints one Markdown row per baseline and batch size.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marinenav.baselines import baseline_policy  # noqa: E402
from marinenav.envs import MarineNavEnv  # noqa: E402
from marinenav.training.evaluation import named_scenarios  # noqa: E402

BASELINES = (("apf", "textbook"), ("apf", "original"), ("mpc", "textbook"))


def observations(batch: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """``(self_state [batch, 7], objects [batch, 5, 5], mask [batch, 5])`` of present robots of
    the paper set after reset, repeated to ``batch`` rows."""
    env = MarineNavEnv.from_scenarios(
        named_scenarios("paper"), action_kind="discrete", robot_slots=5, obstacle_slots=4,
        core_slots=0, dtype=dtype, validate=False,
    )  # fmt: skip
    td = env.reset()
    active = td["agents", "active"].reshape(-1)
    keys = ("self_state", "objects", "objects_mask")
    rows = [td["agents", key].flatten(0, 1)[active] for key in keys]
    index = torch.arange(batch) % rows[0].shape[0]
    return tuple(r[index].contiguous() for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 1024],
                        help="observations per call (default 1 1024)")
    parser.add_argument("--repeats", type=int, default=50, help="timed calls per row")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    args = parser.parse_args()  # fmt: skip
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{args.threads} thread(s), {args.dtype}")  # fmt: skip
    print("| baseline | batch | ms per call (median) | us per decision |")
    print("| --- | ---: | ---: | ---: |")
    for batch in args.batch:
        obs = observations(batch, dtype)
        for name, variant in BASELINES:
            policy = baseline_policy(name, variant)
            for _ in range(3):  # warm-up
                policy.act(*obs)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                policy.act(*obs)
                times.append(time.perf_counter() - start)
            call = statistics.median(times)
            print(f"| {name} {variant} | {batch} | {call * 1e3:.3f} | {call / batch * 1e6:.1f} |")


if __name__ == "__main__":
    main()
