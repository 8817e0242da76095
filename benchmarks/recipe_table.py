"""Tabulate collected recipe runs (``results/recipes/<agent>/...``) as in docs/results.md.

``python benchmarks/recipe_table.py results/recipes/ac_iqn/seed* [--level 0.8]`` reads, per run
directory written by ``scripts/collect_recipe_run.sh``, its ``evaluations.jsonl`` (validation:
the trainer's paper set) and its ``large/<timestep>.json`` evaluations (the 600-episode large
set) and prints one Markdown row per run:

* the last checkpoint's large-set success with its Wilson 95% interval and per-stage rates;
* the large-set successes of the evaluated checkpoints kept (the last four by default), their
  mean and their span (max - min), the issue's measure of a steady end;
* the best validation checkpoint's large-set success (``large/best.json``);
* the run's own wall clock in minutes (``wall_clock_s`` of its last evaluation).

A last line gives the mean of the last checkpoints' large-set success over the runs with its
percentile-bootstrap 95% interval over runs (seeds).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.run_files import EVALUATIONS_NAME  # noqa: E402
from marinenav.stats import bootstrap_mean_interval, format_rate  # noqa: E402

STAGES = 6


def successes(metrics: dict) -> tuple[int, int]:
    """``(successes, episodes)`` of one evaluation JSON (``episodes.success`` is per episode)."""
    success = metrics["episodes"]["success"]
    return int(sum(bool(s) for s in success)), len(success)


def large_evaluations(run: Path) -> dict[int, dict]:
    """``{timestep: metrics}`` of the run's large-set evaluations of evaluated checkpoints."""
    found = {}
    for path in (run / "large").glob("*.json"):
        if path.stem.isdigit():
            found[int(path.stem)] = json.loads(path.read_text())
    if not found:
        raise SystemExit(f"{run}: no large/<timestep>.json (run scripts/collect_recipe_run.sh)")
    return dict(sorted(found.items()))


def row(run: Path) -> tuple[str, float]:
    """One Markdown row for ``run`` and its last checkpoint's large-set success rate."""
    lines = (run / EVALUATIONS_NAME).read_text().splitlines()
    validations = [json.loads(line) for line in lines]
    large = large_evaluations(run)
    last_t, last = max(large.items())
    if last_t != validations[-1]["timestep"]:
        raise SystemExit(f"{run}: last large evaluation {last_t} is not the last checkpoint "
                         f"{validations[-1]['timestep']}")  # fmt: skip
    succ, n = successes(last)
    rates = [successes(m)[0] / successes(m)[1] for m in large.values()]
    stages = " | ".join(f"{last[f'eval/success_rate_stage{i}']:.2f}" for i in range(STAGES))
    best_path = run / "large" / "best.json"
    best = "-"
    if best_path.exists():
        best = format_rate(*successes(json.loads(best_path.read_text())))
    minutes = validations[-1]["wall_clock_s"] / 60
    kept = ", ".join(f"{r:.3f}" for r in rates)
    cells = [str(run.relative_to(ROOT) if run.is_relative_to(ROOT) else run), f"{last_t:,}",
             f"{minutes:.0f}", format_rate(succ, n), stages, kept, f"{sum(rates) / len(rates):.3f}",
             f"{max(rates) - min(rates):.3f}",
             best]  # fmt: skip
    return "| " + " | ".join(cells) + " |", succ / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="collected run directories")
    args = parser.parse_args()
    header = ["run", "timesteps", "minutes", "last, large set",
              *(f"stage {i}" for i in range(STAGES)), "kept checkpoints, large set",
              "their mean", "span", "best (validation), large set"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("| --- | " + "---: | " * (len(header) - 5) + "--- | ---: | ---: | ---: |")
    lasts = []
    for run in args.runs:
        line, rate = row(run.resolve())
        print(line)
        lasts.append(rate)
    mean, low, high = bootstrap_mean_interval(lasts)
    print(f"\nmean of the last checkpoints over {len(lasts)} runs: {mean:.3f} "
          f"[{low:.3f}, {high:.3f}] (percentile bootstrap over runs)")


if __name__ == "__main__":
    main()
