"""Cost of the TorchRL wrapper: environment steps per second through ``MarineNavEnv`` against
the bare simulator, same E, same work (step, then reset the finished environments).

Rows:

* ``simulator``: ``sim.step(actions)`` then ``sim.reset(result.env_done)``;
* ``MarineNavEnv._step/_reset``: the wrapper's own hooks (TensorDicts in and out, no host sync);
* ``MarineNavEnv.step_and_maybe_reset``: TorchRL's public loop (spec checks, ``step_mdp`` and a
  host read of ``done`` per step, as TorchRL's collectors do).

5 robots, 4 obstacles, no cores, random discrete actions, median of 3 runs.

Usage: ``python benchmarks/env_throughput.py [--device cuda] [--envs 64 1024]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from tensordict import TensorDict

from marinenav.envs import MarineNavEnv


def _rate(one_step: Callable[[], None], num_envs: int, seconds: float, device) -> float:
    for _ in range(3):
        one_step()
    rates = []
    for _ in range(3):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(5):
                one_step()
            steps += 5
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        rates.append(steps * num_envs / (time.perf_counter() - start))
    return statistics.median(rates)


def measure_row(num_envs: int, device: torch.device, seconds: float) -> list[float]:
    """Env-steps/s of the bare simulator, the wrapper's hooks, and TorchRL's loop."""
    kwargs = dict(num_robots=5, num_obstacles=4, device=device, validate=False, seed=0)
    gen = torch.Generator(device=device).manual_seed(0)

    def actions() -> torch.Tensor:
        return torch.randint(0, 25, (num_envs, 5), generator=gen, device=device)

    sim = MarineNavEnv(num_envs, **kwargs).sim

    def bare() -> None:
        sim.reset(sim.step(actions()).env_done)

    env = MarineNavEnv(num_envs, **kwargs)
    hooks_td = env.reset()

    def hooks() -> None:
        nonlocal hooks_td
        out = env._step(hooks_td.set(("agents", "action"), actions()))
        hooks_td = env._reset(TensorDict({"_reset": out["done"]}, batch_size=[num_envs]))

    loop_env = MarineNavEnv(num_envs, **kwargs)
    loop_td = loop_env.reset()

    def loop() -> None:
        nonlocal loop_td
        _, loop_td = loop_env.step_and_maybe_reset(loop_td.set(("agents", "action"), actions()))

    return [_rate(f, num_envs, seconds, device) for f in (bare, hooks, loop)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--envs", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"# torch {torch.__version__}, device {device}, {torch.get_num_threads()} CPU threads")
    print("| E | simulator (env-steps/s) | _step/_reset | step_and_maybe_reset |")
    print("|---:|---:|---:|---:|")
    for num_envs in args.envs:
        rates = measure_row(num_envs, device, args.seconds)
        print(f"| {num_envs} | {rates[0]:,.0f} | {rates[1]:,.0f} ({rates[1] / rates[0]:.0%}) | "
              f"{rates[2]:,.0f} ({rates[2] / rates[0]:.0%}) |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
