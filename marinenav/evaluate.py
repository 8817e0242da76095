"""Evaluate a trained run, a planner file or a classical baseline.

``python -m marinenav.evaluate RUN_DIR [--set paper|large] [--scenario LAYOUT | --scenarios
FILE ...]`` loads the run's agent from its checkpoint; ``python -m marinenav.evaluate --planner
FILE.pt [--agent-type ac_iqn]`` loads a TorchScript planner (the original's
``traced_*_model.pt`` or our export, :mod:`marinenav.planner`; our ``.pt2`` and ``.onnx`` exports
load the same way); ``python -m marinenav.evaluate
--baseline apf|mpc [--variant textbook|original]`` builds the original's APF or MPC planner
(:mod:`marinenav.baselines`). Each runs an evaluation set (the run's own ``eval_configs.json``
by default; a named set, :data:`EVALUATION_SETS`, of the run's own layout with its options (for
a run of the random layout, and for planners and baselines, the random scenarios of the paper's
curriculum) or of another layout, ``--scenario harbour``; or scenario JSON files in the
original's layout) all at once as one batched environment with deterministic actions (a
planner acts by its own rule: SAC samples, IQN draws its taus, unless told otherwise), says
which set on stderr, prints the original's metrics with Wilson 95% intervals and per stage,
writes them to ``--out`` as JSON, and renders pictures of the first episodes (PNG frames and an
animated GIF) when ``--pictures N`` is given (runs and baselines). What would fail only at the
end (an ``--out`` that cannot be written, a device this machine lacks) is refused first.

Planners and baselines are evaluated in float64 (the original's precision and the files' own)
with the evaluation seed 253, unless ``--dtype`` / ``--seed`` say otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

from tensordict.nn import TensorDictModuleBase

from marinenav.agents import Agent
from marinenav.baselines import BASELINES, BaselinePolicy, baseline_policy
from marinenav.cli import run_command
from marinenav.encounters import encounter_records, format_encounters, own_and_targets
from marinenav.files import FileWriteError, check_writable, write_text
from marinenav.keys import check_seed, device_named
from marinenav.planner import PlannerLoadError, PlannerPolicy, planner_policy
from marinenav.policy.selectors import QuantileSelector
from marinenav.scenarios import LAYOUTS, RandomLayout, ScenarioLayout, make_layout
from marinenav.sim import load_scenario_file
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE
from marinenav.stats import format_rate
from marinenav.training.checkpoint import load_agent
from marinenav.training.config import layout_of
from marinenav.training.evaluation import (
    EVALUATION_SETS,
    SET_NAMES,
    Evaluator,
    evaluation_setup,
    named_scenarios,
)

PLANNER_GAMMA = 0.99  # the original's discount, for the reported return of a planner
PLANNER_EVAL_SEED = 253  # the original's evaluation seed


def evaluate_policy(
    policy: TensorDictModuleBase,
    action_kind: str,
    gamma: float,
    config: dict[str, Any],
    scenarios: list[dict],
    device: str = "cpu",
    max_steps: int = 1001,
    episodes_per_stage: int | None = None,
    compact: bool = True,
    layout: ScenarioLayout | None = None,
) -> dict[str, Any]:
    """Metrics of ``policy`` on ``scenarios``, in the layout of a run with ``config`` (slots,
    precision, noise seed: :func:`evaluation_setup`), under ``layout``'s rules (default the
    paper's). Episodes of one own ship among traffic (the Imazu cases) also get their
    encounters' COLREGs checks (:mod:`marinenav.encounters`): ``metrics["encounters"]`` per
    episode and ``metrics["colregs"]``, how many such episodes kept the COLREGs."""
    if not scenarios:
        raise ValueError("no scenarios to evaluate")
    setup = evaluation_setup(config, scenarios)
    evaluator = Evaluator(
        scenarios, action_kind, gamma, max_steps, device=device,
        episodes_per_stage=episodes_per_stage, layout=layout, **setup,
    )  # fmt: skip
    encounters = any(own_and_targets(s) is not None for s in scenarios)
    metrics = evaluator.run(policy, compact=compact, tracks=encounters)
    if encounters:
        successes = metrics["episodes"]["success"]
        records = encounter_records(scenarios, metrics.pop("tracks"), successes)
        metrics["encounters"] = records
        kept = [r["colregs_kept"] for r in records if r is not None]
        metrics["colregs"] = {"episodes": len(kept), "kept": sum(kept)}
    return metrics


def evaluate_agent(
    agent: Agent,
    config: dict[str, Any],
    scenarios: list[dict],
    device: str = "cpu",
    max_steps: int = 1001,
    episodes_per_stage: int | None = None,
    layout: ScenarioLayout | None = None,
) -> dict[str, Any]:
    """Metrics of ``agent`` (trained in a run with ``config``) on ``scenarios``, under
    ``layout``'s rules."""
    return evaluate_policy(
        agent.policy, agent.action_kind, agent.config.gamma, config, scenarios, device,
        max_steps, episodes_per_stage, layout=layout,
    )  # fmt: skip


