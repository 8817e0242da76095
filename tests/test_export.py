"""TorchScript / AOTInductor (``.pt2``) / ONNX export for the C++ planner
(docs/migrating.md, "The node's call, from C++"): signatures, shapes and dtypes, equality with
the live networks, the planner's action rule against the live ``PolicyWrapper``, Rainbow's mean
weights, the live agent left untouched, files written in place, and the command line."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents import AGENT_NAMES, Agent, agent_class, make_agent
from marinenav.planner.convention import (
    EXTRA_INPUT_EXAMPLES,
    export_file_name,
    input_names,
    planner_action,
    planner_file_name,
    planner_inputs,
    rule_options,
)
from marinenav.planner.elementary_atan import atan_elementary
from marinenav.planner.export import (
    export_metadata,
    export_onnx,
    export_torchscript,
    main,
    metadata,
    write_in_place,
)
from tests.export_utils import EXPORT_SEED, pt2_agents
from tests.run_utils import python_program

ROOT = Path(__file__).resolve().parents[1]
SEED = 7
NUM_TAU = 32
OBJECT_COUNTS = (0, 1, 3, 5)  # objects present per sample (one sample with none)
F64 = torch.float64


def jit_load(path: Path) -> torch.jit.ScriptModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.load is deprecated
        return torch.jit.load(str(path), map_location="cpu")


def observation(count: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """One float64 batch-1 observation in realistic ranges: ``self_state (1, 7)`` (goal, u, v,
    omega, thrusts), ``objects (1, 5, 5)`` with ``count`` present and zero padding,
    ``mask (1, 5)`` of 0/1."""

    def uniform(low: float, high: float, *shape: int) -> torch.Tensor:
        return low + (high - low) * torch.rand(*shape, generator=generator, dtype=F64)

    self_state = torch.cat(
        (uniform(-30, 30, 1, 2), uniform(-1, 3, 1, 1), uniform(-1, 1, 1, 2),
         uniform(-500, 1000, 1, 2)),
        dim=-1,
    )  # fmt: skip
    objects = torch.cat(
        (uniform(-15, 15, 1, 5, 2), uniform(-2, 2, 1, 5, 2), uniform(0.5, 3, 1, 5, 1)), dim=-1
    )
    mask = (torch.arange(5) < count).to(F64).unsqueeze(0)
    return self_state, objects * mask.unsqueeze(-1), mask


def as_tuple(outputs: Any) -> tuple[torch.Tensor, ...]:
    """An exported module's outputs as a tuple (one output is returned bare)."""
    return outputs if isinstance(outputs, tuple) else (outputs,)


def policy_extra_inputs(cls: type[Agent], seed: int) -> tuple[torch.Tensor, ...]:
    """The agent's extra planner inputs (batch 1, float32) as its ``PolicyWrapper`` draws them
    first from a stream restarted at ``seed``: quantile fractions ``taus ~ U(0, 1)`` ``[1, 32]``."""
    draws = {"taus": lambda g: torch.rand(1, NUM_TAU, generator=g)}
    return tuple(
        draws[name](torch.Generator().manual_seed(seed)) for name in cls.export_extra_inputs
    )


def wrapper_action(agent, obs, mode: ExplorationType = ExplorationType.DETERMINISTIC):
    """The live ``PolicyWrapper``'s action on a float32 observation with a bool mask, its random
    stream restarted (so IQN's taus / a Gaussian policy's noise are the first draws of
    ``seed``)."""
    policy = agent.policy
    policy.set_seed(policy.seed)
    td = TensorDict(
        {
            ("agents", "self_state"): obs[0].float(),
            ("agents", "objects"): obs[1].float(),
            ("agents", "objects_mask"): obs[2] > 0.5,
        },
        batch_size=[1],
    )
    with set_exploration_type(mode):
        return policy(td).get(("agents", "action"))


