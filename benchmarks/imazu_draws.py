"""The Imazu bar over noise draws: how much one planner's count of the 22 cases moves with the
evaluation's noise seed alone (docs/results.md, "The Imazu count over noise draws").

The mixed recipe's bar asks, of one evaluation (noise seed 253), >= 20 of the 22 Imazu cases
solved and the COLREGs checks kept in >= 18. The geometry of the cases is fixed; what a seed
changes is the perception noise the planner acts on (and a planner's own random stream). This
script evaluates each planner file as the node runs it (float64, ``marinenav.evaluate
--planner FILE --scenario imazu --seed S``) for every seed of ``--seeds`` and prints, per
planner, one row per draw (cases solved, cases kept), their mean, range and how many draws meet
the bar, and per case in how many draws it was solved and kept.

    python benchmarks/imazu_draws.py PLANNER.pt ... [--seeds 253-262] [--labels A B ...]
        [--cvar LEVEL]

``--cvar`` acts as ``marinenav.evaluate --cvar`` does (IQN and Rainbow planners): on the mean of
the worst LEVEL of the file's return distribution; a file exported at ``agent.cvar_alpha`` holds
its level already and the two multiply (0.4 on a planner exported at 0.25 acts at 0.1).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

SOLVED_BAR, KEPT_BAR = 20, 18  # the mixed recipe's Imazu bar (issue 32)


def seed_range(text: str) -> list[int]:
    """``"253-262"`` or ``"253,300"``: the noise seeds to draw."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a seed or a range of seeds: {part!r}") from None
        if high < low:
            raise argparse.ArgumentTypeError(f"a range must not decrease: {part!r}")
        seeds += range(low, high + 1)
    return seeds


def draw(planner: Path, seed: int, cvar: float = 1.0) -> tuple[list[bool], list[bool]]:
    """One evaluation of ``planner`` on the 22 cases at noise seed ``seed``, acting at CVaR
    level ``cvar`` on top of the file's own: per case, solved and COLREGs kept (kept counts
    solved cases only, as the evaluation's count does)."""
    from marinenav.evaluate import evaluate_planner
    from marinenav.planner import planner_policy
    from marinenav.scenarios import make_layout
    from marinenav.training.evaluation import EvaluationSet

    evaluation_set = EvaluationSet.named(
        "paper", make_layout("imazu"), dtype=torch.float64, noise_seed=seed
    )
    metrics = evaluate_planner(planner_policy(planner, cvar=cvar), evaluation_set)
    solved = [bool(s) for s in metrics["episodes"]["success"]]
    kept = [bool(r is not None and r["colregs_kept"]) for r in metrics["encounters"]]
    return solved, kept


def report(label: str, seeds: list[int], draws: list[tuple[list[bool], list[bool]]]) -> str:
    """The Markdown block of one planner: a row per draw, the summary line, per-case counts."""
    solved = [sum(s) for s, _ in draws]
    kept = [sum(k) for _, k in draws]
    meeting = sum(s >= SOLVED_BAR and k >= KEPT_BAR for s, k in zip(solved, kept, strict=True))
    lines = [f"{label}: {len(draws)} draws", "", "| noise seed | solved | kept |",
             "| ---: | ---: | ---: |"]  # fmt: skip
    lines += [f"| {seed} | {s} | {k} |" for seed, s, k in zip(seeds, solved, kept, strict=True)]
    cases = range(len(draws[0][0]))
    lines += [
        "",
        f"solved: mean {statistics.mean(solved):.1f}, {min(solved)}-{max(solved)}; kept: mean "
        f"{statistics.mean(kept):.1f}, {min(kept)}-{max(kept)}; draws meeting the bar "
        f"(>= {SOLVED_BAR} solved, >= {KEPT_BAR} kept): {meeting} of {len(draws)}",
        "",
        "| case | " + " | ".join(str(c + 1) for c in cases) + " |",
        "| --- |" + " ---: |" * len(cases),
    ]
    for row, column in (("solved", 0), ("kept", 1)):
        counts = (str(sum(d[column][c] for d in draws)) for c in cases)
        lines.append(f"| {row} | " + " | ".join(counts) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from marinenav.cli import cvar_level

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("planners", nargs="+", type=Path, help="planner files (TorchScript)")
    parser.add_argument("--seeds", type=seed_range, default=seed_range("253-262"),
                        help="noise seeds, e.g. 253-262 or 253,300 (default 253-262)")
    parser.add_argument("--labels", nargs="+", help="one name per planner (default: the paths)")
    parser.add_argument("--cvar", type=cvar_level, default=1.0,
                        help="IQN and Rainbow planners: act on the worst CVAR of the file's "
                             "return distribution (default 1: the file as the node runs it)")
    args = parser.parse_args(argv)
    if args.labels is not None and len(args.labels) != len(args.planners):
        parser.error(f"--labels names {len(args.labels)} planners, {len(args.planners)} given")
    missing = [str(path) for path in args.planners if not path.is_file()]
    if missing:
        parser.error(f"no planner file {', '.join(missing)}")
    torch.set_num_threads(1)
    labels = args.labels or [str(path) for path in args.planners]
    from marinenav.planner import PlannerLoadError, planner_policy

    for path in args.planners:  # a file that cannot act at --cvar is refused before any draw
        try:
            planner_policy(path, cvar=args.cvar)
        except (ValueError, PlannerLoadError) as error:
            parser.error(f"{path}: {error}")
    for label, path in zip(labels, args.planners, strict=True):
        draws = [draw(path, seed, args.cvar) for seed in args.seeds]
        print(report(label, args.seeds, draws))
        print()


if __name__ == "__main__":
    main()
