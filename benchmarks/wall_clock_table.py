"""Success on the trainer's evaluation set at equal wall clock, for runs of different agents.

``python benchmarks/wall_clock_table.py --run "AC-IQN s0" results/runs/ac_iqn_s0
--run IPPO results/runs/ippo_s0_6M results/runs/ippo_s0_16M --minutes 15 30 45 60 90``

Each ``--run LABEL DIR [DIR ...]`` names one run by its sessions in order (a run resumed into a
new directory has one directory per session; the last one's ``evaluations.jsonl`` holds every
evaluation of the run). The wall clock of an evaluation is its ``wall_clock_s`` where the
trainer recorded it; for runs from before that field it is rebuilt from each session's
``timesteps_per_second.csv`` (the logger's ``train/timesteps_per_second``: timesteps since the
session started over seconds since it started, evaluations included), so
``seconds(t) = seconds at the session's start + (t - first timestep) / rate(t)``.

Prints, for each mark, the last evaluation each run had finished by then: its success rate
on the evaluation set and its timestep.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np


def rate_file(session: Path) -> Path:
    """The session's ``timesteps_per_second`` CSV (a run directory or a committed copy)."""
    for path in (session / "logs" / "scalars" / "train" / "timesteps_per_second.csv",
                 session / "timesteps_per_second.csv"):  # fmt: skip
        if path.is_file():
            return path
    raise SystemExit(f"{session}: no timesteps_per_second.csv (logs/scalars/train/ or here)")


def session_clock(sessions: list[Path], first_timesteps: list[int]):
    """``seconds(timestep)`` over the sessions, from their cumulative rates."""
    pieces, offset = [], 0.0
    for session, start in zip(sessions, first_timesteps, strict=True):
        rows = np.array([[float(a), float(b)] for a, b in csv.reader(rate_file(session).open())])
        steps, rates = rows[:, 0], rows[:, 1]
        seconds = (steps - start) / rates
        pieces.append((start, steps, seconds + offset))
        offset += seconds[-1]

    def seconds(timestep: int) -> float:
        for start, steps, clock in reversed(pieces):
            if timestep >= start:
                return float(np.interp(timestep, steps, clock))
        raise ValueError(timestep)

    return seconds


def evaluations(sessions: list[Path]) -> list[dict]:
    """The run's evaluations ``[{timestep, success, minutes}]``, in timestep order."""
    records = [json.loads(line) for line in (sessions[-1] / "evaluations.jsonl").open()]
    if all("wall_clock_s" in r for r in records):
        minutes = [r["wall_clock_s"] / 60 for r in records]
    else:
        # a session resumes from the checkpoint the one before it ended with, whose last
        # evaluation is at the same timestep
        starts = [0]
        for session in sessions[:-1]:
            last = [json.loads(line) for line in (session / "evaluations.jsonl").open()][-1]
            starts.append(int(last["timestep"]))
        clock = session_clock(sessions, starts)
        minutes = [clock(int(r["timestep"])) / 60 for r in records]
    return [
        {"timestep": int(r["timestep"]), "success": r["eval/success_rate"], "minutes": m}
        for r, m in zip(records, minutes, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs="+", action="append", required=True,
                        metavar="LABEL DIR", help="a label, then the run's session directories")
    parser.add_argument("--minutes", nargs="+", type=float, default=[15, 30, 45, 60, 90])
    args = parser.parse_args()
    runs = {}
    for label, *dirs in args.run:
        if not dirs:
            raise SystemExit(f"--run {label}: give the run's directories after its label")
        runs[label] = evaluations([Path(d) for d in dirs])
    print("| wall clock | " + " | ".join(runs) + " |")
    print("| ---: " + "| ---: " * len(runs) + "|")
    for mark in args.minutes:
        cells = []
        for records in runs.values():
            done = [r for r in records if r["minutes"] <= mark]
            cells.append(f"{done[-1]['success']:.2f} ({done[-1]['timestep'] / 1e6:.2f}M)"
                         if done else "-")  # fmt: skip
        print(f"| {mark:g} min | " + " | ".join(cells) + " |")
    print()
    for label, records in runs.items():
        print(f"{label}: last evaluation at {records[-1]['minutes']:.0f} min, "
              f"timestep {records[-1]['timestep']:,}")


if __name__ == "__main__":
    main()
