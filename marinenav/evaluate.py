"""Evaluate a trained run, a planner file or a classical baseline.

``python -m marinenav.evaluate RUN_DIR [--set paper|large] [--scenario LAYOUT [--option
KEY=VALUE ...] | --scenarios FILE ...]`` loads the run's agent from its checkpoint;
``python -m marinenav.evaluate --planner FILE.pt [--agent-type ac_iqn]`` loads a TorchScript
planner (the original's ``traced_*_model.pt`` or our export, :mod:`marinenav.planner`; our
``.pt2`` and ``.onnx`` exports load the same way); ``python -m marinenav.evaluate --baseline
apf|mpc [--variant textbook|original]`` builds the original's APF or MPC planner
(:mod:`marinenav.baselines`). Each runs an evaluation set
(:class:`~marinenav.training.evaluation.EvaluationSet`) all at once as one batched environment
with deterministic actions (a planner acts by its own rule: SAC samples, IQN draws its taus,
unless told otherwise), says which set on stderr, prints the original's metrics with Wilson 95%
intervals and per stage, writes them to ``--out`` as JSON, and renders pictures of the first
episodes (PNG frames and an animated GIF) when ``--pictures N`` is given (runs and baselines).
What would fail only at the end (an ``--out`` that cannot be written, a device this machine
lacks) is refused first.

The set: a run's own (its ``eval_configs.json``, in the run's slots, precision, noise seed and
step cap, so ``evaluate RUN_DIR`` reproduces the run's last evaluation); a named set
(:data:`SET_NAMES`) of the run's own layout with its options (for a run of the random layout,
and for planners and baselines, the random scenarios of the paper's curriculum) or of another
layout, ``--scenario harbour`` (its options with ``--option``, e.g. ``--scenario imazu --option
perception_range=90``); or scenario JSON files in the original's layout. A run is
evaluated in its own conditions whatever the set; planners and baselines in the original's
(float64, the paper's slots, noise seed 253, 1001 steps), unless ``--dtype`` / ``--seed`` /
``--max-steps`` say otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from tensordict.nn import TensorDictModuleBase

from marinenav.agents import Agent
from marinenav.baselines import BASELINES, BaselinePolicy, baseline_policy
from marinenav.cli import at_least, cvar_level, run_command
from marinenav.encounters import format_encounters
from marinenav.files import FileWriteError, check_writable, write_text
from marinenav.keys import check_seed, device_named, dtype_named
from marinenav.planner import PlannerLoadError, PlannerPolicy, planner_policy
from marinenav.scenarios import LAYOUTS, make_layout
from marinenav.sim import load_scenario_file
from marinenav.stats import format_rate
from marinenav.training.checkpoint import load_agent
from marinenav.training.evaluation import (
    ORIGINAL_SEED,
    SET_NAMES,
    EvaluationSet,
    Evaluator,
    run_conditions,
)
from marinenav.training.machine import machine_record

PLANNER_GAMMA = 0.99  # the original's discount, for the reported return of a planner


def evaluate_policy(
    policy: TensorDictModuleBase,
    evaluation_set: EvaluationSet,
    action_kind: str,
    gamma: float,
    device: str = "cpu",
    compact: bool = True,
) -> dict[str, Any]:
    """Metrics of ``policy`` on ``evaluation_set`` (:class:`Evaluator`). Episodes of one own
    ship among traffic (the Imazu cases) also get their encounters' COLREGs checks
    (:mod:`marinenav.encounters`): ``metrics["encounters"]`` per episode and
    ``metrics["colregs"]``, how many such episodes kept the COLREGs."""
    evaluator = Evaluator(evaluation_set, action_kind, gamma, device)
    return evaluator.run_with_encounters(policy, compact=compact)


def evaluate_agent(
    agent: Agent, evaluation_set: EvaluationSet, device: str = "cpu"
) -> dict[str, Any]:
    """Metrics of a trained ``agent``'s policy on ``evaluation_set``."""
    return evaluate_policy(
        agent.policy, evaluation_set, agent.action_kind, agent.config.gamma, device
    )


def act_at_cvar(agent: Agent, level: float) -> None:
    """Make an agent that acts on a return distribution act on ``CVaR_level`` instead of its
    own ``agent.cvar_alpha``: IQN (its policy's fractions ``tau ~ U(0, level)``) and Rainbow
    (the lower ``level`` of its probabilities); ``ValueError`` for another agent or a level
    outside (0, 1]."""
    if not agent.policy.selector.acts_on_cvar:
        raise ValueError(f"--cvar is for agents that act on a return distribution (IQN, "
                         f"Rainbow); this run's agent is {agent.name}")  # fmt: skip
    agent.policy.set_cvar(level)


