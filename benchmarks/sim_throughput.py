"""Robot-steps per second of ``MarineNavSimulator.step`` with random actions.

The issue's protocol: 5 robots, 4 obstacles, 0 or 8 vortex cores, E in {1, 64, 1024, 8192},
perception noise on (the defaults), median of 3 timed runs. Two rows per setting:

* ``step``: ``step`` alone (robots that finish stay frozen, the work per step is unchanged);
* ``step+reset``: ``step`` then ``reset(result.env_done)``, as a training loop does it.

A robot-step is one robot slot advanced by one environment step (E x 5 per batched step).
Each setting runs on the eager step and on the compiled one (``compile=True``, the first step
compiles; its time is printed apart) in the same process. The last column compares with the
original numpy simulator's 840 robot-steps/s (5 robots, 4 obstacles, no cores, one core of a
development machine, issue 2); the original is not installed here to run side by side.

Usage::

    python benchmarks/sim_throughput.py                      # CPU, all sizes, both paths
    python benchmarks/sim_throughput.py --envs 1 1024 --cores 0 --paths eager compiled
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


ORIGINAL_ROBOT_STEPS_PER_S = 840.0  # 5 robots, 4 obstacles, 0 cores (issue 2)


def measure(
    num_envs: int,
    cores: int,
    device: torch.device,
    seconds: float,
    action_kind: str,
    compile: bool,
) -> tuple[float, float, float]:
    """Seconds of the first step (compilation included), then the median robot-steps per
    second of ``step`` and of ``step+reset`` over 3 runs of about ``seconds`` each."""
    schedule = CurriculumSchedule(
        timesteps=[0],
        num_robots=[5],
        num_cores=[cores],
        num_obstacles=[4],
        min_start_goal_dis=[40.0],
    )
    sim = MarineNavSimulator(
        num_envs,
        action_kind,
        schedule=schedule,
        device=device,
        validate=False,
        seed=0,
        compile=compile,
    )
    gen = torch.Generator(device=device).manual_seed(0)
    shape = (num_envs, 5) if action_kind == "discrete" else (num_envs, 5, 2)

    def one_step(with_reset: bool) -> None:
        if action_kind == "discrete":
            actions = torch.randint(0, 25, shape, generator=gen, device=device)
        else:
            actions = torch.rand(shape, generator=gen, device=device) * 2 - 1
        result = sim.step(actions)
        if with_reset:
            sim.reset(result.env_done)

    start = time.perf_counter()
    one_step(False)
    _sync(device)
    first = time.perf_counter() - start
    row = [first]
    for with_reset in (False, True):
        for _ in range(3):  # warm-up
            one_step(with_reset)
        _sync(device)
        rates = []
        for _ in range(3):
            steps = 0
            start = time.perf_counter()
            while True:
                for _ in range(5):
                    one_step(with_reset)
                steps += 5
                _sync(device)
                elapsed = time.perf_counter() - start
                if elapsed >= seconds:
                    break
            rates.append(steps * num_envs * 5 / elapsed)
        row.append(statistics.median(rates))
    return row[0], row[1], row[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 64, 1024, 8192])
    parser.add_argument("--cores", type=int, nargs="+", default=[0, 8])
    parser.add_argument("--seconds", type=float, default=5.0, help="per timed run")
    parser.add_argument("--action-kind", default="discrete", choices=["discrete", "continuous"])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument(
        "--paths", nargs="+", default=["eager", "compiled"], choices=["eager", "compiled"]
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(
        f"# torch {torch.__version__}, device {device} ({name or platform.machine()}), "
        f"{torch.get_num_threads()} CPU threads, {args.action_kind} actions"
    )
    print(
        "| E | cores | path | first step (s) | step (robot-steps/s) "
        "| step+reset (robot-steps/s) | step+reset vs original |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|")
    for cores in args.cores:
        for num_envs in args.envs:
            for path in args.paths:
                first, step, step_reset = measure(
                    num_envs, cores, device, args.seconds, args.action_kind, path == "compiled"
                )
                ratio = f"{step_reset / ORIGINAL_ROBOT_STEPS_PER_S:,.0f}x" if cores == 0 else ""
                print(
                    f"| {num_envs} | {cores} | {path} | {first:.1f} | {step:,.0f} "
                    f"| {step_reset:,.0f} | {ratio} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
