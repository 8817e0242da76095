"""Learning check of MAPPO / IPPO on curriculum stage 0 (3 robots, no obstacles, start-goal
distance >= 30 m) with the ``RolloutLearner`` and the real batched environment, for a wall-clock
or timestep budget, evaluated with ``marinenav.training.evaluation.Evaluator`` on the fixed set
of the learning check in ``docs/learning.md`` (20 stage-0 episodes, seed 253, the default 5 robot
and 4 obstacle slots), so the numbers sit beside AC-IQN's there.

The loop is the on-policy loop the trainer runs for ``learning = "rollout"`` agents: act with
``agent.policy`` (exploration on), ``MarineNavEnv.step_and_reset``, ``learner.observe``,
``learner.learn``; training episodes are counted on the device and read back at evaluations only.
Training environments have 3 robot slots and no obstacle slots (stage 0 needs no more).

Prints one row per evaluation (timestep, wall clock, evaluation success with its Wilson 95%
interval, mean discounted return, training episodes and success since the last row,
timesteps/s of training excluding evaluations, the policy's sigma (mean over the two action
dimensions), mean losses) and writes them as JSON lines.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/ppo_stage0.py --agent mappo --envs 256
--minutes 12 [--timesteps N] [--eval-every 100000] [--out runs/ppo_stage0/mappo.jsonl]
[agent.key=value ...]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
import yaml
from omegaconf import OmegaConf
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents.ppo import IPPOAgent, MAPPOAgent, PPOConfig
from marinenav.envs import MarineNavEnv, transition
from marinenav.files import write_text
from marinenav.sim import InfoState
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.training.evaluation import EvaluationSet, Evaluator, evaluation_scenarios
from marinenav.training.rollout import RolloutLearner

AGENTS = {"mappo": MAPPOAgent, "ippo": IPPOAgent}
STAGE0 = CurriculumSchedule(
    timesteps=[0], num_robots=[3], num_cores=[0], num_obstacles=[0], min_start_goal_dis=[30.0]
)
EVAL_EPISODES, EVAL_SEED, EVAL_SLOTS = 20, 253, (5, 4, 0)  # docs/learning.md's fixed set


def agent_config(overrides: list[str], seed: int) -> PPOConfig:
    """``PPOConfig`` with ``agent.key=value`` overrides (values parsed as YAML scalars)."""
    values = {}
    for item in overrides:
        key, _, value = item.partition("=")
        if not key.startswith("agent.") or not value:
            raise SystemExit(f"overrides look like agent.key=value, got {item!r}")
        values[key[len("agent.") :]] = yaml.safe_load(value)
    return dataclasses.replace(PPOConfig(seed=seed + 100), **values)


class EpisodeCounter:
    """Training episodes and successes (every robot reached its goal, no collision), counted
    on the device (the trainer's rule)."""

    def __init__(self, num_envs: int, robot_slots: int, device: torch.device) -> None:
        self.reached = torch.zeros(num_envs, robot_slots, dtype=torch.bool, device=device)
        self.collided = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.counts = torch.zeros(2, dtype=torch.int64, device=device)  # episodes, successes

    def track(self, step_output) -> None:
        info = step_output["agents", "info"]
        done = step_output["done"].squeeze(-1)
        self.reached |= info == InfoState.REACH_GOAL
        self.collided |= (info == InfoState.COLLISION).any(-1)
        empty = info == InfoState.EMPTY_SLOT
        success = done & ~self.collided & (self.reached | empty).all(-1)
        self.counts += torch.stack((done.sum(), success.sum()))
        self.reached.masked_fill_(done.unsqueeze(-1), False)
        self.collided.masked_fill_(done, False)

    def read(self) -> tuple[int, int]:
        episodes, successes = self.counts.tolist()  # host: once per evaluation
        self.counts.zero_()
        return episodes, successes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=sorted(AGENTS), default="mappo")
    parser.add_argument("--envs", type=int, default=256, help="E, training environments")
    parser.add_argument("--minutes", type=float, default=12.0, help="wall-clock budget")
    parser.add_argument("--timesteps", type=int, default=10**9, help="timestep budget")
    parser.add_argument("--eval-every", type=int, default=100_000, help="timesteps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON lines of the rows")
    args, overrides = parser.parse_known_args()
    torch.set_num_threads(1)
    device = torch.device("cpu")
    torch.manual_seed(args.seed)

    config = agent_config(overrides, args.seed)
    agent = AGENTS[args.agent](config)
    agent.policy.set_seed(args.seed)
    robot_slots = 3
    env = MarineNavEnv(
        args.envs, "continuous", schedule=STAGE0, robot_slots=robot_slots, obstacle_slots=0,
        core_slots=0, seed=args.seed, validate=False,
    )  # fmt: skip
    run_cfg = OmegaConf.create(
        {"env": {"num_envs": args.envs, "robot_slots": robot_slots, "dtype": "float32"},
         "seed": args.seed}
    )  # fmt: skip
    learner = RolloutLearner(agent, run_cfg, device)
    scenarios = evaluation_scenarios(STAGE0, EVAL_EPISODES, EVAL_SEED, EVAL_SLOTS)
    evaluation_set = EvaluationSet(scenarios, slots=EVAL_SLOTS, dtype=torch.float32,
                                   noise_seed=EVAL_SEED)  # fmt: skip
    evaluator = Evaluator(evaluation_set, "continuous", config.gamma, device)
    counter = EpisodeCounter(args.envs, robot_slots, device)

    print(f"{args.agent}, E = {args.envs}, T = {config.rollout_steps}, {config.epochs} epochs x "
          f"{config.minibatches} minibatches, lr {config.lr}, budget {args.minutes} min / "
          f"{args.timesteps:,} timesteps", flush=True)  # fmt: skip
    print(
        "| timestep | wall clock (s) | eval success (n=20, 95% CI) | eval return | "
        "train episodes | train success | timesteps/s | sigma | loss_objective | loss_critic |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    started = time.perf_counter()
    deadline = started + 60.0 * args.minutes
    training_seconds, timesteps, next_eval = 0.0, 0, args.eval_every
    loss_sum, updates = None, 0
    td = env.reset()
    rows = []
    while True:
        tick = time.perf_counter()
        with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
            step_input = agent.policy(td)
            step_output, td = env.step_and_reset(step_input)
        learner.observe(transition(step_input, step_output))
        counter.track(step_output)
        timesteps += args.envs
        losses, count = learner.learn(timesteps)
        if losses is not None:
            loss_sum = losses if loss_sum is None else loss_sum + losses
            updates += count
        now = time.perf_counter()
        training_seconds += now - tick
        finished = now >= deadline or timesteps >= args.timesteps
        if timesteps < next_eval and not finished:
            continue
        next_eval += args.eval_every
        agent.policy.eval()
        metrics = evaluator.run(agent.policy)
        agent.policy.train()
        episodes, successes = counter.read()
        mean_losses = (
            {k: float(v) / max(updates, 1) for k, v in loss_sum.items()}
            if loss_sum is not None
            else {}
        )  # host: once per evaluation
        loss_sum, updates = None, 0
        sigma = agent.actor.log_std.exp().tolist()  # host: the policy's noise, per evaluation
        success = metrics["eval/success_rate"]
        low, high = metrics["ci95"]["success_rate"]
        row = {
            "agent": args.agent, "timestep": timesteps,
            "wall_clock_s": round(time.perf_counter() - started, 1),
            "eval_success": success, "eval_ci95": [low, high],
            "eval_return": metrics["eval/return"],
            "train_episodes": episodes,
            "train_success": successes / episodes if episodes else None,
            "timesteps_per_s": timesteps / training_seconds, "sigma": sigma, **mean_losses,
        }  # fmt: skip
        rows.append(row)
        train_success = f"{row['train_success']:.2f}" if episodes else "-"
        print(f"| {timesteps:,} | {row['wall_clock_s']:.0f} | {success:.2f} ({low:.2f}-{high:.2f}) "
              f"| {row['eval_return']:.1f} | {episodes} | {train_success} "
              f"| {row['timesteps_per_s']:.0f} | {sum(sigma) / 2:.2f} "
              f"| {mean_losses.get('loss_objective', 0):.3g} "
              f"| {mean_losses.get('loss_critic', 0):.3g} |", flush=True)  # fmt: skip
        if args.out is not None:
            write_text(args.out, "".join(json.dumps(r) + "\n" for r in rows))
        if finished:
            break


if __name__ == "__main__":
    main()
