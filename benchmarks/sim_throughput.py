"""Robot-steps per second of ``MarineNavSimulator.step`` with random actions.

The issue's protocol: 5 robots, 4 obstacles, 0 or 8 vortex cores, E in {1, 64, 1024, 8192},
perception noise on (the defaults), median of 3 timed runs. Two rows per setting:

* ``step``: ``step`` alone (robots that finish stay frozen, the work per step is unchanged);
* ``step+reset``: ``step`` then ``reset(result.env_done)``, as a training loop does it.

A robot-step is one robot slot advanced by one environment step (E x 5 per batched step).
Each setting runs on the chosen paths in the same process, taking turns every 5 steps (so
that on a shared machine every path sees the same load):

* ``eager``: the default eager step (on the CPU, perception works only on the robots that
  perceive and the candidate slots they may see, where that skips enough pairs);
* ``eager-dense``: the eager step perceiving every (robot, candidate) pair, as before that
  work-skipping (``compact_perception = False``; the same numbers);
* ``compiled``: ``compile=True`` (fixed shapes, every pair; the first step compiles, its time
  is printed apart).

``--robots`` / ``--obstacles`` set how many of the 5 robot and 4 obstacle slots are filled
(the curriculum's first stage: 3 robots, no obstacles). The last column compares with the
original numpy simulator's 840 robot-steps/s (5 robots, 4 obstacles, no cores, one core of a
development machine, issue 2); the original is not installed here to run side by side.

Usage::

    python benchmarks/sim_throughput.py                      # CPU, all sizes, all paths
    python benchmarks/sim_throughput.py --envs 1 1024 --cores 0 --paths eager compiled
    python benchmarks/sim_throughput.py --envs 1024 --robots 3 --obstacles 0
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


class Runner:
    """One path's simulator and its own action stream (seed 0: every path gets the same
    actions, so numerically equal paths simulate the same episodes)."""

    def __init__(self, num_envs: int, cores: int, device: torch.device, action_kind: str,
                 path: str, robots: int, obstacles: int) -> None:  # fmt: skip
        schedule = CurriculumSchedule(
            timesteps=[0], num_robots=[robots], num_cores=[cores], num_obstacles=[obstacles],
            min_start_goal_dis=[40.0],
        )  # fmt: skip
        self.sim = MarineNavSimulator(
            num_envs, action_kind, robot_slots=5, obstacle_slots=4, schedule=schedule,
            device=device, validate=False, seed=0, compile=path == "compiled",
        )  # fmt: skip
        if path == "eager-dense":
            self.sim.compact_perception = False
        self.device, self.action_kind = device, action_kind
        self.generator = torch.Generator(device=device).manual_seed(0)
        self.shape = (num_envs, 5) if action_kind == "discrete" else (num_envs, 5, 2)

    def steps(self, count: int, with_reset: bool) -> float:
        """Seconds taken by ``count`` steps (each followed by a masked reset if asked)."""
        start = time.perf_counter()
        for _ in range(count):
            if self.action_kind == "discrete":
                actions = torch.randint(0, 25, self.shape, generator=self.generator,
                                        device=self.device)  # fmt: skip
            else:
                actions = torch.rand(self.shape, generator=self.generator, device=self.device)
                actions = actions * 2 - 1
            result = self.sim.step(actions)
            if with_reset:
                self.sim.reset(result.env_done)
        _sync(self.device)
        return time.perf_counter() - start


def measure(
    num_envs: int,
    cores: int,
    device: torch.device,
    seconds: float,
    action_kind: str,
    paths: list[str],
    robots: int = 5,
    obstacles: int = 4,
) -> dict[str, tuple[float, float, float]]:
    """Per path: seconds of the first step (compilation included), then the median
    robot-steps per second of ``step`` and of ``step+reset`` over 3 runs of about
    ``seconds`` of that path each. Within a run the paths take turns every 5 steps, so on a
    shared machine they see the same load."""
    runners = {
        path: Runner(num_envs, cores, device, action_kind, path, robots, obstacles)
        for path in paths
    }
    rows = {path: [runner.steps(1, False)] for path, runner in runners.items()}
    for with_reset in (False, True):
        for runner in runners.values():
            runner.steps(3, with_reset)  # warm-up
        rates: dict[str, list[float]] = {path: [] for path in paths}
        for _ in range(3):
            elapsed = dict.fromkeys(paths, 0.0)
            count = 0
            while min(elapsed.values()) < seconds:
                for path, runner in runners.items():
                    elapsed[path] += runner.steps(5, with_reset)
                count += 5
            for path in paths:
                rates[path].append(count * num_envs * 5 / elapsed[path])
        for path in paths:
            rows[path].append(statistics.median(rates[path]))
    return {path: (row[0], row[1], row[2]) for path, row in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 64, 1024, 8192])
    parser.add_argument("--cores", type=int, nargs="+", default=[0, 8])
    parser.add_argument("--seconds", type=float, default=5.0, help="per timed run")
    parser.add_argument("--action-kind", default="discrete", choices=["discrete", "continuous"])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument(
        "--paths", nargs="+", default=["eager", "eager-dense", "compiled"],
        choices=["eager", "eager-dense", "compiled"],
    )  # fmt: skip
    parser.add_argument("--robots", type=int, default=5, help="robots present (of 5 slots)")
    parser.add_argument("--obstacles", type=int, default=4, help="obstacles (of 4 slots)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(
        f"# torch {torch.__version__}, device {device} ({name or platform.machine()}), "
        f"{torch.get_num_threads()} CPU threads, {args.action_kind} actions, "
        f"{args.robots} robots and {args.obstacles} obstacles in 5 and 4 slots"
    )
    print(
        "| E | cores | path | first step (s) | step (robot-steps/s) "
        "| step+reset (robot-steps/s) | step+reset vs original |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|")
    for cores in args.cores:
        for num_envs in args.envs:
            rows = measure(
                num_envs, cores, device, args.seconds, args.action_kind, args.paths,
                args.robots, args.obstacles,
            )  # fmt: skip
            for path, (first, step, step_reset) in rows.items():
                ratio = step_reset / ORIGINAL_ROBOT_STEPS_PER_S
                original_layout = cores == 0 and (args.robots, args.obstacles) == (5, 4)
                ratio = f"{ratio:,.0f}x" if original_layout else ""
                print(
                    f"| {num_envs} | {cores} | {path} | {first:.1f} | {step:,.0f} "
                    f"| {step_reset:,.0f} | {ratio} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
