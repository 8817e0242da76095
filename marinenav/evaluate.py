"""Evaluate a trained run: ``python -m marinenav.evaluate RUN_DIR [--scenarios FILE ...]``.

Loads the run's agent from its checkpoint, runs an evaluation set (the run's own
``eval_configs.json`` by default, or scenario JSON files in the original's layout: one episode
dict or a list of them per file) all at once as one batched environment with deterministic
actions, prints the original's metrics, writes them to ``--out`` as JSON, and renders pictures
of the first episodes (PNG frames and an animated GIF) when ``--pictures N`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from marinenav.agents import Agent
from marinenav.sim import load_scenario_file
from marinenav.training.checkpoint import load_agent
from marinenav.training.evaluation import Evaluator, evaluation_setup


def evaluate_agent(
    agent: Agent,
    config: dict[str, Any],
    scenarios: list[dict],
    device: str = "cpu",
    max_steps: int = 1001,
    episodes_per_stage: int | None = None,
) -> dict[str, Any]:
    """Metrics of ``agent`` (trained in a run with ``config``) on ``scenarios``."""
    if not scenarios:
        raise ValueError("no scenarios to evaluate")
    setup = evaluation_setup(config, scenarios)
    evaluator = Evaluator(
        scenarios, agent.action_kind, agent.config.gamma, max_steps, device=device, **setup
    )
    evaluator.episodes_per_stage = episodes_per_stage
    return evaluator.run(agent.policy)


def run_scenarios(run_dir: str | Path, scenario_files: list[str | Path] | None) -> list[dict]:
    """The scenarios of the given files (original layout), or the run's own evaluation set."""
    if scenario_files:
        return [s for path in scenario_files for s in load_scenario_file(path)]
    return json.loads((Path(run_dir) / "eval_configs.json").read_text())


def evaluate_run(
    run_dir: str | Path,
    scenario_files: list[str | Path] | None = None,
    device: str = "cpu",
    max_steps: int = 1001,
) -> tuple[dict[str, Any], list[dict]]:
    """Metrics of the run's agent on a scenario set, and the scenarios used."""
    agent, config = load_agent(run_dir, device)
    scenarios = run_scenarios(run_dir, scenario_files)
    per_stage = None if scenario_files else config["curriculum"]["eval_episodes_per_stage"]
    return evaluate_agent(agent, config, scenarios, device, max_steps, per_stage), scenarios


def format_table(metrics: dict[str, Any]) -> str:
    """The aggregate metrics as a small Markdown table."""
    rows = ["| metric | value |", "| --- | ---: |"]
    for name, value in metrics.items():
        if name.startswith("eval/"):
            shown = "n/a (no successful episode)" if value is None else f"{value:.3f}"
            rows.append(f"| {name[5:]} | {shown} |")
    rows.append(f"| episodes | {len(metrics['episodes']['success'])} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m marinenav.evaluate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("run_dir", help="a training run directory (holds checkpoint.pt)")
    parser.add_argument("--scenarios", nargs="*", help="scenario JSON files (original layout)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-steps", type=int, default=1001)
    parser.add_argument("--out", help="write the metrics as JSON here")
    parser.add_argument("--pictures", type=int, default=0, help="render the first N episodes")
    parser.add_argument("--pictures-dir", default=None, help="default: RUN_DIR/pictures")
    args = parser.parse_args(argv)
    try:
        agent, config = load_agent(args.run_dir, args.device)
        scenarios = run_scenarios(args.run_dir, args.scenarios)
        per_stage = None if args.scenarios else config["curriculum"]["eval_episodes_per_stage"]
        metrics = evaluate_agent(agent, config, scenarios, args.device, args.max_steps, per_stage)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table(metrics))
    if args.out:
        Path(args.out).write_text(json.dumps(metrics, indent=1))
    if args.pictures:
        from marinenav.viz import record_episode, save_animation, save_frames

        target = Path(args.pictures_dir or Path(args.run_dir) / "pictures")
        for k, scenario in enumerate(scenarios[: args.pictures]):
            recording = record_episode(
                agent, scenario, args.max_steps, args.device,
                **evaluation_setup(config, scenarios),
            )  # fmt: skip
            frames = save_frames(recording, target / f"episode_{k:03d}")
            gif = save_animation(recording, target / f"episode_{k:03d}.gif")
            print(f"episode {k}: {len(frames)} frames in {frames[0].parent}, animation {gif}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
