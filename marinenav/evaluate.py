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

import torch

from marinenav.sim import load_scenario_file
from marinenav.training.checkpoint import checkpoint_path, load_agent
from marinenav.training.evaluation import Evaluator


def evaluate_run(
    run_dir: str | Path,
    scenario_files: list[str | Path] | None = None,
    device: str = "cpu",
    max_steps: int = 1001,
) -> tuple[dict[str, Any], list[dict]]:
    """Metrics of the run's agent on a scenario set, and the scenarios used."""
    agent, config = load_agent(run_dir, device)
    if scenario_files:
        scenarios = [s for path in scenario_files for s in load_scenario_file(path)]
    else:
        scenarios = json.loads((Path(run_dir) / "eval_configs.json").read_text())
    if not scenarios:
        raise ValueError("no scenarios to evaluate")
    # the run's slots (the noise streams depend on the tensor shapes), more if a file needs it
    env_cfg = config["env"]
    robots = max(env_cfg["robot_slots"], *(int(s["env"]["num_robots"]) for s in scenarios))
    obstacles = max(
        env_cfg["obstacle_slots"], *(len(s["env"]["obstacles"]["positions"]) for s in scenarios)
    )
    cores = max(env_cfg["core_slots"], *(len(s["env"]["cores"]["positions"]) for s in scenarios))
    dtype = torch.float64 if config["env"]["dtype"] == "float64" else torch.float32
    evaluator = Evaluator(
        scenarios, agent.action_kind, agent.config.gamma, max_steps, robots, obstacles, cores,
        device, dtype, seed=config["evaluation"]["seed"],
    )  # fmt: skip
    if not scenario_files:
        evaluator.episodes_per_stage = config["curriculum"]["eval_episodes_per_stage"]
    metrics = evaluator.run(agent.policy)
    metrics["setup"] = {"robot_slots": robots, "obstacle_slots": obstacles, "core_slots": cores,
                        "seed": config["evaluation"]["seed"]}  # fmt: skip
    return metrics, scenarios


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
        checkpoint_path(args.run_dir)
        metrics, scenarios = evaluate_run(args.run_dir, args.scenarios, args.device, args.max_steps)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table(metrics))
    if args.out:
        Path(args.out).write_text(json.dumps(metrics, indent=1))
    if args.pictures:
        from marinenav.viz import record_episode, save_animation, save_frames

        agent, _ = load_agent(args.run_dir, args.device)
        target = Path(args.pictures_dir or Path(args.run_dir) / "pictures")
        for k, scenario in enumerate(scenarios[: args.pictures]):
            recording = record_episode(
                agent, scenario, max_steps=args.max_steps, **metrics["setup"]
            )
            frames = save_frames(recording, target / f"episode_{k:03d}")
            gif = save_animation(recording, target / f"episode_{k:03d}.gif")
            print(f"episode {k}: {len(frames)} frames in {frames[0].parent}, animation {gif}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
