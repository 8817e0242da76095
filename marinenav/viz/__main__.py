"""Command line pictures of training runs.

``python -m marinenav.viz episode RUN_DIR [--episode K] [--out DIR] [--gif] [--every N]``
    replays episode ``K`` of the run's fixed evaluation set (``eval_configs.json``; default the
    last, as the original's ``visualize_eval_episode.py``) with the run's trained agent,
    deterministically, and writes one PNG per drawn step (and an animated GIF with ``--gif``).
    The episode runs among its set, as the evaluation ran it (its drawing is the episode the
    evaluation measured); ``--alone`` runs it by itself (another draw of the perception noise).

``python -m marinenav.viz episode --baseline apf|mpc [--variant textbook|original]
[--set NAME] [--scenario LAYOUT] [--episode K] [--out DIR] [--gif]``
    the same for a classical baseline (``marinenav.baselines``) or, with ``--planner FILE``, a
    planner file, on episode ``K`` of a named evaluation set (of ``--scenario``'s layout: e.g.
    ``imazu``, whose episode ``K`` is case ``K + 1``), in the planners' evaluation layout
    (float64, seed 253).

``python -m marinenav.viz curves RUN_DIR [RUN_DIR ...] --out learning_curves.png
[--group-by agent | run | KEY] [--labels L ...]``
    plots the learning curves of the runs, seeds of one label averaged (mean +- standard
    error), and prints each run's last success rate.

``python -m marinenav.viz runs DIR [DIR ...]``
    prints a table of the runs: agent, seed, overrides, timesteps, wall clock, last and best
    validation success with Wilson 95% intervals (``marinenav.viz.runs``).

    With several runs of one recipe (same agent and overrides, other seeds) it adds a row per
    recipe: IQM, mean and median of the runs' last-checkpoint success with stratified bootstrap
    95% intervals and the worst run (``--score auto|large|validation``; rliable).

``python -m marinenav.viz compare GROUP [GROUP ...] [--labels L ...] [--out profiles.png]``
    recipes over seeds (``marinenav.viz.compare``): each ``GROUP`` is one recipe's runs (a
    sweep, a directory of runs, or a quoted glob of runs or of evaluation files, one per run, as
    ``results/evaluations/waters/<label>__<water>.json``); prints the IQM, mean and median with
    stratified bootstrap intervals and the worst run, the probability that each recipe's run
    beats another's, and draws the performance profiles.

``python -m marinenav.viz cases METRICS.json [...] --labels L ... --out imazu_cases.png``
    draws a table figure of per-case results of encounter sets (``evaluate --scenario imazu
    --out METRICS.json``): one row per file, a cell per case, solved and COLREGs kept, solved
    with a rule broken, or failed.

Every command that takes several runs also takes a sweep directory (``multirun/DATE/TIME``:
its run directories ``0``, ``1``, ... in order) and skips files among its arguments (the
``multirun.yaml`` of ``SWEEP/*``).

``python -m marinenav.viz time-to-quality RUN_DIR [RUN_DIR ...] --level 0.8 --out quality.png``
    prints, per run, the wall-clock minutes until the validation success reached the level and
    until it stayed there, the last and best validation success and the last checkpoint's
    large-set success (``marinenav.viz.quality``), and plots success against wall clock; with
    ``--labels`` (a label per run), the median and the band of the middle half over each
    label's runs (seeds), against wall-clock and CPU minutes.

Exit status 0 on success, 2 on a usage error or a missing or incomplete run directory.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from marinenav.cli import at_least, run_command
from marinenav.files import FileWriteError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m marinenav.viz", description="Pictures of marinenav training runs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    episode = commands.add_parser(
        "episode", help="replay one evaluation episode of a run as PNG frames (and a GIF)"
    )
    episode.add_argument(
        "run_dir", type=Path, nargs="?", help="run directory (holds checkpoint.pt)"
    )
    episode.add_argument(
        "--baseline", choices=("apf", "mpc"), default=None,
        help="replay a classical baseline instead of a run's agent",
    )
    episode.add_argument("--variant", default="textbook", help="baseline variant")
    episode.add_argument(
        "--planner", type=Path, default=None,
        help="replay a planner file (TorchScript, the original's or ours) instead of a run",
    )
    episode.add_argument(
        "--set", default="paper",
        help="baselines and planners (runs with --scenario): the named evaluation set the "
             "episode comes from (default paper; the names evaluate --set takes)",
    )
    episode.add_argument(
        "--scenario", default=None,
        help="the episode comes from this layout's evaluation set (e.g. imazu: case K+1 is "
             "--episode K; harbour) instead of the run's own or the random scenarios",
    )
    episode.add_argument(
        "--episode",
        type=int,
        default=-1,
        help="index into eval_configs.json, negative from the end (default -1)",
    )
    episode.add_argument(
        "--out", type=Path, default=None, help="output directory (default RUN_DIR/episode_K)"
    )
    episode.add_argument("--gif", action="store_true", help="also write an animated GIF")
    episode.add_argument(
        "--every", type=at_least(1), default=1, help="draw every N-th step (default 1)"
    )
    episode.add_argument("--fps", type=float, default=10.0, help="GIF frames per second")
    episode.add_argument(
        "--max-steps",
        type=at_least(1),
        default=None,
        help="episode step cap (default the set's own: a run's evaluation.max_steps, 1001 "
             "for planners and baselines)",
    )
    episode.add_argument(
        "--alone",
        action="store_true",
        help="run the episode by itself instead of among its set (quicker for one episode of "
             "a large set; its perception noise, and a planner's random inputs, are then "
             "another draw than the set's evaluation measured)",
    )
    episode.add_argument("--device", default="cpu", help="torch device (default cpu)")
    curves = commands.add_parser("curves", help="plot learning curves of one or several runs")
    curves.add_argument(
        "run_dirs", type=Path, nargs="+", help="run directories (seeds, agents) or sweeps"
    )
    curves.add_argument(
        "--out",
        type=Path,
        default=Path("learning_curves.png"),
        help="image file (default learning_curves.png)",
    )
    curves.add_argument(
        "--group-by", default="agent", help="agent (default), run, or a dotted config key"
    )
    curves.add_argument(
        "--labels",
        nargs="+",
        default=None,
        help="explicit group label per run (after sweeps are expanded; overrides --group-by)",
    )
    curves.add_argument(
        "--per-stage",
        action="store_true",
        help="one panel per curriculum stage: the success rate on that stage's episodes",
    )
    runs = commands.add_parser(
        "runs", help="tabulate runs or a whole sweep: agent, seed, overrides, last and best success"
    )
    runs.add_argument("run_dirs", type=Path, nargs="+", help="run or sweep directories")
    runs.add_argument(
        "--score", choices=("auto", "large", "validation"), default="auto",
        help="what the aggregate rows score: the last checkpoint on the large set "
             "(evaluation_large.json), the last validation, or auto (large where every run of "
             "the group has it)",
    )
    runs.add_argument(
        "--reps", type=at_least(100), default=50_000,
        help="bootstrap resamples of the aggregate rows (default 50,000; at least 100)",
    )
    compare = commands.add_parser(
        "compare",
        help="recipes over seeds: IQM, mean, median with bootstrap intervals, worst run, "
             "probability of improvement, performance profiles (rliable)",
    )
    compare.add_argument(
        "groups", nargs="+",
        help="one recipe's runs each: a sweep directory, a directory of run directories, a run "
             "directory, a quoted glob of run directories, or a quoted glob of evaluation files "
             "(marinenav.evaluate --out), one per run",
    )
    compare.add_argument("--labels", nargs="+", default=None, help="a label per group")
    compare.add_argument(
        "--score", choices=("auto", "large", "validation"), default="auto",
        help="as for runs (auto: the large set where every run has it, else validation)",
    )
    compare.add_argument(
        "--reps", type=at_least(100), default=50_000,
        help="bootstrap resamples of the aggregates (default 50,000, at least 100; P(X > Y) at "
             "most 2,000)",
    )
    compare.add_argument(
        "--out", type=Path, default=Path("performance_profiles.png"), help="image file"
    )
    quality = commands.add_parser(
        "time-to-quality",
        help="minutes until the validation success reaches a level and stays; success vs clock",
    )
    quality.add_argument("run_dirs", type=Path, nargs="+", help="run or sweep directories")
    quality.add_argument("--level", type=float, default=0.8, help="success level (default 0.8)")
    quality.add_argument(
        "--out", type=Path, default=Path("time_to_quality.png"), help="image file"
    )
    quality.add_argument(
        "--labels", nargs="+", default=None,
        help="a label per run (after sweeps are expanded): runs of one label are seeds of one "
             "recipe, drawn as the median over them with the band of their middle half, "
             "against wall-clock and CPU minutes",
    )
    cases = commands.add_parser(
        "cases", help="a table figure of per-case results of encounter sets (the Imazu cases)"
    )
    cases.add_argument("metrics", type=Path, nargs="+",
                       help="evaluation JSON files with encounter checks (evaluate --out)")
    cases.add_argument("--labels", nargs="+", default=None, help="a row label per file")
    cases.add_argument("--out", type=Path, default=Path("imazu_cases.png"), help="image file")
    return parser  # fmt: skip


def _episode(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from marinenav.scenarios import LAYOUTS, make_layout
    from marinenav.sim import load_scenario_file
    from marinenav.training.checkpoint import load_agent
    from marinenav.training.evaluation import SET_NAMES, EvaluationSet, run_conditions
    from marinenav.viz.episode import record_episode, save_animation, save_frames

    sources = [args.run_dir, args.baseline, args.planner]
    if sum(x is not None for x in sources) != 1:
        parser.error("give a run directory, --baseline NAME or --planner FILE (one of them)")
    if args.set not in SET_NAMES:
        parser.error(f"--set {args.set!r}: choose one of {', '.join(SET_NAMES)}")
    if args.scenario is not None and args.scenario not in LAYOUTS:
        parser.error(f"--scenario {args.scenario!r}: choose one of {', '.join(sorted(LAYOUTS))}")
    layout = make_layout(args.scenario) if args.scenario else None
    if args.run_dir is not None and layout is None and not (
        args.run_dir / "eval_configs.json"
    ).is_file():
        parser.error(f"no eval_configs.json in {args.run_dir}")
    if args.planner is not None:
        from marinenav.planner import PlannerLoadError, planner_policy

        try:
            agent = planner_policy(args.planner)
        except (FileNotFoundError, PlannerLoadError) as error:
            parser.error(str(error))
    elif args.baseline is not None:
        from marinenav.baselines import baseline_policy

        try:
            agent = baseline_policy(args.baseline, args.variant)
        except ValueError as error:
            parser.error(str(error))
    else:
        try:
            agent, config = load_agent(args.run_dir, args.device)
        except FileNotFoundError as error:
            parser.error(str(error))
    # the set and its conditions: a run's own (its recorded set, slots, precision, noise seed
    # and step cap: the noise depends on them), or a named set (planners: the original's)
    if args.run_dir is not None and layout is None:
        recorded = load_scenario_file(args.run_dir / "eval_configs.json")
        evaluation_set = EvaluationSet.of_run(config, scenarios=recorded)
        source = str(args.run_dir)
    else:
        conditions = run_conditions(config) if args.run_dir is not None else {}
        evaluation_set = EvaluationSet.named(args.set, layout, **conditions)
        what = args.run_dir or args.planner or f"{args.baseline} ({args.variant})"
        source = f"{what} on the {args.scenario or 'random'} {args.set} set"
    if args.max_steps is not None:
        evaluation_set = evaluation_set.replace(max_steps=args.max_steps)
    if not -len(evaluation_set) <= args.episode < len(evaluation_set):
        parser.error(f"--episode {args.episode} out of range: the set has {len(evaluation_set)}")
    index = args.episode % len(evaluation_set)
    recording = record_episode(agent, evaluation_set, index, args.device, alone=args.alone)
    if args.out is not None:
        out = args.out
    elif args.run_dir is not None:
        out = args.run_dir / f"episode_{index}"
    elif args.planner is not None:
        out = Path(f"episode_{args.planner.stem}_{index}")
    else:
        out = Path(f"episode_{args.baseline}_{args.variant}_{index}")
    frames = save_frames(recording, out, every=args.every)
    outcome = "success" if recording.success else "failure"
    print(f"episode {index} of {source}: {recording.num_steps} steps "
          f"({recording.num_steps * recording.step_time:.1f} s), {outcome}")  # fmt: skip
    print(f"{len(frames)} frames in {out}")
    for path in frames:
        print(path)
    if args.gif:
        print(save_animation(recording, out / f"episode_{index}.gif", args.every, args.fps))


def _cases(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from marinenav.viz.cases import case_outcomes, plot_case_table

    labels = args.labels or [path.stem for path in args.metrics]
    if len(labels) != len(args.metrics):
        parser.error(f"{len(labels)} labels for {len(args.metrics)} files")
    for path, label in zip(args.metrics, labels, strict=True):
        try:
            metrics = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError) as error:
            parser.error(f"{path}: {error}")
        if "encounters" not in metrics:
            parser.error(f"{path} holds no encounter checks (evaluate an encounter set)")
        outcomes = case_outcomes(metrics)
        print(f"{label}: {outcomes.count('kept') + outcomes.count('broken')} of {len(outcomes)} "
              f"solved, {outcomes.count('kept')} kept the COLREGs")  # fmt: skip
    print(plot_case_table(args.metrics, labels, args.out))


def _curves(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from marinenav.viz.curves import load_runs, plot_learning_curves

    if args.labels is not None and len(args.labels) != len(args.run_dirs):
        parser.error(f"{len(args.labels)} labels for {len(args.run_dirs)} run directories")
    try:
        runs = load_runs(args.run_dirs, args.labels, args.group_by)
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    for run in runs:
        print(f"{run.run_dir} [{run.label}]: success rate {run.values['success_rate'][-1]:.3f} "
              f"at timestep {run.timesteps[-1]}")  # fmt: skip
    plot_learning_curves(
        args.run_dirs, args.out, args.labels, args.group_by, per_stage=args.per_stage
    )
    print(args.out)


def _time_to_quality(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from marinenav.viz.quality import plot_quality, plot_quality_bands, quality_table, read_run

    if not 0.0 <= args.level <= 1.0:
        parser.error(f"--level must be in [0, 1], got {args.level}")
    try:
        runs = [read_run(run_dir) for run_dir in args.run_dirs]
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    print(quality_table(runs, args.level))
    if args.labels is None:
        print(plot_quality(runs, args.level, args.out))
        return
    if len(args.labels) != len(runs):
        parser.error(f"{len(args.labels)} labels for {len(runs)} run directories")
    groups: dict[str, list] = {}
    for label, run in zip(args.labels, runs, strict=True):
        groups.setdefault(label, []).append(run)
    print(plot_quality_bands(groups, args.level, args.out))


def _compare(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from marinenav.aggregate import aggregate, aggregate_table, improvement_table
    from marinenav.viz.compare import group_scores, plot_performance_profiles

    labels = args.labels or list(args.groups)
    if len(labels) != len(args.groups):
        parser.error(f"{len(labels)} labels for {len(args.groups)} groups")
    if len(set(labels)) != len(labels):
        parser.error("two groups have the same label; name them with --labels")
    groups = []
    for spec, label in zip(args.groups, labels, strict=True):
        try:
            groups.append(aggregate(label, group_scores(spec, args.score), reps=args.reps))
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
    print(aggregate_table(groups))
    if len(groups) > 1:
        print()
        print(improvement_table(groups, reps=min(args.reps, 2_000)))
    print(plot_performance_profiles(groups, args.out))


def _runs(args: argparse.Namespace) -> None:
    from marinenav.aggregate import aggregate_table
    from marinenav.viz.compare import sweep_aggregates
    from marinenav.viz.runs import runs_table

    print(runs_table(args.run_dirs))
    groups = sweep_aggregates(args.run_dirs, args.score, reps=args.reps)
    if groups:
        print()
        print(aggregate_table(groups))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (argparse exits with 2 on errors, and for
    an output file that cannot be written)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _run(args, parser)
    except FileWriteError as error:  # an output that cannot be written: one line
        parser.error(str(error))


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The chosen subcommand (see :func:`main`)."""
    from marinenav.viz.runs import expand_run_dirs

    if args.command == "episode":
        if args.run_dir is not None and not args.run_dir.is_dir():
            parser.error(f"run directory {args.run_dir} does not exist")
        _episode(args, parser)
        return 0
    if args.command == "cases":
        _cases(args, parser)
        return 0
    if args.command == "compare":
        _compare(args, parser)
        return 0
    try:  # sweep directories become their runs; files (multirun.yaml) are skipped
        args.run_dirs = expand_run_dirs(args.run_dirs)
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    if args.command == "runs":
        _runs(args)
    elif args.command == "time-to-quality":
        _time_to_quality(args, parser)
    else:
        _curves(args, parser)
    return 0


if __name__ == "__main__":
    run_command(main, "python -m marinenav.viz")
