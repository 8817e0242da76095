"""The per-checkpoint Imazu tables of docs/results.md ("Real waters"): every evaluated checkpoint
of a run on the 22 cases, from the Markdown records ``python -m marinenav.evaluate
RUN_DIR/evaluated/<timestep> --scenario imazu`` prints (kept as ``<result>/imazu/<timestep>.md``).

``python benchmarks/imazu_checkpoints.py RESULT_DIR ... [--labels A B ...]`` prints one row per
run: per checkpoint, the cases whose COLREGs checks all passed over the cases solved
("kept / solved"), the columns the checkpoints' timesteps; ``--travel-time`` adds under each run
the checkpoints' mean time to the goal of the solved cases (s).

``--by-travel-time`` prints instead, over every checkpoint of the given runs that solves at least
``--min-solved`` cases, the COLREGs kept against the mean time to the goal of the solved cases
(the record's ``travel_time``), in bins with edges ``--edges`` (seconds), and their Pearson
correlation.

``--by-validation`` prints, over the same checkpoints, the COLREGs kept against the run's own
validation success at that checkpoint (``<result>/evaluations.jsonl``, ``eval/success_rate`` at
the checkpoint's timestep) in bins with edges ``--validation-edges``, and how many keep at least
``--kept-bar`` cases: what choosing a checkpoint by its validation and its COLREGs count could
give.

``--sighted`` counts instead the cases kept with the rule-14/15 turn read from sighting (the
case table's column "COLREGs kept, turns from sighting", ``marinenav.encounters``); a record
printed before that column existed is refused by name.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

HEADER = "| case | success |"
KEPT = "COLREGs kept"  # the case table's column: the turn read from the start
KEPT_SIGHTED = "COLREGs kept, turns from sighting"  # the turn read from sighting
TRAVEL = re.compile(r"^\| travel_time \| (.+?) \|")  # "n/a (no successful episode)" -> nan


@dataclass(frozen=True)
class CheckpointRecord:
    """One checkpoint's Imazu record: ``timestep``, cases solved, cases with every COLREGs check
    kept, and the mean travel time of the solved cases (s; nan when none is solved)."""

    timestep: int
    solved: int
    kept: int
    travel_time: float


def read_record(path: Path, kept_column: str = KEPT) -> CheckpointRecord:
    """Parse one ``<timestep>.md`` Imazu record, its kept count from the case table's column
    ``kept_column``; a file that is not one, or without that column, is refused by name."""
    solved = kept = cases = 0
    travel = None
    seen_header = False
    column = -1  # the kept column, found in the header
    for line in path.read_text().splitlines():
        if line.startswith(HEADER):
            seen_header = True
            names = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if kept_column not in names:
                raise ValueError(f"{path}: the case table has no '{kept_column}' column")
            column = names.index(kept_column)
            continue
        match = TRAVEL.match(line)
        if match:
            value = match.group(1)
            travel = math.nan if value.startswith("n/a") else float(value)
        if seen_header and line.startswith("| case "):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            cases += 1
            solved += cells[1] == "yes"
            kept += cells[column] == "yes"
    if not seen_header or cases == 0 or travel is None:
        raise ValueError(
            f"{path}: not an Imazu record of `python -m marinenav.evaluate ... --scenario imazu` "
            "(no case table or no travel_time)"
        )
    try:
        timestep = int(path.stem)
    except ValueError:
        raise ValueError(f"{path}: the file name is not a checkpoint's timestep") from None
    return CheckpointRecord(timestep, solved, kept, travel)


def read_run(result: Path, kept_column: str = KEPT) -> list[CheckpointRecord]:
    """Every ``<result>/imazu/<timestep>.md`` in timestep order (:func:`read_record`)."""
    files = list((result / "imazu").glob("*.md"))
    if not files:
        raise ValueError(f"{result}: no imazu/<timestep>.md records")
    records = (read_record(path, kept_column) for path in files)
    return sorted(records, key=lambda r: r.timestep)


def _thousands(timestep: int) -> str:
    return f"{timestep // 1000}k" if timestep % 1000 == 0 else str(timestep)


def checkpoint_table(
    runs: list[tuple[str, list[CheckpointRecord]]], travel_time: bool = False
) -> str:
    """One Markdown row per (label, records) run, "kept / solved" per checkpoint; a run without
    a checkpoint that another has gets "-" there. ``travel_time``: under each run's row, a row of
    its checkpoints' mean travel times (s)."""
    steps = sorted({r.timestep for _, records in runs for r in records})
    lines = [
        "| run | " + " | ".join(_thousands(t) for t in steps) + " |",
        "| --- |" + " --- |" * len(steps),
    ]
    for label, records in runs:
        by_step = {r.timestep: f"{r.kept} / {r.solved}" for r in records}
        lines.append(f"| {label} | " + " | ".join(by_step.get(t, "-") for t in steps) + " |")
        if travel_time:
            times = {r.timestep: f"{r.travel_time:.1f}" for r in records}
            cells = " | ".join(times.get(t, "-") for t in steps)
            lines.append(f"| {label}, travel time (s) | {cells} |")
    return "\n".join(lines)


def pearson(x: list[float], y: list[float]) -> float:
    """The sample correlation of ``x`` and ``y`` (``statistics.correlation``; nan when either is
    constant or there are fewer than two points)."""
    try:
        return statistics.correlation(x, y)
    except statistics.StatisticsError:
        return math.nan