# The outputs of the paper's agents' planner files at batch 1 (other agents: their live network's)
C7_OUTPUT_SHAPES = {
    "ac_iqn": [(1, 2)], "ddpg": [(1, 2)], "sac": [(1, 2), (1, 2)],
    "iqn": [(1, NUM_TAU, 25)], "dqn": [(1, 25)], "rainbow": [(1, 25, 51)],
}  # fmt: skip
SAC_LOG_SIGMA_BOUNDS = (-20.0, 2.0)  # SAC's actor clamps log sigma


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_torchscript_matches_live_network_and_policy(name: str, tmp_path: Path) -> None:
    cls = agent_class(name)
    agent = make_agent(name, seed=SEED)
    before = {k: v.clone() for k, v in agent.state_dict().items()}
    training = [m.training for m in agent.modules()]

    path = export_torchscript(agent, tmp_path / f"traced_{name}_model.pt")

    # the live agent is untouched: same values, float32, same modes
    after = agent.state_dict()
    assert before.keys() == after.keys()
    for key, value in before.items():
        assert after[key].dtype == value.dtype and torch.equal(after[key], value), key
    assert [m.training for m in agent.modules()] == training

    module = jit_load(path)
    info = export_metadata(path)
    assert info["agent"] == name and info["inputs"] == list(input_names(name))
    assert info["outputs"] == list(cls.export_outputs)
    options = rule_options(cls, info)  # what the file tells the action rule (Rainbow's support)
    network32 = agent.export_network()
    network64 = copy.deepcopy(network32).double()
    generator = torch.Generator().manual_seed(SEED)
    for count in OBJECT_COUNTS:
        obs = observation(count, generator)
        extra32 = policy_extra_inputs(cls, agent.policy.seed)
        extra64 = tuple(x.double() for x in extra32)
        with torch.no_grad():
            out = module(obs, *extra64)  # the planner's call
            ref64 = as_tuple(network64(obs, *extra64))
            ref32 = as_tuple(network32(tuple(x.float() for x in obs), *extra32))
        outs = as_tuple(out)

        # one output bare, several as a tuple, named by export_outputs; float64, batch 1
        assert isinstance(out, tuple) == (len(cls.export_outputs) > 1)
        assert len(outs) == len(cls.export_outputs)
        assert all(o.dtype == F64 and o.shape[0] == 1 for o in outs)
        if name in C7_OUTPUT_SHAPES:
            assert [tuple(o.shape) for o in outs] == C7_OUTPUT_SHAPES[name]
        named = dict(zip(cls.export_outputs, outs, strict=True))
        if "action" in named:  # a deterministic actor's squashed action
            assert (named["action"].abs() < 1).all()
        if "probabilities" in named:  # a categorical return distribution per action
            torch.testing.assert_close(named["probabilities"].sum(-1), torch.ones(1, 25, dtype=F64))
        if name == "sac":
            low, high = SAC_LOG_SIGMA_BOUNDS
            assert ((named["log_sigma"] >= low) & (named["log_sigma"] <= high)).all()

        # equal to the live network in float64, close to it in float32
        for o, r64, r32 in zip(outs, ref64, ref32, strict=True):
            torch.testing.assert_close(o, r64, rtol=1e-12, atol=1e-10)
            scale = 1.0 + r64.abs().max().item()
            torch.testing.assert_close(o, r32.double(), rtol=1e-5, atol=1e-5 * scale)

        # the planner's action is the live policy's deterministic action
        action = planner_action(name, out, **options)
        live = wrapper_action(agent, obs)
        if cls.action_kind == "continuous":
            assert action.shape == (1, 2) and action.dtype == F64
            torch.testing.assert_close(action, live.double(), rtol=0, atol=1e-5)
            torch.testing.assert_close(
                planner_action(name, out, thrust_rate=True), 1000 * action, rtol=0, atol=0
            )
        else:
            # the best two actions of these observations differ by > 0.02 for every discrete
            # agent, far beyond float32 rounding: the choices are equal
            assert action.shape == (1,) and action.dtype == torch.int64
            assert torch.equal(action, live)

        if "noise" in rule_options(cls, {"noise": None}):
            # a sampling planner: its rule on standard-normal draws is the wrapper's exploring
            # action on the first draws of its stream
            noise = torch.randn(1, 2, generator=torch.Generator().manual_seed(agent.policy.seed))
            if cls.epsilon_greedy:
                agent.policy.set_epsilon(0.0)
            sampled = wrapper_action(agent, obs, ExplorationType.RANDOM)
            drawn = planner_action(name, out, noise=noise.double(), **options)
            torch.testing.assert_close(drawn, sampled.double(), rtol=0, atol=1e-5)
            assert not torch.allclose(drawn, action, rtol=0, atol=1e-3)  # the noise mattered


