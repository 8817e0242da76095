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

With ``--since T`` instead of ``--last``, a run that averaged during training
(``training.policy_average_start``) is read later than it started: the uniform average of its
samples after the snapshot of timestep ``T``, derived from the averages its snapshots of ``T``
and of the last evaluation keep, ``(n_last * A_last - n_T * A_T) / (n_last - n_T)`` (in float64;
the buffers are the last snapshot's, as the run's average copies them). It is the average a
run started at the first sample after ``T`` would have kept, since the average does not change
what the run learns (docs/results.md, "The replay alone, and averages started later").

    python benchmarks/average_snapshots.py RUN --since 672000 --out DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from marinenav.training.averaging import AVERAGE_KEY, PolicyAverage
from marinenav.training.checkpoint import (
    CHECKPOINT_NAME,
    EVALUATED_DIR,
    load_agent,
    load_checkpoint,
    write_checkpoint,
)


def average_since(first: dict[str, Any], last: dict[str, Any], parameters: set[str]) -> dict:
    """The checkpoint entry :data:`AVERAGE_KEY` of the samples ``last`` holds beyond those of
    ``first`` (two checkpoint states of one averaging run, ``first`` the earlier): each of
    ``parameters`` (names in the acting network's state dict) as ``(n_l A_l - n_f A_f) /
    (n_l - n_f)``, computed in float64 and stored in its own dtype; everything else (buffers)
    as ``last`` has it. Raises ``ValueError`` when ``last`` holds no later sample."""
    n_first, n_last = first[AVERAGE_KEY]["samples"], last[AVERAGE_KEY]["samples"]
    if n_last <= n_first:
        raise ValueError(f"the last snapshot's average holds {n_last} samples, the earlier one "
                         f"{n_first}: no sample after it")  # fmt: skip
    early, late = first[AVERAGE_KEY]["network"], last[AVERAGE_KEY]["network"]
    network = {}
    for name, value in late.items():
        if name in parameters:
            mixed = n_last * value.double() - n_first * early[name].double()
            value = (mixed / (n_last - n_first)).to(value.dtype)
        network[name] = value
    return {"samples": n_last - n_first, "network": network}


def read_since(run: Path, stamps: list[int], since: int) -> tuple[dict[str, Any], int]:
    """The last snapshot's checkpoint state of ``run`` (its evaluated ``stamps``, ascending)
    with its average replaced by the samples after the snapshot of ``since``, and their count.
    Raises ``ValueError`` (one line) for a ``since`` that is not a snapshot before the last, or
    a run whose snapshots hold no average."""
    evaluated = run / EVALUATED_DIR
    if since not in stamps[:-1]:
        raise ValueError(f"--since must name an evaluated snapshot before the last: {evaluated} "
                         f"holds {', '.join(map(str, stamps)) or 'none'}")  # fmt: skip
    first = load_checkpoint(evaluated / str(since) / CHECKPOINT_NAME)
    last = load_checkpoint(evaluated / str(stamps[-1]) / CHECKPOINT_NAME)
    if AVERAGE_KEY not in first or AVERAGE_KEY not in last:
        raise ValueError(f"{run}: its snapshots hold no weight average "
                         "(training.policy_average_start was off); use --last")  # fmt: skip
    agent, _ = load_agent(evaluated / str(stamps[-1]))
    names = {name for name, _ in agent.policy.selector.named_parameters()}
    try:
        last[AVERAGE_KEY] = average_since(first, last, names)
    except ValueError as error:
        raise ValueError(f"{run}: {error}") from None
    return last, last[AVERAGE_KEY]["samples"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run directory with evaluated/<timestep>/")
    chosen_by = parser.add_mutually_exclusive_group(required=True)
    chosen_by.add_argument("--last", type=int, help="how many snapshots (K >= 1)")
    chosen_by.add_argument("--since", type=int,
                           help="a run that averaged: its own average's samples after the "
                                "snapshot of this timestep")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, help="directory of the new snapshot")
    args = parser.parse_args()
    evaluated = args.run / EVALUATED_DIR
    stamps = sorted(int(p.name) for p in evaluated.iterdir()) if evaluated.is_dir() else []
    if args.since is not None:
        try:
            state, samples = read_since(args.run, stamps, args.since)
        except ValueError as error:
            parser.error(str(error))
        args.out.mkdir(parents=True, exist_ok=True)
        path = write_checkpoint(state, args.out / CHECKPOINT_NAME)
        print(f"{path}: the run's average of its {samples} samples after timestep {args.since} "
              f"(to {stamps[-1]})")  # fmt: skip
        return
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
