"""The learning check of ``docs/learning.md``: train on the first curriculum stage (3 robots,
no obstacles, start-goal distance >= 30 m) for 150,000 timesteps with the default
hyperparameters, evaluate every 50,000 timesteps on 20 fixed episodes, and print the table.

Each agent runs as ``python train.py agent=<name> curriculum=stage0 ...`` in its own run
directory (in parallel, one process per agent, one torch thread each).

Usage: ``python benchmarks/learning_check.py --agents ac_iqn sac [--device cuda] [extra overrides]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = [
    "curriculum=stage0",
    "training.total_timesteps=150000",
    "evaluation.interval=50000",
    "evaluation.first=50000",
    "checkpoint.interval=50000",
    "logger.progress_bar=false",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=["ac_iqn", "sac"])
    parser.add_argument("--out", default=str(ROOT / "runs" / "learning_check"))
    args, overrides = parser.parse_known_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    started = time.time()
    jobs = {
        agent: subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "train.py"),
                f"agent={agent}",
                *PROTOCOL,
                *overrides,
                f"hydra.run.dir={args.out}/{agent}",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for agent in args.agents
    }
    print("| agent | timestep | eval success | mean discounted return | wall clock |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for agent, job in jobs.items():
        _, err = job.communicate()
        if job.returncode != 0:
            print(f"| {agent} | failed: {err.strip().splitlines()[-1]} | | | |")
            continue
        wall = time.time() - started
        lines = (Path(args.out) / agent / "evaluations.jsonl").read_text().splitlines()
        for i, line in enumerate(lines):
            e = json.loads(line)
            clock = f"{wall:.0f} s ({150000 / wall:.0f} timesteps/s)" if i == len(lines) - 1 else ""
            print(f"| {agent} | {e['timestep']:,} | {e['eval/success_rate']:.2f} | "
                  f"{e['eval/return']:.1f} | {clock} |")  # fmt: skip


if __name__ == "__main__":
    main()
