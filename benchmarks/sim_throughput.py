"""Robot-steps per second of ``MarineNavSimulator.step`` with random actions.

The issue's protocol: 5 robots, 4 obstacles, 0 or 8 vortex cores, E in {1, 64, 1024, 8192},
perception noise on (the defaults), median of 3 timed runs. Two rows per setting:

* ``step``: ``step`` alone (robots that finish stay frozen, the work per step is unchanged);
* ``step+reset``: ``step`` then ``reset(result.env_done)``, as a training loop does it.

A robot-step is one robot slot advanced by one environment step (E x 5 per batched step).

Usage::

    python benchmarks/sim_throughput.py                      # CPU, all sizes
    python benchmarks/sim_throughput.py --device cuda --envs 1024 8192 65536
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from marinenav.sim import MarineNavSimulator
from marinenav.sim.curriculum import CurriculumSchedule


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(
    num_envs: int,
    cores: int,
    device: torch.device,
    seconds: float,
    with_reset: bool,
    action_kind: str,
) -> float:
    """Median robot-steps per second over 3 runs of about ``seconds`` each."""
    schedule = CurriculumSchedule(
        timesteps=[0],
        num_robots=[5],
        num_cores=[cores],
        num_obstacles=[4],
        min_start_goal_dis=[40.0],
    )
    sim = MarineNavSimulator(
        num_envs, action_kind, schedule=schedule, device=device, validate=False, seed=0
    )
    gen = torch.Generator(device=device).manual_seed(0)
    shape = (num_envs, 5) if action_kind == "discrete" else (num_envs, 5, 2)

    def one_step() -> None:
        if action_kind == "discrete":
            actions = torch.randint(0, 25, shape, generator=gen, device=device)
        else:
            actions = torch.rand(shape, generator=gen, device=device) * 2 - 1
        result = sim.step(actions)
        if with_reset:
            sim.reset(result.env_done)

    for _ in range(3):  # warm-up
        one_step()
    _sync(device)
    rates = []
    for _ in range(3):
        steps = 0
        start = time.perf_counter()
        while True:
            for _ in range(5):
                one_step()
            steps += 5
            _sync(device)
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append(steps * num_envs * 5 / elapsed)
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 64, 1024, 8192])
    parser.add_argument("--cores", type=int, nargs="+", default=[0, 8])
    parser.add_argument("--seconds", type=float, default=5.0, help="per timed run")
    parser.add_argument("--action-kind", default="discrete", choices=["discrete", "continuous"])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(
        f"# torch {torch.__version__}, device {device} ({name or platform.machine()}), "
        f"{torch.get_num_threads()} CPU threads, {args.action_kind} actions"
    )
    print("| E | cores | step (robot-steps/s) | step+reset (robot-steps/s) |")
    print("|---:|---:|---:|---:|")
    for cores in args.cores:
        for num_envs in args.envs:
            row = [
                measure(num_envs, cores, device, args.seconds, with_reset, args.action_kind)
                for with_reset in (False, True)
            ]
            print(f"| {num_envs} | {cores} | {row[0]:,.0f} | {row[1]:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