def test_a_risk_averse_iqn_planner_acts_at_its_level(tmp_path: Path) -> None:
    """IQN with ``cvar_alpha=0.25``: the file's quantiles at the caller's ``taus`` are the
    network's at ``0.25 * taus`` (the node draws U(0, 1) and does not scale), so the node's
    argmax of the mean is the live policy's CVaR action; the default file leaves them as drawn."""
    agent = make_agent("iqn", seed=SEED, cvar_alpha=0.25)
    module = jit_load(export_torchscript(agent, tmp_path / "traced_IQN_model.pt"))
    network64 = copy.deepcopy(agent.network).double()
    generator = torch.Generator().manual_seed(SEED)
    for count in OBJECT_COUNTS:
        obs = observation(count, generator)
        (taus,) = policy_extra_inputs(agent_class("iqn"), agent.policy.seed)
        with torch.no_grad():
            out = module(obs, taus.double())
            torch.testing.assert_close(out, network64(*obs, 0.25 * taus.double()), rtol=1e-12,
                                       atol=1e-10)  # fmt: skip
            assert not torch.allclose(out, network64(*obs, taus.double()))
        assert torch.equal(planner_action("iqn", out), wrapper_action(agent, obs))


def test_rainbow_exports_its_mean_weights(tmp_path: Path) -> None:
    """Rainbow's file holds the noisy layers' mean weights: deterministic, not a noisy output."""
    agent = make_agent("rainbow", seed=SEED)
    module = jit_load(export_torchscript(agent, tmp_path / "traced_Rainbow_model.pt"))
    network64 = copy.deepcopy(agent.network).double()
    obs = observation(3, torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        first, again = module(obs), module(obs)
        mean = network64(*obs, noise=False).exp()
        noisy = network64(*obs, noise=True).exp()
    assert torch.equal(first, again)
    torch.testing.assert_close(first, mean, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(noisy, first, rtol=0, atol=1e-12)


def test_planner_action_rules() -> None:
    q = torch.tensor([[0.0, 3.0, 1.0] + [0.0] * 22], dtype=F64)
    assert planner_action("dqn", q).tolist() == [1]
    quantiles = torch.zeros(1, NUM_TAU, 25, dtype=F64)
    quantiles[0, :, 4] = torch.linspace(-1, 3, NUM_TAU, dtype=F64)  # mean 1 > 0
    quantiles[0, 0, 7] = 10.0  # mean 10 / 32 < 1: one large quantile does not win
    assert planner_action("IQN", quantiles).tolist() == [4]
    probs = torch.full((1, 25, 51), 1 / 51, dtype=F64)
    probs[0, 9] = 0.0
    probs[0, 9, -1] = 1.0  # all mass at v_max
    assert planner_action("Rainbow", probs).tolist() == [9]
    assert planner_action("AC_IQN", torch.tensor([[0.5, -0.25]]), thrust_rate=True).tolist() == [
        [500.0, -250.0]
    ]
    mu, log_sigma = torch.tensor([[1.0, -1.0]]), torch.tensor([[0.0, math.log(2.0)]])
    torch.testing.assert_close(planner_action("sac", (mu, log_sigma)), torch.tensor([[0.5, -0.5]]))
    torch.testing.assert_close(
        planner_action("sac", (mu, log_sigma), noise=torch.tensor([[-1.0, 1.0]])),
        torch.tensor([[0.0, 0.5]]),
    )
    with pytest.raises(ValueError, match="unknown agent type"):
        planner_action("ppo", q)


def test_elementary_atan_is_float64_exact() -> None:
    """The ONNX actors' squash: Cephes atan from basic operations, within 1 ulp of torch.atan."""
    x = torch.cat(
        (torch.linspace(-60, 60, 20001, dtype=F64),
         torch.tensor([0.0, 1e-300, 0.66, 2.414213562373095, 1e8, 1e300, math.inf], dtype=F64)),
    )  # fmt: skip
    x = torch.cat((x, -x))
    torch.testing.assert_close(atan_elementary(x), torch.atan(x), rtol=4e-16, atol=1e-300)


def batch_of(rows: int, name: str, seed: int) -> tuple[torch.Tensor, ...]:
    """``rows`` observations (0 to 5 objects present, cycling) and the agent's extra inputs
    (``taus`` ``[rows, 32]``), float64, flat."""
    generator = torch.Generator().manual_seed(seed)
    parts = [observation(i % 6, generator) for i in range(rows)]
    flat = tuple(torch.cat(p) for p in zip(*parts, strict=True))
    extra = [
        torch.cat([EXTRA_INPUT_EXAMPLES[n](generator) for _ in range(rows)])
        for n in agent_class(name).export_extra_inputs
    ]
    return (*flat, *extra)


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_onnx_round_trip(name: str, tmp_path: Path) -> None:
    """The ONNX model takes the planner's inputs by name at any batch, gives the TorchScript
    file's outputs to 1e-9 (float64) and carries the same record."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    cls = agent_class(name)
    agent = make_agent(name, seed=SEED)
    traced_path = export_torchscript(agent, tmp_path / "model.pt")
    traced = jit_load(traced_path)
    path = export_onnx(agent, tmp_path / f"{cls.model_type}_model.onnx")
    assert export_metadata(path) == export_metadata(traced_path) == metadata(agent)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == list(input_names(name))
    assert [o.name for o in session.get_outputs()] == list(cls.export_outputs)
    for rows in (1, 7):
        inputs = batch_of(rows, name, SEED + rows)
        feeds = {n: x.numpy() for n, x in zip(input_names(name), inputs, strict=True)}
        results = session.run(None, feeds)  # a list, one array per output
        with torch.no_grad():
            expected = as_tuple(traced(*planner_inputs(inputs)))
        for got, want in zip(results, expected, strict=True):
            assert got.dtype == want.numpy().dtype and got.shape[0] == rows
            torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-9, atol=1e-9)
        # the action rules take ONNX Runtime's list as they take the TorchScript tuple
        got_action = planner_action(name, results)
        want_action = planner_action(name, expected)
        torch.testing.assert_close(got_action, want_action, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", pt2_agents())
def test_pt2_package_takes_separate_float64_inputs_at_any_batch(name: str, exports) -> None:
    """The AOTInductor package takes the planner's inputs as separate float64 tensors with one
    dynamic batch (1 and 7 rows), returns the TorchScript file's outputs (one bare, several as
    a tuple) to 1e-9 and carries its record beside AOTInductor's own metadata."""
    cls = agent_class(name)
    package = torch._inductor.aoti_load_package(str(exports(name, "pt2")))
    traced_path = exports(name, "torchscript")
    traced = jit_load(traced_path)
    record = package.get_metadata()
    assert json.loads(record["marinenav_export.json"]) == export_metadata(traced_path)
    assert export_metadata(exports(name, "pt2")) == export_metadata(traced_path)
    assert "AOTI_CPU_ISA" in record  # the instruction set the code was compiled for
    assert export_metadata(traced_path)["agent"] == name
    for rows in (1, 7):
        inputs = batch_of(rows, name, EXPORT_SEED + rows)
        with torch.no_grad():
            out = package(*inputs)
            expected = traced(*planner_inputs(inputs))
        assert isinstance(out, tuple) == isinstance(expected, tuple)
        assert len(as_tuple(out)) == len(cls.export_outputs)
        for got, want in zip(as_tuple(out), as_tuple(expected), strict=True):
            assert got.dtype == F64 and got.shape == want.shape and got.shape[0] == rows
            torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_files_are_written_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A planner file appears complete or not at all: an export that fails half way leaves the
    previous file as it was and no temporary file; one that succeeds leaves only the file."""
    path = tmp_path / "planners" / planner_file_name("dqn")
    export_torchscript(make_agent("dqn", seed=SEED), path)
    before = path.read_bytes()

    def half_written(temporary: Path) -> None:
        temporary.write_bytes(before[: len(before) // 2])
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_in_place(path, half_written)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    export_torchscript(make_agent("dqn", seed=SEED + 1), path)  # over the existing file
    assert path.read_bytes() != before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_onnx_needs_the_onnx_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with pytest.raises(ImportError, match="pip install onnx"):
        export_onnx(make_agent("dqn", seed=SEED), tmp_path / "m.onnx")


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    """A tiny trained DQN run directory."""
    from marinenav.training.trainer import Trainer
    from tests.run_utils import tiny_config

    run = tmp_path_factory.mktemp("trained") / "run"
    Trainer(tiny_config("agent=dqn"), run).train()
    return run


def test_command_line_exports_a_trained_run(trained_run: Path, tmp_path: Path) -> None:
    from marinenav.training.checkpoint import load_agent

    run = trained_run
    out = tmp_path / "exported"
    with_onnx = importlib.util.find_spec("onnx") is not None
    result = python_program("-m marinenav.export", str(run), "--out", str(out),
                            *(["--onnx"] if with_onnx else []))  # fmt: skip
    assert result.returncode == 0, result.stderr
    path = out / "traced_DQN_model.pt"  # the original's file name
    assert str(path) in result.stdout.splitlines()
    assert with_onnx == (out / "DQN_model.onnx").is_file()

    agent, _ = load_agent(run)
    obs = observation(2, torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        torch.testing.assert_close(
            jit_load(path)(obs), copy.deepcopy(agent.network).double()(*obs),
            rtol=1e-12, atol=1e-10,
        )  # fmt: skip


def test_command_line_writes_the_formats_asked_for(trained_run: Path, tmp_path: Path,
                                                  capsys) -> None:  # fmt: skip
    """``--format`` names the formats (each written once, in order; ``--onnx`` adds ONNX); an
    unknown format is refused before anything is written."""
    pytest.importorskip("onnx")
    out = tmp_path / "only_onnx"
    assert main([str(trained_run), "--out", str(out), "--format", "onnx"]) == 0
    # the last checkpoint, then the best evaluated agent (best/)
    assert capsys.readouterr().out.splitlines() == [
        str(out / "DQN_model.onnx"), str(out / "best" / "DQN_model.onnx")
    ]  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == ["DQN_model.onnx", "best"]
    both = tmp_path / "both"
    assert main([str(trained_run), "--out", str(both), "--format", "onnx", "torchscript",
                 "--onnx"]) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines() == [
        str(both / "DQN_model.onnx"), str(both / "traced_DQN_model.pt"),
        str(both / "best" / "DQN_model.onnx"), str(both / "best" / "traced_DQN_model.pt"),
    ]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main([str(trained_run), "--out", str(tmp_path / "none"), "--format", "tflite"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'tflite'" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
    with pytest.raises(SystemExit) as exit_info:  # a level outside (0, 1], before any work
        main([str(trained_run), "--out", str(tmp_path / "none"), "--cvar", "1.5"])
    assert exit_info.value.code == 2
    assert "argument --cvar: cvar must be in (0, 1], got 1.5" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_command_line_refuses_pt2_without_a_compiler(
    trained_run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a C++ compiler AOTInductor cannot build a package: one line, nothing written."""
    from torch._inductor import cpp_builder
    from torch._inductor.exc import InvalidCxxCompiler

    def no_compiler() -> str:
        raise InvalidCxxCompiler()

    monkeypatch.setattr(cpp_builder, "get_cpp_compiler", no_compiler)
    with pytest.raises(SystemExit) as exit_info:
        main([str(trained_run), "--out", str(tmp_path / "out"), "--format", "pt2"])
    assert exit_info.value.code == 2
    assert "--format pt2 needs a C++ compiler for AOTInductor" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_command_line_writes_a_pt2_package(trained_run: Path, tmp_path: Path, capsys) -> None:
    """``--format pt2`` compiles the run's agent into ``DQN_model.pt2``, which acts as the
    TorchScript file does."""
    from marinenav.planner import planner_policy

    assert main([str(trained_run), "--out", str(tmp_path), "--format", "pt2", "torchscript"]) == 0
    paths = [Path(line) for line in capsys.readouterr().out.splitlines()][:2]  # then best/'s
    assert paths == [tmp_path / export_file_name("dqn", "pt2"), tmp_path / "traced_DQN_model.pt"]
    state = batch_of(9, "dqn", SEED)
    actions = [planner_policy(path).act(*state) for path in paths]
    assert torch.equal(*actions)


def test_command_line_rejects_a_missing_run(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path)])  # a directory without checkpoint.pt
    assert exit_info.value.code == 2
    assert "no checkpoint.pt" in capsys.readouterr().err


