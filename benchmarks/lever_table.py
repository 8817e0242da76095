"""The lever table of docs/results.md: what one change does to the last checkpoint, per seed.

``python benchmarks/lever_table.py --lever NAME WITH BASE [--lever ...]`` compares, for each
lever, the collected runs ``WITH`` (the change on) against ``BASE`` (everything else the same).
``WITH`` and ``BASE`` are comma-separated run directories written by
``scripts/collect_recipe_run.sh``, each ending in ``seed<N>``; runs are paired by seed, and a
seed present on one side only is refused. Per lever it prints one Markdown row:

* the seeds compared;
* the mean over seeds of the last checkpoint's large-set success (600 episodes per run) on each
  side;
* the per-seed differences ``WITH - BASE``, each with Newcombe's 95% interval (the noise of
  600 episodes per side only: what one seed can say);
* their mean with a percentile-bootstrap 95% interval over the seed pairs (two or three seeds
  give a rough interval: it spans the per-seed differences and says nothing beyond them; one
  seed gives none);
* the mean span of the last four kept checkpoints on each side (the issue's steadiness).

With ``--min-seeds N`` the rows compared on fewer than ``N`` seeds are printed apart, in a
second table after the first ("probes": what one or two seeds showed, not a claim), so that a
row moves into the lever table by itself once its seeds are collected.

The large-set evaluations are ``large/<timestep>.json``, read with ``benchmarks/recipe_table.py``;
a directory with none (a planner scored by itself, e.g. ``results/recipes/rainbow/cvar0.25/``)
gives its ``evaluation_large.json``, one evaluation and no span.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.recipe_table import large_evaluations, successes  # noqa: E402
from marinenav.run_files import LARGE_NAME  # noqa: E402
from marinenav.stats import bootstrap_mean_interval, difference_interval  # noqa: E402

SEED = re.compile(r"seed(\d+)$")
KEPT = 4  # the kept checkpoints whose span measures a steady end


def seed_of(run: Path) -> int:
    """The seed in the run directory's name (``.../NAME_seed<N>`` or ``.../seed<N>``)."""
    match = SEED.search(run.name)
    if match is None:
        raise SystemExit(f"{run}: the directory name must end in seed<N>")
    return int(match.group(1))


def last_and_span(run: Path) -> tuple[tuple[int, int], float | None]:
    """The last checkpoint's large-set ``(successes, episodes)`` and the span (max - min) of the
    success rates of the last ``KEPT`` kept checkpoints (``None`` for a run with fewer
    large-set evaluations, e.g. one derived from another run's last checkpoint)."""
    if not any(path.stem.isdigit() for path in (run / "large").glob("*.json")):
        single = run / LARGE_NAME
        if single.is_file():  # one collected evaluation, no checkpoints to span
            return successes(json.loads(single.read_text())), None
    counts = [successes(metrics) for metrics in large_evaluations(run).values()][-KEPT:]
    rates = [s / n for s, n in counts]
    return counts[-1], (max(rates) - min(rates)) if len(rates) == KEPT else None


def side(runs: str) -> dict[int, tuple[tuple[int, int], float | None]]:
    """``{seed: ((successes, episodes), span)}`` of comma-separated run directories."""
    out = {}
    for name in runs.split(","):
        run = Path(name).resolve()
        if not run.is_dir():
            raise SystemExit(f"{name}: no such run directory")
        seed = seed_of(run)
        if seed in out:
            raise SystemExit(f"{name}: seed {seed} given twice on one side")
        out[seed] = last_and_span(run)
    return out


def mean_span(runs: dict[int, tuple[tuple[int, int], float | None]], seeds: list[int]) -> str:
    """The mean over ``seeds`` of the runs' spans, formatted; ``n/a`` if a run has none."""
    spans = [runs[s][1] for s in seeds]
    return "n/a" if None in spans else f"{sum(spans) / len(spans):.3f}"


def row(name: str, with_runs: str, base_runs: str) -> tuple[int, str]:
    """The number of seeds compared and one Markdown row of the lever table."""
    on, off = side(with_runs), side(base_runs)
    if set(on) != set(off):
        raise SystemExit(f"{name}: seeds {sorted(on)} with the lever, {sorted(off)} without")
    seeds = sorted(on)
    per_seed = [difference_interval(*on[s][0], *off[s][0]) for s in seeds]
    diffs = [d for d, _, _ in per_seed]
    mean, low, high = bootstrap_mean_interval(diffs)
    over_seeds = f"{mean:+.3f}" + (f" [{low:+.3f}, {high:+.3f}]" if len(seeds) > 1 else "")
    on_mean = sum(on[s][0][0] / on[s][0][1] for s in seeds) / len(seeds)
    off_mean = sum(off[s][0][0] / off[s][0][1] for s in seeds) / len(seeds)
    on_span, off_span = mean_span(on, seeds), mean_span(off, seeds)
    cells = [name, ", ".join(map(str, seeds)), f"{on_mean:.3f}", f"{off_mean:.3f}",
             ", ".join(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for d, lo, hi in per_seed),
             over_seeds, f"{on_span} / {off_span}"]  # fmt: skip
    return len(seeds), "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lever", nargs=3, action="append", required=True, metavar=("NAME", "WITH", "BASE"),
        help="a lever's name, its runs with the change and without (comma-separated)",
    )  # fmt: skip
    parser.add_argument(
        "--min-seeds", type=int, default=1,
        help="rows on fewer seeds go to a second table of probes (default 1: one table)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.min_seeds < 1:
        parser.error(f"--min-seeds must be >= 1, got {args.min_seeds}")
    header = ["lever", "seeds", "with: last, large set (mean)", "without",
              "difference per seed (episodes' noise)", "mean difference (bootstrap over seeds)",
              "span of the last 4, with / without"]  # fmt: skip
    rows = [row(name, with_runs, base_runs) for name, with_runs, base_runs in args.lever]
    levers = [text for seeds, text in rows if seeds >= args.min_seeds]
    probes = [text for seeds, text in rows if seeds < args.min_seeds]
    for table, first in ((levers, "lever"), (probes, f"probe (< {args.min_seeds} seeds)")):
        if not table:
            continue
        if table is probes and levers:
            print()
        print("| " + " | ".join([first, *header[1:]]) + " |")
        print("| --- | --- | ---: | ---: | --- | ---: | ---: |")
        print("\n".join(table))


if __name__ == "__main__":
    main()
