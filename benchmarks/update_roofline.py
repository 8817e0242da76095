"""Time per gradient update of each agent next to the time its matrix multiplies alone take.

On a CPU an update of batch 64 is a few hundred small kernels; the matrix multiplies (forward
and backward, every network the update touches) are the part no implementation can avoid. This
script measures, per agent:

* ``update``: one ``Updater(agent).update(batch)`` (all its networks: losses, backward,
  clipping, Adam),
  the fastest of ``--repeats`` after a warm-up (interleaved with the floor's timings);
* ``matmul floor``: the same update's matrix-multiply kernels (``aten::mm``, ``addmm``, ``bmm``,
  ``baddbmm``; shapes taken from a ``torch.profiler`` trace of one update) replayed alone on
  random operands of the same shapes and dtype, back to back;
* ``overhead``: ``update / floor``: what element-wise kernels, autograd bookkeeping, clipping
  and the optimiser add on top;
* with ``--compile``, ``compiled``: the same update through ``Updater.compile()``
  (``torch.compile``; a second agent with the same seed, compiled before timing), timed in the
  same interleaved rounds.

The floor replays contiguous operands; a transposed operand in the real update can cost a few
percent more or less. Usage::

    OMP_NUM_THREADS=1 python benchmarks/update_roofline.py [--agents ac_iqn dqn] [--batch 64]
    OMP_NUM_THREADS=1 python benchmarks/update_roofline.py --compile
"""

from __future__ import annotations

import argparse
import platform
import time

import torch
from tensordict import TensorDict

from marinenav.agents import AGENT_NAMES, agent_class, make_agent
from marinenav.training.updater import Updater

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def random_batch(batch: int, action_kind: str, generator: torch.Generator) -> TensorDict:
    """A flat training batch with the keys of ``marinenav.agents.base`` (values random: the
    cost of an update does not depend on them)."""

    def observation() -> dict[str, torch.Tensor]:
        return {
            "self_state": torch.randn(batch, 7, generator=generator) * 5,
            "objects": torch.randn(batch, 5, 5, generator=generator) * 5,
            "objects_mask": torch.rand(batch, 5, generator=generator) > 0.4,
        }

    if action_kind == "discrete":
        action = torch.randint(0, 25, (batch,), generator=generator)
    else:
        action = torch.rand(batch, 2, generator=generator) * 2 - 1
    terminated = torch.rand(batch, 1, generator=generator) < 0.1
    nxt = TensorDict(
        {**observation(), "reward": torch.randn(batch, 1, generator=generator),
         "terminated": terminated, "done": terminated},
        batch_size=[batch],
    )  # fmt: skip
    return TensorDict({**observation(), "action": action, "next": nxt}, [batch])


def best_seconds(fns, repeats: int) -> list[float]:
    """Fastest of ``repeats`` timings of each function, interleaved so that all see the same
    load (on a shared machine the minimum is the estimate least disturbed by other processes)."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, record in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            record.append(time.perf_counter() - start)
    return [min(record) for record in times]


def matmul_calls(updater: Updater, batch: TensorDict) -> list[tuple[str, list[list[int]]]]:
    """The matrix-multiply kernels one update runs: (op name, input shapes) in call order."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                record_shapes=True) as prof:  # fmt: skip
        updater.update(batch)
    return [(e.name, e.input_shapes) for e in prof.events() if e.name in MATMULS]


def replay_matmuls(calls, dtype: torch.dtype, generator: torch.Generator):
    """A closure running the recorded kernels on random operands of the same shapes."""
    ops = []
    for name, shapes in calls:
        tensors = [torch.randn(*s, dtype=dtype, generator=generator) for s in shapes if s]
        ops.append((getattr(torch, name.split("::")[1]), tensors))

    def run() -> None:
        for op, tensors in ops:
            op(*tensors)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # the agents learning from replayed transitions (random_batch's layout; not PPO's rollouts)
    replay_agents = [name for name in AGENT_NAMES if agent_class(name).learning == "replay"]
    parser.add_argument("--agents", nargs="+", default=replay_agents)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--compile", action="store_true", help="also time the compiled update")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"{platform.processor() or platform.machine()}, batch {args.batch}")  # fmt: skip
    header = "| agent | update (ms) | matmul floor (ms) | matmuls per update | update / floor |"
    rule = "|---|---:|---:|---:|---:|"
    if args.compile:
        header += " compiled (ms) | compiled / floor | compile (s) |"
        rule += "---:|---:|---:|"
    print(header)
    print(rule)
    for name in args.agents:
        generator = torch.Generator().manual_seed(0)
        updater = Updater(make_agent(name))
        batch = random_batch(args.batch, updater.agent.action_kind, generator)
        for _ in range(20):  # warm-up: allocator, Adam state
            updater.update(batch)
        calls = matmul_calls(updater, batch)
        floor_fn = replay_matmuls(calls, torch.float32, generator)
        fns = [lambda: updater.update(batch), floor_fn]  # noqa: B023
        if args.compile:
            # one agent per process in training: forget the other agents' graphs, which share
            # code objects (Updater._step, the optimisers' step) and their cache limit
            torch._dynamo.reset()
            compiled = Updater(make_agent(name))
            compiled.compile()
            start = time.perf_counter()
            for _ in range(3):  # eager warm-up, compilation, first compiled call
                compiled.update(batch)
            compile_seconds = time.perf_counter() - start
            fns.append(lambda: compiled.update(batch))  # noqa: B023
        times = best_seconds(fns, args.repeats)
        update, floor = times[:2]
        row = (f"| {name} | {update * 1e3:.2f} | {floor * 1e3:.2f} | {len(calls)} | "
               f"{update / floor:.1f}x |")  # fmt: skip
        if args.compile:
            row += f" {times[2] * 1e3:.2f} | {times[2] / floor:.1f}x | {compile_seconds:.0f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