def test_the_paper_agents_files_have_the_originals_names() -> None:
    """The original C++ planner loads ``traced_<model_type>_model.pt`` files."""
    originals = {"ac_iqn": "traced_AC_IQN_model.pt", "ddpg": "traced_DDPG_model.pt",
                 "sac": "traced_SAC_model.pt", "iqn": "traced_IQN_model.pt",
                 "dqn": "traced_DQN_model.pt", "rainbow": "traced_Rainbow_model.pt"}  # fmt: skip
    assert {name: planner_file_name(name) for name in originals} == originals


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_export_takes_the_planners_tuple_at_any_batch(name: str, tmp_path: Path) -> None:
    """The C++ planner calls ``forward({tensorTuple})`` (IQN: ``forward({tensorTuple, taus})``) in
    float64; a file traced at batch 1 answers batch 1 and batch N row by row alike, and three
    loose tensors are refused as by the original's files."""
    cls = agent_class(name)
    agent = make_agent(name, seed=SEED)
    path = export_torchscript(agent, tmp_path / planner_file_name(name))
    assert path.name == f"traced_{cls.model_type}_model.pt"
    module = jit_load(path)
    generator = torch.Generator().manual_seed(SEED)
    rows = [observation(count, generator) for count in (0, 1, 3, 5, 2)]
    batch = tuple(torch.cat(parts) for parts in zip(*rows, strict=True))
    extra = tuple(
        torch.cat([EXTRA_INPUT_EXAMPLES[n](generator) for _ in rows])
        for n in cls.export_extra_inputs
    )
    with torch.no_grad():
        together = as_tuple(module(batch, *extra))
        assert len(together) == len(cls.export_outputs)
        for i, row in enumerate(rows):
            alone = as_tuple(module(row, *(t[i : i + 1] for t in extra)))
            for a, b in zip(alone, together, strict=True):
                assert a.dtype == F64
                torch.testing.assert_close(a, b[i : i + 1], rtol=1e-12, atol=1e-12)
        with pytest.raises(RuntimeError, match=r"Tensor, Tensor, Tensor\) x"):
            module(*batch, *extra)


