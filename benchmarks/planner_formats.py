"""Time per decision of an exported planner in each file format, from C++ and from Python, on one
thread, in one run (docs/benchmarks.md, "Planner file formats").

From C++ (``cpp/planner_call``'s ``planner_bench``, built here with CMake against the torch
wheel's libtorch): the TorchScript file as the original's node loads it (``torch::jit::load``), the
same frozen and optimised for inference (as ``marinenav.planner`` loads it), and the AOTInductor
package (``AOTIModelPackageLoader``); a decision is the node's: its inputs, IQN's taus drawn, the
model call, its action rule (SAC's noise drawn). From Python (``PlannerPolicy.act`` on flat
float64 inputs, the planner's own rule: random taus, sampled noise): TorchScript, ``.pt2`` and
ONNX Runtime. Every format decides on the same ``B`` robots (0 to 5 objects present) ``--calls``
times, timed one by one; the formats of a language take turns in ``--rounds`` rounds, so that each
sees the same load of a shared machine. One-time costs: writing the file (tracing; torch.export and
AOTInductor's compile; the ONNX export), loading it and the first decision after loading.

Usage: ``python benchmarks/planner_formats.py [--agents ac_iqn iqn ...] [--batches 1 64]
[--calls 1000] [--rounds 10] [--build DIR]``. The agents are untrained (``make_agent(name,
seed=0)``): the time of a call does not depend on the weights. Prints two Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# one compile thread for AOTInductor (the one-time cost on one core), set before torch reads it
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.agents import agent_class, make_agent  # noqa: E402
from marinenav.planner import planner_policy  # noqa: E402
from marinenav.planner.convention import export_file_name  # noqa: E402
from marinenav.planner.export import EXPORTERS  # noqa: E402

# the agents the original's node calls, by its agent_type
NODE_TYPES = {"ac_iqn": "AC-IQN", "iqn": "IQN", "ddpg": "DDPG", "dqn": "DQN", "sac": "SAC",
              "rainbow": "Rainbow"}  # fmt: skip
CPP_FORMATS = ("torchscript", "torchscript-frozen", "pt2")  # planner_bench's names
PY_FORMATS = ("torchscript", "pt2", "onnx")
WARMUP = 20  # untimed decisions after the first


def build_bench(build: Path) -> Path:
    """Configure (once) and build ``planner_bench`` in ``build``; returns the program."""
    prefix = torch.utils.cmake_prefix_path
    cmake = shutil.which("cmake")
    if cmake is None:
        sys.exit("cmake not found: the C++ side needs CMake and a C++ compiler")
    for args in (
        [cmake, "-S", str(ROOT / "cpp/planner_call"), "-B", str(build),
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"],
        [cmake, "--build", str(build), "-j1", "--target", "planner_bench"],
    ):  # fmt: skip
        result = subprocess.run(args, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return build / "planner_bench"


def robots(batch: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``batch`` robots' float64 inputs, fixed seed: ``i % 6`` objects present in row ``i``."""
    generator = torch.Generator().manual_seed(0)
    f64 = torch.float64
    self_state = torch.randn(batch, 7, generator=generator, dtype=f64) * 5
    mask = (torch.arange(5) < (torch.arange(batch) % 6).unsqueeze(-1)).to(f64)
    objects = torch.randn(batch, 5, 5, generator=generator, dtype=f64) * 5 * mask.unsqueeze(-1)
    return self_state, objects, mask


def percentiles(micros: list[float]) -> tuple[float, float]:
    """p50 and p99 of the samples (microseconds)."""
    q = torch.quantile(torch.tensor(micros, dtype=torch.float64), torch.tensor([0.5, 0.99],
                       dtype=torch.float64))  # fmt: skip
    return float(q[0]), float(q[1])