def evaluate_planner(
    policy: PlannerPolicy, evaluation_set: EvaluationSet, compact: bool = True
) -> dict[str, Any]:
    """Metrics of a planner file's policy (:mod:`marinenav.planner`) on ``evaluation_set``, on
    the CPU; its random stream (IQN's taus, SAC's noise) restarts from the set's noise seed."""
    policy.set_seed(evaluation_set.noise_seed)
    return evaluate_policy(
        policy, evaluation_set, policy.action_kind, PLANNER_GAMMA, "cpu", compact
    )


def evaluate_baseline(policy: BaselinePolicy, evaluation_set: EvaluationSet) -> dict[str, Any]:
    """Metrics of a classical baseline (:mod:`marinenav.baselines`, deterministic) on
    ``evaluation_set``, on the CPU."""
    return evaluate_policy(policy, evaluation_set, policy.action_kind, PLANNER_GAMMA, "cpu")


def run_evaluation_set(
    run_dir: str | Path,
    config: dict[str, Any],
    name: str | None = None,
    scenario_files: list[str | Path] | None = None,
) -> EvaluationSet:
    """A run's evaluation set in the run's conditions: the scenarios of the given files, the
    named set ``name`` of the run's layout, or the run's own set as it recorded it
    (``eval_configs.json``, read and checked as any scenario file: a torn or edited one is one
    line naming it)."""
    if scenario_files:
        return EvaluationSet.of_files(scenario_files, **run_conditions(config))
    if name is not None:
        return EvaluationSet.of_run(config, name)
    recorded = load_scenario_file(Path(run_dir) / "eval_configs.json")
    return EvaluationSet.of_run(config, scenarios=recorded)


def evaluate_run(
    run_dir: str | Path,
    name: str | None = None,
    scenario_files: list[str | Path] | None = None,
    device: str = "cpu",
    max_steps: int | None = None,
) -> tuple[dict[str, Any], EvaluationSet]:
    """Metrics of the run's agent on one of its sets (:func:`run_evaluation_set`; by default
    its own, as its last evaluation measured it), and the set. ``max_steps`` replaces the
    run's step cap."""
    agent, config = load_agent(run_dir, device)
    evaluation_set = run_evaluation_set(run_dir, config, name, scenario_files)
    if max_steps is not None:
        evaluation_set = evaluation_set.replace(max_steps=max_steps)
    return evaluate_agent(agent, evaluation_set, device), evaluation_set