def test_command_line_refuses_an_out_that_is_a_file_or_under_one(tmp_path: Path, capsys) -> None:
    """``--out`` naming a file, or a path under a file, is refused in one line naming
    ``--out`` (exit 2, no traceback) before anything is loaded or written; the file is kept."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(b"not read: the refusal comes first")
    target = tmp_path / "taken.txt"
    target.write_text("keep me")
    for out, expected in (
        (target, f"error: --out {target} is a file, not a directory"),
        (target / "sub" / "dir",
         f"error: --out {target / 'sub' / 'dir'} is under {target}, which is a file, not a "
         "directory"),
    ):  # fmt: skip
        with pytest.raises(SystemExit) as exit_info:
            main([str(run), "--out", str(out)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.splitlines()[-1] == f"python -m marinenav.export: {expected}"
        assert "Traceback" not in err
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "taken.txt"]


# In a fresh interpreter: import what torch.compile imports (inductor's pre-grad passes, which
# import torch/utils/mkldnn.py), record its DeprecationWarnings, then re-raise each under the
# pytest configuration's filters with every other DeprecationWarning an error.
WARNING_CHECK = """
import json, sys, tomllib, warnings
from _pytest.config import parse_warning_filter
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import torch._inductor.fx_passes.pre_grad  # noqa: F401
scripted = [w for w in caught if "torch.jit.script_method" in str(w.message)]
config = tomllib.load(open("pyproject.toml", "rb"))["tool"]["pytest"]["ini_options"]
escaped = []
with warnings.catch_warnings():
    warnings.simplefilter("error", DeprecationWarning)
    for line in config["filterwarnings"]:
        warnings.filterwarnings(*parse_warning_filter(line, escape=False))
    for w in scripted:
        try:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        except DeprecationWarning as error:
            escaped.append(str(error))
    try:
        warnings.warn("`torch.jit.trace` is deprecated.", DeprecationWarning)
        other = "not an error"
    except DeprecationWarning:
        other = "error"
print(json.dumps({"scripted": len(scripted), "escaped": escaped, "other": other}))
"""


def test_the_test_run_filters_torchs_script_method_warnings_and_only_those() -> None:
    """The ``torch.jit.script_method is deprecated`` warnings (14 with torch 2.13)
    come from torch's own mkldnn module when torch.compile imports it; pyproject's pytest
    filters silence exactly that message, not other deprecations."""
    result = subprocess.run(
        [sys.executable, "-c", WARNING_CHECK], cwd=ROOT, capture_output=True, text=True,
        timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["scripted"] >= 1  # torch still warns: the filter has something to do
    assert report["escaped"] == []
    assert report["other"] == "error"  # another deprecation still surfaces


def test_export_and_load_raise_no_deprecation_warning(tmp_path: Path) -> None:
    """Our own TorchScript calls (trace, save, load) are scoped: exporting a planner and
    reading its record warn nothing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = export_torchscript(make_agent("dqn", seed=SEED), tmp_path / "traced_DQN_model.pt")
        assert export_metadata(path)["agent"] == "dqn"
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == []
