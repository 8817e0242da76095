"""The compiled simulator step (``compile=True``): equal to eager, one graph, no recompilation.

Compiling on CPU needs a C++ compiler for Inductor's generated code; without one these tests
are skipped. The reference recordings are replayed on the compiled path too, in
``tests/test_reference_parity.py`` (marked ``slow``: one compilation per recording).
"""

from __future__ import annotations

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from marinenav.envs import MarineNavEnv
from marinenav.sim import MarineNavSimulator
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.sim.dynamics import VesselState
from tests.compile_utils import needs_cxx

SCHEDULE = CurriculumSchedule(
    timesteps=[0], num_robots=[4], num_cores=[2], num_obstacles=[3], min_start_goal_dis=[30.0]
)
FLAGS = ("collision", "reach_goal", "deactivated", "apply_colregs", "episode_steps")


def _pair(**kwargs) -> tuple[MarineNavSimulator, MarineNavSimulator]:
    """An eager and a compiled simulator with the same seed and settings."""
    common = dict(schedule=SCHEDULE, dtype=torch.float64, seed=7, validate=False) | kwargs
    return MarineNavSimulator(8, **common), MarineNavSimulator(8, compile=True, **common)


def _assert_same(eager: MarineNavSimulator, compiled: MarineNavSimulator, where: str) -> None:
    tol = {"rtol": 1e-9, "atol": 1e-9, "msg": lambda m: f"{where}: {m}"}
    for name in VesselState.__dataclass_fields__:
        torch.testing.assert_close(getattr(compiled.state, name), getattr(eager.state, name), **tol)
    for name in FLAGS:
        assert torch.equal(getattr(compiled, name), getattr(eager, name)), f"{where}: {name}"
    a, b = compiled.observation, eager.observation
    torch.testing.assert_close(a.self_state, b.self_state, **tol)
    torch.testing.assert_close(a.objects, b.objects, **tol)
    assert torch.equal(a.objects_mask, b.objects_mask), f"{where}: objects_mask"
    assert torch.equal(compiled.generator.get_state(), eager.generator.get_state()), where


@needs_cxx
def test_compiled_step_equals_eager_and_compiles_once() -> None:
    """Noise on (the defaults), currents, obstacles, timeouts and partial resets: the same
    states, observations, rewards and flags, and the same random stream, on both paths; the
    compiled step is one graph with no breaks (``fullgraph``), reused over 100 steps."""
    torch._dynamo.reset()
    counters.clear()
    eager, compiled = _pair(max_episode_steps=12)
    gen = torch.Generator().manual_seed(0)
    truncated = 0
    for t in range(100):
        actions = torch.randint(0, 25, (8, 4), generator=gen)
        with torch._dynamo.config.patch(error_on_recompile=t > 0):
            results = [sim.step(actions) for sim in (eager, compiled)]
        assert counters["stats"]["unique_graphs"] == 1
        for name in ("reward", "energy"):
            torch.testing.assert_close(
                getattr(results[1], name), getattr(results[0], name), rtol=1e-9, atol=1e-9
            )
        for name in ("done", "info", "was_active", "terminated", "truncated", "env_done"):
            assert torch.equal(getattr(results[1], name), getattr(results[0], name)), name
        _assert_same(eager, compiled, f"step {t}")
        for sim, result in zip((eager, compiled), results, strict=True):
            sim.reset(result.env_done)
        _assert_same(eager, compiled, f"reset after step {t}")
        truncated += int(results[0].env_truncated.sum())
    assert truncated >= 8 * 4  # environments hit the step limit again and again
    assert not counters["graph_break"]


def test_env_passes_compile_step_to_the_simulator() -> None:
    """Wiring only (nothing is compiled until the first step): eager stays the default.
    (``compile=`` itself belongs to TorchRL's EnvBase, hence ``compile_step``.)"""
    assert not MarineNavEnv(2, num_robots=2).sim.compiled
    assert MarineNavEnv(2, num_robots=2, compile_step=True).sim.compiled
