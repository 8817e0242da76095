"""Weight averaging after the fact: the planner of a finished run as the average of the acting
networks of its last K evaluated snapshots (``evaluated/<timestep>/``), written as a policy
snapshot that ``marinenav.evaluate`` and ``marinenav.export`` read.

    python benchmarks/average_snapshots.py RUN --last 7 --out DIR
    python -m marinenav.evaluate DIR --set large --out DIR/large.json

It is what ``training.policy_average_start`` / ``training.policy_average_interval`` compute
during a run whose samples fall on its evaluations (e.g. candidate H of docs/results.md: start
0.4 and interval 40,000 of a 400,000-timestep run evaluated every 40,000, the snapshots of
160k, ..., 400k), with the
same :class:`marinenav.training.averaging.PolicyAverage` and checkpoint entry, so a run kept
with ``checkpoint.keep_evaluated`` can be asked how an average would have done without training
it again (docs/results.md, the fifteen-minute candidates).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from marinenav.training.averaging import AVERAGE_KEY, PolicyAverage
from marinenav.training.checkpoint import (
    CHECKPOINT_NAME,
    EVALUATED_DIR,
    load_agent,
    load_checkpoint,
    write_checkpoint,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run directory with evaluated/<timestep>/")
    parser.add_argument("--last", type=int, required=True, help="how many snapshots (K >= 1)")
    parser.add_argument("--out", type=Path, required=True, help="directory of the new snapshot")
    args = parser.parse_args()
    evaluated = args.run / EVALUATED_DIR
    stamps = sorted(int(p.name) for p in evaluated.iterdir()) if evaluated.is_dir() else []
    if not 1 <= args.last <= len(stamps):
        parser.error(f"--last must be in [1, {len(stamps)}]: {evaluated} holds {len(stamps)} "
                     "evaluated snapshots")  # fmt: skip
    chosen = stamps[-args.last :]
    agent, _ = load_agent(evaluated / str(chosen[0]))  # the run's agent, built once
    average = PolicyAverage(agent.policy.selector, start=0, interval=1)
    for stamp in chosen:  # the online acting network of each snapshot, in order
        state = load_checkpoint(evaluated / str(stamp) / CHECKPOINT_NAME)
        agent.load_state_dict(state["agent"]["modules"])  # online, even where the run averaged
        average.sample()
    state[AVERAGE_KEY] = average.state_dict()
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_checkpoint(state, args.out / CHECKPOINT_NAME)
    print(f"{path}: the acting network averaged over timesteps {', '.join(map(str, chosen))}")


if __name__ == "__main__":
    main()
