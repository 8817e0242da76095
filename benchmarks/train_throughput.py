"""End-to-end training throughput in three tiers, for one agent and several E:

* ``env``: ``MarineNavEnv.step_and_reset`` with random actions;
* ``env+policy``: the agent's ``PolicyWrapper`` acts (exploration on), the environment steps,
  the transitions go into the device replay (``Trainer.step_environments``);
* ``train``: the above plus gradient updates at the configured ratio (``updates_per_timestep``,
  default 0.25: the original's one update per 4 environment steps).

Reported: timesteps/s (environment steps summed over environments), robot transitions/s
(transitions of robots that acted, what the replay receives) and gradient updates/s.

Usage: ``python benchmarks/train_throughput.py --agent sac --envs 16 256 [--device cuda]``;
any Hydra override after ``--set`` (e.g. ``--set cudagraphs=true training.batch_size=256``).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from hydra import compose, initialize_config_dir

from marinenav.training.config import register_configs
from marinenav.training.trainer import Trainer

ROOT = __file__.rsplit("/benchmarks/", 1)[0]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(
    agent: str, num_envs: int, device: str, seconds: float, ratio: float, extra: list[str]
) -> list[tuple]:
    register_configs()
    with initialize_config_dir(config_dir=f"{ROOT}/conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            f"agent={agent}", f"env.num_envs={num_envs}", f"device={device}",
            "logger.progress_bar=false", "training.replay_capacity=200000",
            "training.learning_starts=0",
            f"training.total_timesteps={1000 * num_envs}",  # whole batched steps, any E
            f"training.updates_per_timestep={ratio}", *extra,
        ])  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(cfg, run_dir)
        env, dev = trainer.env, trainer.device
        for _ in range(20):  # warm-up and a replay to sample from
            trainer.step_environments()

        def tier_env() -> None:
            td = env.observe()
            if trainer.agent.action_kind == "discrete":
                action = torch.randint(0, 25, (num_envs, env.num_robots), device=dev)
            else:
                action = torch.rand(num_envs, env.num_robots, 2, device=dev) * 2 - 1
            env.step_and_reset(td.set(("agents", "action"), action))

        def tier_policy() -> None:
            trainer.step_environments()

        def tier_train() -> None:
            trainer.step_environments()
            trainer.timesteps += num_envs
            trainer.learn()  # updates_per_timestep = ratio

        for name, step in (("env", tier_env), ("env+policy", tier_policy), ("train", tier_train)):
            step()
            _sync(dev)
            counted = trainer.metrics["transitions"].clone()
            updates, steps, start = trainer.updates, 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                step()
                steps += 1
                if steps % 10 == 0:
                    _sync(dev)
            _sync(dev)
            elapsed = time.perf_counter() - start
            transitions = trainer.metrics["transitions"] - counted
            transitions = float(transitions) if name != "env" else float("nan")
            rows.append((name, steps * num_envs / elapsed, transitions / elapsed,
                         (trainer.updates - updates) / elapsed))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="ac_iqn")
    parser.add_argument("--envs", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--ratio", type=float, default=0.25, help="updates per timestep")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="more Hydra overrides of the run's config")  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} CPU "
          f"threads, agent {args.agent}, {args.ratio} updates per timestep"
          + (f", {' '.join(args.set)}" if args.set else ""))  # fmt: skip
    print("| E | tier | timesteps/s | robot transitions/s | updates/s |")
    print("|---:|---|---:|---:|---:|")
    for num_envs in args.envs:
        for name, steps, transitions, updates in measure(
            args.agent, num_envs, args.device, args.seconds, args.ratio, args.set
        ):
            print(f"| {num_envs} | {name} | {steps:,.0f} | {transitions:,.0f} | {updates:,.0f} |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
