"""The opt-in accelerators, each equal to eager: the compiled simulator step (``compile=True``:
one graph, no recompilation), the compiled update and acting network of every agent
(``Updater.compile`` / ``Agent.compile_policy``), and the CUDA-graph paths (``cudagraphs``, marked
``cuda``: skipped without a GPU).

Compiling on CPU needs a C++ compiler for Inductor's generated code; without one these tests
are skipped. The reference recordings are replayed on the compiled path too, in
``tests/test_reference_parity.py`` (marked ``slow``: one compilation per recording). One agent
(DQN, the quickest to compile) runs in the default test run; every agent runs with ``-m slow``.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
import torch._inductor.config
from torch._dynamo.utils import counters
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents import AGENT_NAMES, agent_class, make_agent
from marinenav.envs import MarineNavEnv
from marinenav.sim import MarineNavSimulator
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.sim.dynamics import VesselState
from marinenav.training.updater import Updater
from tests.agent_utils import robot_observations, training_batch
from tests.compile_utils import needs_cxx

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
# DQN in the default run; the others compile for 20-70 s each on the 2-core machine
EVERY_AGENT = [
    pytest.param(name, marks=() if name == "dqn" else pytest.mark.slow) for name in AGENT_NAMES
]
# agents learning from replayed robot transitions (tests/agent_utils.training_batch); the PPO
# agents' rollout minibatches are covered in tests/test_agent_ppo.py
REPLAY_AGENTS = [p for p in EVERY_AGENT if agent_class(p.values[0]).learning == "replay"]

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


# ---------------------------------------------------------------------------- agents
def _parameters(updater: Updater) -> list[torch.Tensor]:
    return [p.detach().clone() for p in updater.agent.state_dict().values()]


def _assert_same_updates(
    eager: Updater, accelerated: Updater, updates: int, device: str = "cpu"
) -> None:
    """``updates`` updates on the same batches and global random streams (IQN's quantile
    fractions, SAC's policy samples) give the same losses and parameters.

    Tolerance: Inductor fuses and reorders float32 arithmetic, so gradients differ from eager
    in the last bits (about 1e-7 relative). Adam moves a parameter by at most about ``lr``
    (1e-4) per update, so ``atol=1e-6`` on parameters is 1% of one step: a missing or doubled
    step, an unclipped gradient or a wrong loss term shows as 1e-5 or more (measured agreement
    here: below 1e-8)."""
    for k in range(updates):
        batch = training_batch(64, eager.agent.action_kind, seed=k).to(device)
        results = []
        for updater in (eager, accelerated):
            torch.manual_seed(100 + k)
            results.append(updater.update(batch.clone()))
        for key in results[0].keys():
            torch.testing.assert_close(
                results[1][key], results[0][key], rtol=1e-5, atol=1e-6,
                msg=lambda m, key=key, k=k: f"update {k}, {key}: {m}",
            )  # fmt: skip
        for a, b in zip(_parameters(eager), _parameters(accelerated), strict=True):
            torch.testing.assert_close(b, a, rtol=0.0, atol=1e-6, msg=f"after update {k}")


@needs_cxx
@pytest.mark.parametrize("name", REPLAY_AGENTS)
def test_compiled_update_equals_eager_and_compiles_once(name: str) -> None:
    """``Updater.compile()``: the first update runs eagerly (the optimisers' state is created),
    the next ones compiled; losses and parameters follow eager's, and once every objective has
    made its compiled step (a delayed one, TD3's actor every 2nd update, at its second turn)
    no new graph is made (``error_on_recompile``)."""
    torch._dynamo.reset()
    counters.clear()
    eager, compiled = Updater(make_agent(name)), Updater(make_agent(name))
    compiled.compile()
    # warm-up (eager), then each objective's first compiled step: a delayed objective's comes
    # `every` updates later, and its optimiser's step is a second guard on torch's shared
    # Optimizer.step wrapper (a graph of its own, made once)
    first_compiled = 1 + max(objective.every for objective in compiled.objectives)
    # random ops inside the graph draw from torch's global stream as eager does
    with torch._inductor.config.patch(fallback_random=True):
        _assert_same_updates(eager, compiled, first_compiled)
        graphs = counters["stats"]["unique_graphs"]
        assert graphs >= 1  # the update did run through Dynamo
        with torch._dynamo.config.patch(error_on_recompile=True):
            _assert_same_updates(eager, compiled, 3)
    assert counters["stats"]["unique_graphs"] == graphs


@needs_cxx
@pytest.mark.parametrize("name", EVERY_AGENT)
def test_compiled_acting_equals_eager_and_compiles_once(name: str) -> None:
    """``compile_policy()``: the same actions and the same random stream (epsilon draws,
    policy noise, quantile fractions) as eager acting, over 6 batched steps of new
    observations, with no graph made after the first step. Continuous actions are float32
    values in (-1, 1) compared to ``1e-6`` (a few rounding steps of the fused network);
    discrete actions must be identical."""
    torch._dynamo.reset()
    counters.clear()
    eager, compiled = make_agent(name), make_agent(name)
    compiled.compile_policy()
    if eager.epsilon_greedy:  # exploration draws from the policy's stream too
        for agent in (eager, compiled):
            agent.policy.set_epsilon(0.3)
    graphs = None
    with set_exploration_type(ExplorationType.RANDOM):
        for t in range(6):
            obs = robot_observations(4, 5, seed=t)
            with torch._dynamo.config.patch(error_on_recompile=t > 0):
                acted = [agent.policy(obs.clone()) for agent in (eager, compiled)]
            actions = [td.get(("agents", "action")) for td in acted]
            if actions[0].dtype == torch.int64:
                assert torch.equal(actions[1], actions[0]), f"step {t}"
            else:
                torch.testing.assert_close(actions[1], actions[0], rtol=0.0, atol=1e-6)
            graphs = counters["stats"]["unique_graphs"] if graphs is None else graphs
            assert graphs >= 1 and counters["stats"]["unique_graphs"] == graphs
    assert eager.rng_state().keys() == compiled.rng_state().keys()
    for device, state in eager.rng_state().items():
        assert torch.equal(compiled.rng_state()[device], state)


def test_cudagraph_updates_are_refused_off_cuda_and_with_an_own_generator() -> None:
    """Refused before anything is wrapped: an agent on the CPU, and an agent declaring
    ``cudagraph_update = False`` (checked on a CUDA machine only, after the device)."""
    refused = [name for name in AGENT_NAMES if not make_agent(name).cudagraph_update]
    # rainbow's noisy-net noise comes from noise_generator; td3 branches on its update count
    assert refused == ["rainbow", "td3"]
    assert [name for name in refused if Updater(make_agent(name)).delayed] == ["td3"]
    updater = Updater(make_agent("dqn"))
    with pytest.raises(ValueError, match="cudagraphs=true needs a CUDA device, but device=cpu"):
        updater.compile(compile=False, cudagraphs=True)
    assert updater._step_all == updater._step_objectives
    assert not any(g["capturable"] for g in updater.optimizers["q"].param_groups)
    if torch.cuda.is_available():
        refusal = "cudagraphs=true: agent rainbow's update cannot be one CUDA graph"
        with pytest.raises(ValueError, match=refusal):
            Updater(make_agent("rainbow").to("cuda")).compile(compile=False, cudagraphs=True)


def test_simulator_refuses_cudagraphs_off_cuda() -> None:
    with pytest.raises(ValueError, match="cudagraphs=True needs a CUDA device"):
        MarineNavSimulator(2, cudagraphs=True, device="cpu")


# ---------------------------------------------------------------------------- CUDA graphs
@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("compile", [False, pytest.param(True, marks=needs_cxx)])
def test_cudagraph_step_equals_eager(compile: bool) -> None:
    """The simulator step replayed as a CUDA graph (captured at the second step) gives the
    same states, observations, rewards, flags and random stream as the eager step over 60
    steps with partial resets (float64: the same tolerance as the compiled step)."""
    torch._dynamo.reset()
    common = dict(schedule=SCHEDULE, dtype=torch.float64, seed=7, validate=False,
                  max_episode_steps=12, device="cuda")  # fmt: skip
    eager = MarineNavSimulator(8, **common)
    graphed = MarineNavSimulator(8, compile=compile, cudagraphs=True, **common)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for t in range(60):
        actions = torch.randint(0, 25, (8, 4), generator=gen, device="cuda")
        results = [sim.step(actions) for sim in (eager, graphed)]
        torch.testing.assert_close(results[1].reward, results[0].reward, rtol=1e-9, atol=1e-9)
        for name in ("done", "info", "terminated", "truncated", "env_done"):
            assert torch.equal(getattr(results[1], name), getattr(results[0], name)), name
        _assert_same(eager, graphed, f"step {t}")
        for sim, result in zip((eager, graphed), results, strict=True):
            sim.reset(result.env_done)
        _assert_same(eager, graphed, f"reset after step {t}")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("compile", [False, pytest.param(True, marks=needs_cxx)])
@pytest.mark.parametrize(
    "name", [p.values[0] for p in REPLAY_AGENTS if agent_class(p.values[0]).cudagraph_update]
)
def test_cudagraph_update_equals_eager(name: str, compile: bool) -> None:
    """``Updater.compile(cudagraphs=True)``: 5 eager warm-up updates on a side stream, the
    capture, then replays; 8 updates on new batches follow eager's losses and parameters
    (tolerance: see :func:`_assert_same_updates`). Random draws inside the graph come from
    the default CUDA generator, registered with the capture: the same stream as eager."""
    torch._dynamo.reset()
    eager = Updater(make_agent(name).to("cuda"))
    graphed = Updater(make_agent(name).to("cuda"))
    graphed.compile(compile=compile, cudagraphs=True)
    with torch._inductor.config.patch(fallback_random=True):
        _assert_same_updates(eager, graphed, 8, device="cuda")


@needs_cxx
@pytest.mark.slow  # a second compile of the step (about 40 s on the 2-core machine)
def test_compiled_step_keeps_the_closest_approaches_as_eager() -> None:
    """A layout whose rules read the closest approaches (the mix's give-way check term, who
    gives way fixed where met, on the Imazu encounters): the compiled step keeps them, the
    encounters included, and pays the term as the eager one does, in one graph."""
    from marinenav.scenarios import make_layout

    torch._dynamo.reset()
    counters.clear()
    scenarios = make_layout("imazu").evaluation_scenarios(1, 253, (4, 0, 0))
    mix = {"parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
           "give_way_check_penalty": 1.0, "give_way_check_from": "in_range",
           "cross_ahead_of": "traffic"}  # fmt: skip
    eager, compiled = (
        MarineNavSimulator.from_scenarios(
            scenarios, "discrete", dtype=torch.float64, layout=make_layout("mix", mix),
            validate=False, compile=flag,
        )
        for flag in (False, True)
    )  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    paid = torch.zeros(22, dtype=torch.float64)
    for t in range(40):
        actions = torch.randint(0, 25, (22, 4), generator=gen)
        with torch._dynamo.config.patch(error_on_recompile=t > 0):
            results = [sim.step(actions) for sim in (eager, compiled)]
        terms = [r.reward_terms for r in results]
        torch.testing.assert_close(terms[1], terms[0], rtol=1e-9, atol=1e-9)
        paid += terms[0][:, 0, -1]
        for name in ("distance", "bearing"):
            torch.testing.assert_close(
                getattr(compiled.closest, name), getattr(eager.closest, name), rtol=0, atol=1e-9
            )
        assert torch.equal(compiled.closest.encounter, eager.closest.encounter)
    assert paid.ne(0).any() and counters["stats"]["unique_graphs"] == 1
    assert not counters["graph_break"]