def act_at_cvar(agent: Agent, level: float) -> None:
    """Make an agent that acts on quantiles (IQN) act on ``CVaR_level`` (its policy's fractions
    ``tau ~ U(0, level)``) instead of its own ``agent.cvar_alpha``; ``ValueError`` for an agent
    whose policy has no quantile selector or a level outside (0, 1]."""
    if not isinstance(agent.policy.selector, QuantileSelector):
        raise ValueError(f"--cvar is for IQN (quantile acting); this run's agent is {agent.name}")
    agent.policy.set_cvar(level)


def planner_config(dtype: str = "float64", seed: int = PLANNER_EVAL_SEED) -> dict[str, Any]:
    """The evaluation layout of a planner: the paper's slots (5 robots, 4 obstacles, no cores),
    ``dtype`` and the evaluation noise seed."""
    return {
        "env": {"robot_slots": 5, "obstacle_slots": 4, "core_slots": 0, "dtype": dtype},
        "evaluation": {"seed": seed},
    }


def evaluate_planner(
    policy: PlannerPolicy,
    scenarios: list[dict],
    episodes_per_stage: int | None = None,
    dtype: str = "float64",
    seed: int = PLANNER_EVAL_SEED,
    max_steps: int = 1001,
    compact: bool = True,
    layout: ScenarioLayout | None = None,
) -> dict[str, Any]:
    """Metrics of a planner file's policy (:mod:`marinenav.planner`) on ``scenarios`` (under
    ``layout``'s rules); its random stream (IQN's taus, SAC's noise) restarts from ``seed``."""
    policy.set_seed(seed)
    return evaluate_policy(
        policy, policy.action_kind, PLANNER_GAMMA, planner_config(dtype, seed), scenarios,
        "cpu", max_steps, episodes_per_stage, compact, layout,
    )  # fmt: skip


def evaluate_baseline(
    policy: BaselinePolicy,
    scenarios: list[dict],
    episodes_per_stage: int | None = None,
    dtype: str = "float64",
    seed: int = PLANNER_EVAL_SEED,
    max_steps: int = 1001,
    layout: ScenarioLayout | None = None,
) -> dict[str, Any]:
    """Metrics of a classical baseline (:mod:`marinenav.baselines`) on ``scenarios`` (under
    ``layout``'s rules), in a planner's evaluation layout (:func:`planner_config`); the
    baseline is deterministic."""
    return evaluate_policy(
        policy, policy.action_kind, PLANNER_GAMMA, planner_config(dtype, seed), scenarios,
        "cpu", max_steps, episodes_per_stage, layout=layout,
    )  # fmt: skip


def run_scenarios(run_dir: str | Path, scenario_files: list[str | Path] | None) -> list[dict]:
    """The scenarios of the given files (original layout), or the run's own evaluation set
    (``eval_configs.json``, read and checked as any scenario file: a torn or edited one is one
    line naming it)."""
    if scenario_files:
        return [s for path in scenario_files for s in load_scenario_file(path)]
    return load_scenario_file(Path(run_dir) / "eval_configs.json")


def evaluate_run(
    run_dir: str | Path,
    scenario_files: list[str | Path] | None = None,
    device: str = "cpu",
    max_steps: int = 1001,
) -> tuple[dict[str, Any], list[dict]]:
    """Metrics of the run's agent on a scenario set, and the scenarios used."""
    agent, config = load_agent(run_dir, device)
    scenarios = run_scenarios(run_dir, scenario_files)
    per_stage = None if scenario_files else stage_size(config, scenarios)
    layout = None if scenario_files else layout_of(config)
    metrics = evaluate_agent(agent, config, scenarios, device, max_steps, per_stage, layout)
    return metrics, scenarios