def python_side(paths: dict[str, Path], batch: int, calls: int, rounds: int) -> dict[str, dict]:
    """Load, first decision and per-decision samples of every Python format."""
    inputs = robots(batch)
    results: dict[str, dict] = {}
    policies = {}
    for fmt in PY_FORMATS:
        start = time.perf_counter()
        policies[fmt] = planner_policy(paths[fmt], seed=0)
        load = time.perf_counter() - start
        start = time.perf_counter()
        policies[fmt].act(*inputs)
        first = time.perf_counter() - start
        for _ in range(WARMUP):
            policies[fmt].act(*inputs)
        results[fmt] = {"load": load, "first": first, "micros": []}
    for round_ in range(rounds):
        for fmt in PY_FORMATS:
            act, samples = policies[fmt].act, results[fmt]["micros"]
            for _ in range(round_ * calls // rounds, (round_ + 1) * calls // rounds):
                start = time.perf_counter_ns()
                act(*inputs)
                samples.append((time.perf_counter_ns() - start) / 1e3)
    return results


def cpp_side(program: Path, node_type: str, paths: dict[str, Path], batch: int, calls: int,
             rounds: int) -> dict[str, dict]:  # fmt: skip
    """Load, first decision and per-decision samples of every C++ format (``planner_bench``)."""
    specs = [f"{fmt}={paths['pt2' if fmt == 'pt2' else 'torchscript']}" for fmt in CPP_FORMATS]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [str(program), node_type, str(batch), str(calls), str(rounds), *specs],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    if result.returncode != 0:
        sys.exit(f"planner_bench {node_type} failed: {result.stderr}")
    results: dict[str, dict] = {fmt: {} for fmt in CPP_FORMATS}
    for line in result.stdout.splitlines():
        kind, fmt, *values = line.split()
        if kind == "decision":
            results[fmt]["micros"] = [float(v) for v in values]
        else:
            results[fmt][kind] = float(values[0])
    return results


def one_time_rows(model_type: str, written: dict[str, float], cpp: dict, py: dict) -> list[str]:
    """Rows of the one-time table: writing the file, loading it and the first decision, from
    C++ and from Python (Python's TorchScript loader freezes, as the frozen C++ row)."""

    def load(side: dict, fmt: str) -> str:
        return f"{side[fmt]['load']:.3f} / {1e3 * side[fmt]['first']:.2f}" if fmt in side else ""

    rows = (
        ("TorchScript (node's)", f"{written['torchscript']:.2f}", load(cpp, "torchscript"), ""),
        ("TorchScript, frozen", "", load(cpp, "torchscript-frozen"), load(py, "torchscript")),
        (".pt2", f"{written['pt2']:.1f}", load(cpp, "pt2"), load(py, "pt2")),
        ("ONNX", f"{written['onnx']:.2f}", "", load(py, "onnx")),
    )
    return [f"| {model_type} | {' | '.join(row)} |" for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", choices=list(NODE_TYPES), default=list(NODE_TYPES))
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    parser.add_argument("--calls", type=int, default=1000, help="timed decisions per format")
    parser.add_argument("--rounds", type=int, default=10, help="turns the formats take")
    parser.add_argument("--build", type=Path, default=ROOT / "build/planner_call",
                        help="CMake build directory of cpp/planner_call")  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(1)
    program = build_bench(args.build)
    cpu = platform.processor() or platform.machine()
    print(f"# {cpu}, {os.cpu_count()} cores, 1 thread, torch {torch.__version__}, "
          f"{args.calls} decisions per format in {args.rounds} rounds")  # fmt: skip
    once: list[str] = []
    print("\n| agent | batch | C++ TorchScript (node) | C++ TorchScript frozen | C++ .pt2 "
          "| Python TorchScript | Python .pt2 | Python ONNX Runtime |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as directory:
        for name in args.agents:
            agent = make_agent(name, seed=0)
            paths, written = {}, {}
            for fmt in PY_FORMATS:
                start = time.perf_counter()
                paths[fmt] = EXPORTERS[fmt](agent, Path(directory) / export_file_name(name, fmt))
                written[fmt] = time.perf_counter() - start
            for batch in args.batches:
                cpp = cpp_side(program, NODE_TYPES[name], paths, batch, args.calls, args.rounds)
                py = python_side(paths, batch, args.calls, args.rounds)
                cells = [cpp[fmt] for fmt in CPP_FORMATS] + [py[fmt] for fmt in PY_FORMATS]
                print(f"| {agent_class(name).model_type} | {batch} | " + " | ".join(
                    "{:.0f} / {:.0f}".format(*percentiles(c["micros"])) for c in cells
                ) + " |", flush=True)  # fmt: skip
                if batch == args.batches[0]:
                    once += one_time_rows(agent_class(name).model_type, written, cpp, py)
    print(f"\nOne-time costs (load and first decision at batch {args.batches[0]}):\n")
    print("| agent | format | write the file (s) | C++ load (s) / first decision (ms) "
          "| Python load (s) / first decision (ms) |")  # fmt: skip
    print("| --- | --- | ---: | ---: | ---: |")
    print("\n".join(once))


if __name__ == "__main__":
    main()