def format_table(metrics: dict[str, Any]) -> str:
    """The aggregate metrics as a small Markdown table; success rates carry their episode count
    and Wilson 95% interval; a set with encounter episodes adds how many kept the COLREGs, the
    turn read from the start and from sighting (:mod:`marinenav.encounters`)."""
    rows = ["| metric | value |", "| --- | ---: |"]
    episodes = metrics["episodes"]["success"]
    per_stage = [k for k in metrics if k.startswith("eval/success_rate_stage")]
    stage_size = len(episodes) // len(per_stage) if per_stage else 0
    for name, value in metrics.items():
        if not name.startswith("eval/"):
            continue
        if value is None:
            shown = "n/a (no successful episode)"
        elif name == "eval/success_rate":
            shown = format_rate(sum(episodes), len(episodes))
        elif name in per_stage:
            shown = format_rate(round(value * stage_size), stage_size)
        else:
            shown = f"{value:.3f}"
        rows.append(f"| {name[5:]} | {shown} |")
    if "colregs" in metrics:  # encounter episodes: the COLREGs kept, both readings of the turn
        colregs = metrics["colregs"]
        rows.append(f"| colregs_kept | {colregs['kept']} of {colregs['episodes']} |")
        sighted = colregs["kept_sighted"]
        rows.append(f"| colregs_kept_sighted | {sighted} of {colregs['episodes']} |")
    rows.append(f"| episodes | {len(episodes)} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m marinenav.evaluate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("run_dir", nargs="?", help="a training run directory (holds checkpoint.pt)")
    parser.add_argument("--planner",
                        help="a planner file (TorchScript, .pt2 or .onnx) instead of a run")
    parser.add_argument("--baseline", choices=tuple(BASELINES),
                        help="a classical planner of the original instead of a run")
    parser.add_argument("--variant", default="textbook",
                        help="baselines: textbook (default) or original (the node's: "
                             "unclamped thrusts; APF repulsion beyond d0)")
    parser.add_argument("--planning-period", type=float, default=None,
                        help="baselines: the prediction step in s (default 0.5, one env step)")
    parser.add_argument("--agent-type", help="the planner's agent (default: from the file)")
    parser.add_argument("--sac-action", choices=("sample", "mean"), default="sample",
                        help="SAC planners: sample as the C++ planner does, or the mean action")
    parser.add_argument("--iqn-taus", choices=("random", "midpoints"), default="random",
                        help="IQN planners: U(0,1) taus as the C++ planner, or fixed midpoints")
    parser.add_argument("--cvar", type=cvar_level, default=None,
                        help="IQN and Rainbow planners and runs: act on the mean of the worst "
                             "CVAR of returns (IQN: taus scaled to [0, CVAR]; Rainbow: the lower "
                             "CVAR of its probabilities; default: a planner 1, the node's mean; "
                             "a run its agent.cvar_alpha)")
    parser.add_argument("--online", action="store_true",
                        help="a run that averaged its acting network's weights "
                             "(training.policy_average_start) acts with the online network its "
                             "checkpoint keeps, not the average (default: the average, as its "
                             "evaluations and exported planner)")
    parser.add_argument("--set", choices=SET_NAMES, default=None,
                        help="a named evaluation set of the run's own layout (default: the run's "
                             "own set; planners: paper); currents4 / currents8: the paper's "
                             "stages with 4 / 8 vortex cores")
    parser.add_argument("--scenarios", nargs="*", help="scenario JSON files (original layout)")
    parser.add_argument("--scenario", choices=tuple(sorted(LAYOUTS)), default=None,
                        help="a scenario layout's evaluation set, default options (with --set: "
                             "its episodes per stage and seed; default paper; imazu: its 22 "
                             "cases with their COLREGs checks)")
    parser.add_argument("--option", action="append", default=[], type=_option,
                        metavar="KEY=VALUE",
                        help="with --scenario: one of the layout's options, the value read as "
                             "YAML (repeatable; e.g. --scenario imazu --option "
                             "perception_range=90)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float64",
                        help="planners and baselines: simulation precision")
    parser.add_argument("--seed", type=_seed, default=ORIGINAL_SEED,
                        help="planners and baselines: noise seed of the evaluation (default "
                             "253, the original's; a run: its own)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-steps", type=at_least(1), default=None,
                        help="step cap of an episode (default: a run's evaluation.max_steps, "
                             "1001 for planners and baselines, the original's)")
    parser.add_argument("--out", help="write the metrics as JSON here")
    parser.add_argument("--pictures", type=at_least(0), default=0,
                        help="render the first N episodes")
    parser.add_argument("--pictures-dir", default=None,
                        help="default: RUN_DIR/pictures, or pictures_BASELINE_VARIANT")
    args = parser.parse_args(argv)  # fmt: skip
    if sum(x is not None for x in (args.run_dir, args.planner, args.baseline)) != 1:
        parser.error("give a run directory, --planner FILE or --baseline NAME (one of them)")
    if args.online and not args.run_dir:
        parser.error("--online chooses a run's network; a planner file or baseline has one")
    if args.set and args.scenarios:
        parser.error("give --set or --scenarios, not both")
    if args.scenario and args.scenarios:
        parser.error("give --scenario or --scenarios, not both")
    if args.option and not args.scenario:
        parser.error("--option sets an option of --scenario LAYOUT; give the layout")
    _check_before_work(parser, args)
    try:
        if args.planner:
            policy = planner_policy(
                args.planner, args.agent_type, sac_action=args.sac_action, taus=args.iqn_taus,
                cvar=1.0 if args.cvar is None else args.cvar,
            )  # fmt: skip
            chosen = _chosen_set(args, None)
            metrics = evaluate_planner(policy, chosen)
            metrics["planner"] = {"file": str(args.planner), "agent": policy.agent_type,
                                  "sac_action": args.sac_action, "iqn_taus": args.iqn_taus,
                                  "cvar": args.cvar}  # fmt: skip
        elif args.baseline:
            options = {} if args.planning_period is None else {
                "planning_period": args.planning_period}  # fmt: skip
            policy = baseline_policy(args.baseline, args.variant, **options)
            chosen = _chosen_set(args, None)
            metrics = evaluate_baseline(policy, chosen)
            metrics["baseline"] = {"name": args.baseline, "variant": args.variant,
                                   "planning_period": policy.planning_period}  # fmt: skip
        else:
            agent, config = load_agent(args.run_dir, args.device, average=not args.online)
            if args.cvar is not None:
                act_at_cvar(agent, args.cvar)
            chosen = _chosen_set(args, config)
            metrics = evaluate_agent(agent, chosen, args.device)
            if args.cvar is not None:
                metrics["cvar"] = args.cvar
            if args.online:
                metrics["acting"] = "online network (not the run's weight average)"
    except (FileNotFoundError, ValueError, PlannerLoadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    # the code and machine that evaluated: an evaluation's numbers are its simulator's
    metrics["evaluated_by"] = machine_record(args.device if args.run_dir else "cpu")
    print(f"marinenav: evaluated on {chosen.label}", file=sys.stderr)
    print(format_table(metrics))
    if "encounters" in metrics:
        print()
        print(format_encounters(metrics["encounters"], metrics["episodes"]["success"],
                                chosen.episode_labels()))  # fmt: skip
    if args.out:
        try:
            write_text(args.out, json.dumps(metrics, indent=1))
        except FileWriteError as error:  # checked writable at the start; the disk filled since
            print(f"error: {error} (the metrics above were not saved)", file=sys.stderr)
            return 1
    if args.pictures and not args.planner:
        from marinenav.viz import record_episodes, save_animation, save_frames

        target = _pictures_dir(args)
        drawn = range(min(args.pictures, len(chosen)))
        recordings = record_episodes(agent if args.run_dir else policy, chosen, drawn, args.device)
        for k, recording in zip(drawn, recordings, strict=True):
            frames = save_frames(recording, target / f"episode_{k:03d}")
            gif = save_animation(recording, target / f"episode_{k:03d}.gif")
            print(f"episode {k}: {len(frames)} frames in {frames[0].parent}, animation {gif}")
    return 0


def _chosen_set(args: argparse.Namespace, config: dict[str, Any] | None) -> EvaluationSet:
    """The evaluation set the arguments name, in the run's conditions (``config``, a run's) or
    the original's with ``--dtype``, ``--seed`` (planners and baselines), and ``--max-steps``:
    scenario files; a layout's named set (``--scenario``, default paper); for a run, its own
    set by default and, with ``--set``, that named set of the run's own layout (its options;
    for the random layout, of the paper's curriculum, the sets every agent is compared on);
    for a planner or a baseline, a named set of the random scenarios (default paper)."""
    if config is not None:
        conditions = run_conditions(config)
    else:
        conditions = {"dtype": dtype_named(args.dtype), "noise_seed": args.seed}
    if args.max_steps is not None:
        conditions["max_steps"] = args.max_steps
    if args.scenarios:
        return EvaluationSet.of_files(args.scenarios, **conditions)
    if args.scenario:
        options = dict(args.option)
        layout = make_layout(args.scenario, options)
        given = ", ".join(f"{key}={value}" for key, value in options.items()) or "default options"
        return EvaluationSet.named(args.set or "paper", layout,
                                   whose=f"the {layout.name} layout ({given})",
                                   **conditions)  # fmt: skip
    if config is None:
        return EvaluationSet.named(args.set or "paper", **conditions)
    chosen = run_evaluation_set(args.run_dir, config, args.set)
    return chosen if args.max_steps is None else chosen.replace(max_steps=args.max_steps)


def _option(text: str) -> tuple[str, Any]:
    """An argparse type: ``KEY=VALUE``, a layout option with its value read as YAML."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"an option is KEY=VALUE, got {text!r}")
    return key, yaml.safe_load(value)


def _seed(text: str) -> int:
    """An argparse type: a seed (:func:`marinenav.keys.check_seed`)."""
    try:
        return check_seed(int(text), "the seed")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _pictures_dir(args: argparse.Namespace) -> Path:
    """Where ``--pictures`` go: ``--pictures-dir``, else RUN_DIR/pictures or
    pictures_BASELINE_VARIANT."""
    if args.pictures_dir:
        return Path(args.pictures_dir)
    if args.run_dir:
        return Path(args.run_dir) / "pictures"
    return Path(f"pictures_{args.baseline}_{args.variant}")


def _check_before_work(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before anything is loaded or evaluated, what would fail only at the end: a
    device this machine lacks, an ``--out`` or pictures directory that cannot be written."""
    try:
        device_named(args.device, f"--device {args.device}")
        if args.out:
            check_writable(args.out, "--out")
        if args.pictures and args.planner:
            raise ValueError("--pictures draws runs and baselines; for a planner file use "
                             "python -m marinenav.viz episode --planner FILE")  # fmt: skip
        if args.pictures:
            check_writable(_pictures_dir(args) / "episode_000.gif", "--pictures-dir")
    except ValueError as error:
        parser.error(str(error))


if __name__ == "__main__":
    run_command(main, "python -m marinenav.evaluate")