def format_table(metrics: dict[str, Any]) -> str:
    """The aggregate metrics as a small Markdown table; success rates carry their episode count
    and Wilson 95% interval."""
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
    parser.add_argument("--cvar", type=float, default=None,
                        help="IQN planners and runs: act on the mean of the worst CVAR of returns "
                             "(taus scaled to [0, CVAR]; default: a planner 1, the node's mean; "
                             "a run its agent.cvar_alpha)")
    parser.add_argument("--set", choices=SET_NAMES, default=None,
                        help="a named evaluation set of the run's own layout (default: the run's "
                             "own set; planners: paper); currents4 / currents8: the paper's "
                             "stages with 4 / 8 vortex cores")
    parser.add_argument("--scenarios", nargs="*", help="scenario JSON files (original layout)")
    parser.add_argument("--scenario", choices=tuple(sorted(LAYOUTS)), default=None,
                        help="a scenario layout's evaluation set, default options (with --set: "
                             "its episodes per stage and seed; default paper; imazu: its 22 "
                             "cases with their COLREGs checks)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float64",
                        help="planners and baselines: simulation precision")
    parser.add_argument("--seed", type=_seed, default=PLANNER_EVAL_SEED,
                        help="planners: noise seed of the evaluation")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-steps", type=_at_least(1), default=1001,
                        help="step cap of an episode (default 1001, the original's)")
    parser.add_argument("--out", help="write the metrics as JSON here")
    parser.add_argument("--pictures", type=_at_least(0), default=0,
                        help="render the first N episodes")
    parser.add_argument("--pictures-dir", default=None,
                        help="default: RUN_DIR/pictures, or pictures_BASELINE_VARIANT")
    args = parser.parse_args(argv)  # fmt: skip
    if sum(x is not None for x in (args.run_dir, args.planner, args.baseline)) != 1:
        parser.error("give a run directory, --planner FILE or --baseline NAME (one of them)")
    if args.set and args.scenarios:
        parser.error("give --set or --scenarios, not both")
    if args.scenario and args.scenarios:
        parser.error("give --scenario or --scenarios, not both")
    _check_before_work(parser, args)
    policy = None
    try:
        if args.planner:
            metrics = _evaluate_planner_file(args)
            chosen = _scenarios(args, None)
        elif args.baseline:
            policy, metrics = _evaluate_baseline(args)
            chosen = _scenarios(args, None)
            scenarios = chosen.scenarios
        else:
            agent, config = load_agent(args.run_dir, args.device)
            if args.cvar is not None:
                act_at_cvar(agent, args.cvar)
            chosen = _scenarios(args, config)
            scenarios = chosen.scenarios
            metrics = evaluate_agent(
                agent, config, scenarios, args.device, args.max_steps, chosen.per_stage,
                chosen.layout,
            )
            if args.cvar is not None:
                metrics["cvar"] = args.cvar
    except (FileNotFoundError, ValueError, PlannerLoadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"marinenav: evaluated on {chosen.label}", file=sys.stderr)
    print(format_table(metrics))
    if "encounters" in metrics:
        labels = chosen.layout.episode_labels(chosen.scenarios) if chosen.layout else [
            f"episode {k}" for k in range(len(chosen.scenarios))
        ]
        print()
        print(format_encounters(metrics["encounters"], metrics["episodes"]["success"], labels))
    if args.out:
        try:
            write_text(args.out, json.dumps(metrics, indent=1))
        except FileWriteError as error:  # checked writable at the start; the disk filled since
            print(f"error: {error} (the metrics above were not saved)", file=sys.stderr)
            return 1
    if args.pictures and (args.run_dir or policy is not None):
        from marinenav.viz import record_episode, save_animation, save_frames

        if policy is not None:
            agent, config = policy, planner_config(args.dtype, args.seed)
        target = _pictures_dir(args)
        for k, scenario in enumerate(scenarios[: args.pictures]):
            recording = record_episode(
                agent, scenario, args.max_steps, args.device,
                **evaluation_setup(config, scenarios),
            )  # fmt: skip
            frames = save_frames(recording, target / f"episode_{k:03d}")
            gif = save_animation(recording, target / f"episode_{k:03d}.gif")
            print(f"episode {k}: {len(frames)} frames in {frames[0].parent}, animation {gif}")
    return 0


def stage_size(config: dict[str, Any], scenarios: list) -> int:
    """Episodes per stage of a run's own evaluation set (its layout's stages, equal sizes)."""
    return len(scenarios) // layout_of(config).num_stages


class ChosenSet(NamedTuple):
    """The scenarios an evaluation runs, their episodes per stage (None: no stages), the
    layout whose rules apply (None: the paper's) and what they are, in words (the line the
    command prints before it evaluates)."""

    scenarios: list[dict]
    per_stage: int | None
    layout: ScenarioLayout | None
    label: str


def _named(name: str, layout: ScenarioLayout, whose: str) -> ChosenSet:
    """The named set ``name`` of ``layout`` (``whose``: how the label calls the layout)."""
    scenarios = named_scenarios(name, layout=layout)
    per_stage = len(scenarios) // layout.num_stages
    fixed = EVALUATION_SETS.get(name, (None,))[0] not in (None, per_stage)
    label = (f"{layout.name}'s fixed evaluation set ({len(scenarios)} episodes; the named set "
             f"{name!r} does not apply to it)" if fixed
             else f"the {name} set of {whose} ({len(scenarios)} episodes)")  # fmt: skip
    return ChosenSet(scenarios, per_stage, layout, label)


def _scenarios(args: argparse.Namespace, config: dict[str, Any] | None) -> ChosenSet:
    """The scenario set the arguments name: for a run, its own evaluation set by default and,
    with ``--set``, that named set of the run's own layout (its options; for the random
    layout, of the paper's curriculum, the sets every agent is compared on)."""
    if args.scenarios:
        scenarios = [s for path in args.scenarios for s in load_scenario_file(path)]
        return ChosenSet(scenarios, None, None, f"{len(scenarios)} episodes of scenario files")
    if args.scenario:
        layout = make_layout(args.scenario)
        return _named(args.set or "paper", layout, f"the {layout.name} layout (default options)")
    own = layout_of(config) if config is not None else None
    if own is not None and not isinstance(own, RandomLayout):
        if args.set:
            return _named(args.set, own, f"the run's layout, {own.name}")
    elif args.set or config is None:
        scenarios = named_scenarios(args.set or "paper")
        per_stage = len(scenarios) // DEFAULT_TRAINING_SCHEDULE.num_stages
        label = f"the {args.set or 'paper'} set of the random layout ({len(scenarios)} episodes)"
        return ChosenSet(scenarios, per_stage, None, label)
    scenarios = load_scenario_file(Path(args.run_dir) / "eval_configs.json")
    label = f"the run's own evaluation set ({own.name}, {len(scenarios)} episodes)"
    return ChosenSet(scenarios, stage_size(config, scenarios), own, label)


def _at_least(low: int):
    """An argparse type: an integer of at least ``low``, refused in one line otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


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


def _evaluate_planner_file(args: argparse.Namespace) -> dict[str, Any]:
    policy = planner_policy(
        args.planner, args.agent_type, sac_action=args.sac_action, taus=args.iqn_taus,
        cvar=1.0 if args.cvar is None else args.cvar,
    )
    chosen = _scenarios(args, None)
    metrics = evaluate_planner(
        policy, chosen.scenarios, chosen.per_stage, args.dtype, args.seed, args.max_steps,
        layout=chosen.layout,
    )
    metrics["planner"] = {"file": str(args.planner), "agent": policy.agent_type,
                          "sac_action": args.sac_action, "iqn_taus": args.iqn_taus,
                          "cvar": args.cvar}  # fmt: skip
    return metrics


def _evaluate_baseline(args: argparse.Namespace) -> tuple[BaselinePolicy, dict[str, Any]]:
    options = {} if args.planning_period is None else {"planning_period": args.planning_period}
    policy = baseline_policy(args.baseline, args.variant, **options)
    chosen = _scenarios(args, None)
    metrics = evaluate_baseline(
        policy, chosen.scenarios, chosen.per_stage, args.dtype, args.seed, args.max_steps,
        chosen.layout,
    )
    metrics["baseline"] = {"name": args.baseline, "variant": args.variant,
                           "planning_period": policy.planning_period}  # fmt: skip
    return policy, metrics


if __name__ == "__main__":
    run_command(main, "python -m marinenav.evaluate")
