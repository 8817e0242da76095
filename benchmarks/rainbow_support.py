"""How much of the return range a C51 support covers (issue: Rainbow's value support).

Runs the paper's 60-episode evaluation set (noise on, episodes end at the first collision as
in training's deactivation) with two behaviours that bracket what Rainbow's replay holds: the
original authors' trained DQN planner (a good discrete policy) with epsilon = 0.05, and uniform
random actions (early exploration, epsilon = 0.6 and above). For every robot step it computes
the discounted return-to-go ``G_t = sum_k gamma^k r_{t+k}`` (gamma 0.99 unless ``--gamma``,
truncated at the step limit) and prints its quantiles and the fraction of ``G_t`` outside each
candidate support.
A return outside ``[v_min, v_max]`` is clamped to the end atom by the C51 projection.

Usage: ``python benchmarks/rainbow_support.py [--seed S] [--max-steps N] [--gamma G]`` (about a
minute of one CPU core; ``--help`` says so and runs nothing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.envs import MarineNavEnv  # noqa: E402
from marinenav.planner import planner_policy  # noqa: E402
from marinenav.training.evaluation import named_scenarios  # noqa: E402

SUPPORTS = (
    (-1.0, 1.0), (-10.0, 10.0), (-50.0, 50.0), (-75.0, 50.0), (-100.0, 60.0), (-100.0, 100.0)
)  # fmt: skip


def returns_to_go(
    epsilon: float, seed: int = 0, max_steps: int = 1001, gamma: float = 0.99
) -> torch.Tensor:
    """``G_t`` of every step of every robot that acted, for the DQN planner with ``epsilon``
    (``epsilon = 1``: uniform random actions)."""
    scenarios = named_scenarios("paper")
    env = MarineNavEnv.from_scenarios(
        scenarios, action_kind="discrete", end_on_collision=True, robot_slots=5,
        obstacle_slots=4, core_slots=0, dtype=torch.float64, validate=False,
        max_episode_steps=max_steps - 1,
    )  # fmt: skip
    env.set_seed(seed)
    policy = planner_policy(ROOT / "tests/data/pretrained/traced_DQN_model.pt", seed=seed)
    generator = torch.Generator().manual_seed(seed)
    td = env.reset()
    rewards, acted = [], []
    finished = torch.zeros(env.num_envs, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_steps):
            td = policy(td)
            action = td["agents", "action"]
            explore = torch.rand(action.shape, generator=generator) < epsilon
            random = torch.randint(0, 25, action.shape, generator=generator)
            td.set(("agents", "action"), torch.where(explore, random, action))
            out = env.step(td)["next"]
            acting = td["agents", "active"] & ~finished.unsqueeze(-1)
            rewards.append(torch.where(acting, out["agents", "reward"].squeeze(-1), 0.0))
            acted.append(acting)
            finished |= out["done"].squeeze(-1)
            td = out
            if bool(finished.all()):
                break
    reward = torch.stack(rewards)  # [T, E, R]
    g = torch.zeros_like(reward[0])
    out = torch.zeros_like(reward)
    for t in range(reward.shape[0] - 1, -1, -1):
        g = reward[t] + gamma * g
        out[t] = g
    return out[torch.stack(acted)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Quantiles of the discounted return-to-go on the paper's evaluation set, "
        "for the original's DQN planner (epsilon 0.05) and uniform random actions, and the "
        "fraction outside each candidate C51 support (Rainbow's v_min, v_max)."
    )
    parser.add_argument("--seed", type=int, default=0, help="noise and exploration seed (0)")
    parser.add_argument("--max-steps", type=int, default=1001, help="episode step cap (1001)")
    parser.add_argument("--gamma", type=float, default=0.99, help="discount (0.99, the paper's)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| behaviour | robot steps | G_t 0.1% | 1% | 50% | 99% | 99.9% | min | max | "
          + " | ".join(f"outside [{lo:g}, {hi:g}]" for lo, hi in SUPPORTS) + " |")  # fmt: skip
    print("| --- | ---: " + "| ---: " * (8 + len(SUPPORTS)) + "|")
    for name, epsilon in (("DQN planner, epsilon 0.05", 0.05), ("uniform random", 1.0)):
        g = returns_to_go(epsilon, seed=args.seed, max_steps=args.max_steps, gamma=args.gamma)
        q = torch.quantile(g, torch.tensor([0.001, 0.01, 0.5, 0.99, 0.999], dtype=g.dtype))
        outside = [((g < lo) | (g > hi)).double().mean().item() for lo, hi in SUPPORTS]
        print(f"| {name} | {g.numel()} | " + " | ".join(f"{v:.1f}" for v in q.tolist())
              + f" | {g.min().item():.1f} | {g.max().item():.1f} | "
              + " | ".join(f"{100 * f:.2f}%" for f in outside) + " |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
