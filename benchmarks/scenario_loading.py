"""CPU seconds to parse scenario dicts (the original's JSON layout) into a padded ``Scenario``.

``scenarios_from_dicts`` checks every key of every dict (names, lengths, shapes, numbers,
finiteness) in Python, gathers each key over all dicts into one tensor, and checks the
placements of all dicts at once: loading is not a hot path, but a scenario file of thousands of
episodes, or a fixed evaluation set, waits for it. The dict is the scenario of a
reference recording (default: the first, 5 robots), copied ``--copies`` times; the median of
``--repeats`` timed runs is printed with the machine.

Usage::

    python benchmarks/scenario_loading.py
    python benchmarks/scenario_loading.py --copies 3000 --file my_scenarios.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from marinenav.sim.scenario_json import scenarios_from_dicts, slots_needed
from marinenav.training.machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
FIRST_RECORDING = ROOT / "tests/data/reference/reference_000.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=FIRST_RECORDING,
                        help="a reference recording (its 'scenario') or one scenario dict")
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.copies < 1 or args.repeats < 1:
        parser.error("--copies and --repeats must be at least 1")
    data = json.loads(args.file.read_text())
    scenario = data.get("scenario", data)
    dicts = [scenario] * args.copies
    slots = slots_needed(dicts)
    times = []
    for _ in range(args.repeats):
        start = time.process_time()
        scenarios_from_dicts(dicts, slots, dtype=torch.float64)
        times.append(time.process_time() - start)
    median = statistics.median(times)
    print(f"{cpu_model()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s)")  # fmt: skip
    print(f"{args.copies} copies of {args.file.name} ({slots.robots} robot, {slots.obstacles} "
          f"obstacle, {slots.cores} core slots): {median:.2f} CPU s (median of {args.repeats}), "
          f"{1e3 * median / args.copies:.2f} ms per scenario")  # fmt: skip


if __name__ == "__main__":
    main()