def _bins(edges: list[float], unit: str) -> list[tuple[float, float, str]]:
    """``(low, high, row name)`` of the bins that increasing ``edges`` cut the line into, from
    "under <first>" to "<last> and more" (``unit`` after each number)."""
    bounds = [-math.inf, *edges, math.inf]
    bins = []
    for low, high in zip(bounds[:-1], bounds[1:], strict=True):
        if low == -math.inf:
            name = f"under {high:g}{unit}"
        elif high == math.inf:
            name = f"{low:g}{unit} and more"
        else:
            name = f"{low:g}-{high:g}{unit}"
        bins.append((low, high, name))
    return bins


def travel_time_table(records: list[CheckpointRecord], edges: list[float]) -> str:
    """COLREGs kept per bin of mean Imazu travel time, with the correlation over ``records``."""
    if not records:
        raise ValueError("no checkpoint solves enough cases (see --min-solved)")
    lines = [
        "| mean Imazu travel time | checkpoints | COLREGs kept, mean | most |",
        "| --- | ---: | ---: | ---: |",
    ]
    for low, high, name in _bins(edges, " s"):
        inside = [r.kept for r in records if low <= r.travel_time < high]  # nan in no bin
        if inside:
            lines.append(
                f"| {name} | {len(inside)} | {sum(inside) / len(inside):.1f} | {max(inside)} |"
            )
        else:
            lines.append(f"| {name} | 0 | - | - |")
    r = pearson([c.travel_time for c in records], [float(c.kept) for c in records])
    lines.append("")
    lines.append(
        f"correlation of COLREGs kept with travel time: {r:.2f} ({len(records)} checkpoints)"
    )
    return "\n".join(lines)


def read_validation(result: Path) -> dict[int, float]:
    """``<result>/evaluations.jsonl``: the validation success rate per evaluated timestep."""
    path = result / "evaluations.jsonl"
    if not path.exists():
        raise ValueError(f"{result}: no evaluations.jsonl (the run's validations)")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {int(row["timestep"]): float(row["eval/success_rate"]) for row in rows}


def validation_table(
    checkpoints: list[tuple[CheckpointRecord, float]], edges: list[float], kept_bar: int
) -> str:
    """COLREGs kept per bin of validation success over ``(record, validation success)`` pairs,
    with the number of checkpoints keeping at least ``kept_bar`` cases in each bin."""
    if not checkpoints:
        raise ValueError("no checkpoint solves enough cases (see --min-solved)")
    lines = [
        f"| validation success | checkpoints | COLREGs kept, mean | most | keeping >= {kept_bar} |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for low, high, name in _bins(edges, ""):
        inside = [r.kept for r, success in checkpoints if low <= success < high]
        if inside:
            at_bar = sum(k >= kept_bar for k in inside)
            mean = sum(inside) / len(inside)
            lines.append(f"| {name} | {len(inside)} | {mean:.1f} | {max(inside)} | {at_bar} |")
        else:
            lines.append(f"| {name} | 0 | - | - | 0 |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="result directories with imazu/")
    parser.add_argument("--labels", nargs="+", help="a row label per result directory")
    parser.add_argument("--travel-time", action="store_true", help="a travel-time row per run")
    parser.add_argument("--by-travel-time", action="store_true")
    parser.add_argument("--min-solved", type=int, default=20)
    parser.add_argument("--edges", nargs="+", type=float, default=[27.0, 28.5, 30.0, 33.0])
    parser.add_argument("--by-validation", action="store_true")
    parser.add_argument("--validation-edges", nargs="+", type=float, default=[0.8, 0.9, 0.95])
    parser.add_argument("--kept-bar", type=int, default=18)
    parser.add_argument("--sighted", action="store_true",
                        help="count the cases kept with the turn read from sighting")  # fmt: skip
    args = parser.parse_args(argv)
    labels = args.labels or [str(path) for path in args.results]
    if len(labels) != len(args.results):
        parser.error(f"--labels gives {len(labels)} labels for {len(args.results)} directories")
    if args.min_solved < 1:
        parser.error("--min-solved must be at least 1 (a travel time needs a solved case)")
    if args.edges != sorted(args.edges):
        parser.error("--edges must be increasing")
    if args.validation_edges != sorted(args.validation_edges):
        parser.error("--validation-edges must be increasing")
    if args.by_travel_time and args.by_validation:
        parser.error("--by-travel-time and --by-validation are two tables: ask for one")
    try:
        column = KEPT_SIGHTED if args.sighted else KEPT
        runs = [
            (label, read_run(path, column))
            for label, path in zip(labels, args.results, strict=True)
        ]
        if args.by_validation:
            chosen_pairs = []
            for (_, records), path in zip(runs, args.results, strict=True):
                validation = read_validation(path)
                for r in records:
                    if r.solved < args.min_solved:
                        continue
                    if r.timestep not in validation:
                        raise ValueError(f"{path}: no validation at timestep {r.timestep}")
                    chosen_pairs.append((r, validation[r.timestep]))
            print(validation_table(chosen_pairs, args.validation_edges, args.kept_bar))
        elif args.by_travel_time:
            chosen = [r for _, records in runs for r in records if r.solved >= args.min_solved]
            print(travel_time_table(chosen, args.edges))
        else:
            print(checkpoint_table(runs, travel_time=args.travel_time))
    except ValueError as error:
        parser.exit(2, f"imazu_checkpoints: {error}\n")


if __name__ == "__main__":
    main()
