"""The original's C++ planner node's call, from C++: ``cpp/planner_call`` loads a
planner file with libtorch and calls it as the node's ``RL_agent::computeAction`` does (one robot
at a time, ``model.forward({std::tuple(self_state, objects, mask)})`` in float64, ``taus`` after
the tuple for IQN, SAC's ``(mu, log_std)`` tuple, Rainbow's categorical support), and its outputs
and actions are compared with the Python loader's (:mod:`marinenav.planner`) on the same inputs,
for the original's planner files (``tests/data/pretrained/``) and our export of every agent.
``planner_call_pt2`` does the same with our AOTInductor packages (``.pt2``) through
``torch::inductor::AOTIModelPackageLoader``, checked also against the TorchScript export of the
same agent (outputs to 1e-9); the comparison is shown to catch wrong callers.

The programs are built once per session with CMake against the libtorch that the torch wheel
ships (``torch.utils.cmake_prefix_path``), in pytest's cache directory (``.pytest_cache/d/``;
CMake rebuilds them when the source changes). The tests are skipped, with the reason, where no
C++ compiler or CMake is found or the wheel has no usable libtorch CMake config; a compile error
fails them."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from filelock import FileLock

from marinenav.agents import AGENT_NAMES, agent_class, make_agent
from marinenav.planner import PlannerPolicy, load_planner
from marinenav.planner.convention import (
    EXPORT_NUM_TAU,
    planner_action,
    rule_options,
)
from marinenav.planner.export import export_torchscript
from marinenav.sim.constants import ROBOT_DEFAULTS
from tests.agent_utils import planner_observation
from tests.export_utils import pt2_agents

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "cpp" / "planner_call"
PRETRAINED = Path(__file__).parent / "data" / "pretrained"
F64 = torch.float64
NODE_TYPES = ("AC-IQN", "IQN", "DDPG", "DQN", "SAC", "Rainbow")  # the node's agent_type values
NODE_SUPPORT = (-1.0, 1.0, 51)  # the node's Rainbow support: linspace(-1, 1, 51)
NUM_ROBOTS = 6  # observations per file, each called twice (random and deterministic extras)
TOLERANCE = {"rtol": 1e-12, "atol": 1e-12}  # float64 outputs: the same network, other kernels
FORMAT_TOLERANCE = {"rtol": 1e-9, "atol": 1e-9}  # a .pt2 package against the TorchScript file
# the package checks the sizes, strides and dtypes of what the caller passes before each call
CHECKED_INPUTS = {**os.environ, "AOTI_RUNTIME_CHECK_INPUTS": "1"}


# --- building the program -----------------------------------------------------------------------


def _compiler() -> str | None:
    """The C++ compiler CMake would pick: ``$CXX``, else ``c++``, ``g++`` or ``clang++``."""
    if os.environ.get("CXX"):
        return shutil.which(os.environ["CXX"].split()[0])
    return next(filter(None, map(shutil.which, ("c++", "g++", "clang++"))), None)


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def cpp_build(request, tmp_path_factory) -> Path:
    """The configured CMake build directory of ``cpp/planner_call`` (once per session)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("no cmake on PATH: the C++ planner call is not built")
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C++ compiler found ($CXX, c++, g++, clang++): the C++ planner call is "
                    "not built")  # fmt: skip
    prefix = Path(torch.utils.cmake_prefix_path)
    if not (prefix / "Torch" / "TorchConfig.cmake").is_file():
        pytest.skip(f"the torch wheel has no libtorch CMake config ({prefix}/Torch/"
                    "TorchConfig.cmake): the C++ planner call is not built")  # fmt: skip
    # one build directory per torch and compiler, kept between sessions (incremental builds)
    key = hashlib.sha256(f"{torch.__version__} {prefix} {compiler}".encode()).hexdigest()[:12]
    cache = getattr(request.config, "cache", None)
    build = (
        cache.mkdir(f"planner_call-{key}") if cache is not None
        else tmp_path_factory.mktemp("planner_call")
    )  # fmt: skip
    with FileLock(str(build) + ".lock"):  # pytest-xdist workers share the build directory
        configure = _run([
            cmake, "-S", str(SOURCE), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
            f"-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_BUILD_TYPE=Release",
        ])  # fmt: skip
    if configure.returncode != 0:
        log = configure.stdout + configure.stderr
        # an error raised in libtorch's config files, or no config found: the wheel's, skipped;
        # any other configure error (our CMakeLists.txt) fails
        torch_config = re.search(
            r"CMake Error at \S*(?:Torch|Caffe2)\S*\.cmake:\d+.*?\n(.*?)\n"
            r"|configuration file provided by\s+\"Torch\"", log, re.DOTALL,
        )  # fmt: skip
        if torch_config:
            reason = " ".join((torch_config.group(1) or "no TorchConfig.cmake found").split())
            pytest.skip(f"CMake cannot use the wheel's libtorch config ({reason}): the C++ "
                        "planner call is not built")  # fmt: skip
        pytest.fail(f"cmake configure of {SOURCE} failed:\n{log}")
    return build


def build_program(build: Path, target: str) -> Path:
    """Build ``target`` of ``cpp/planner_call`` in ``build`` (incremental); a compile or link
    error fails the test."""
    start = time.perf_counter()
    with FileLock(str(build) + ".lock"):  # pytest-xdist workers share the build directory
        built = _run([shutil.which("cmake") or "cmake", "--build", str(build), "-j1",
                      "--target", target])  # fmt: skip
    if built.returncode != 0:  # our code does not compile or link: a failure, not a skip
        pytest.fail(f"building {target} of {SOURCE} failed:\n{built.stdout}{built.stderr}")
    program = build / target
    assert program.is_file(), f"the build wrote no {program}"
    sys.stderr.write(f"\n{target} built in {time.perf_counter() - start:.1f} s\n")
    return program


@pytest.fixture(scope="session")
def planner_call(cpp_build: Path) -> Path:
    """The built ``planner_call`` program (TorchScript)."""
    return build_program(cpp_build, "planner_call")


@pytest.fixture(scope="session")
def planner_call_pt2(cpp_build: Path) -> Path:
    """The built ``planner_call_pt2`` program (AOTInductor packages)."""
    return build_program(cpp_build, "planner_call_pt2")


# --- inputs and outputs -------------------------------------------------------------------------


@dataclass
class Call:
    """What ``planner_call`` printed for one robot (``planner_call_pt2`` also prints the
    package's record first: :attr:`record` of every call)."""

    outputs: list[torch.Tensor]  # each [1, ...] in the module's dtype
    action: torch.Tensor  # int64 [] or float64 [2]
    rate: tuple[float, float]  # the thrust change rates (N/s) the node applies
    record: dict[str, Any] | None = None  # the package's export record (planner_call_pt2)


def write_input(path: Path, flat: list[torch.Tensor]) -> None:
    """The program's input: ``N K M``, then per robot self_state, objects, mask, K taus and M
    noise values (``repr``: float64 round trip)."""
    n = flat[0].shape[0]
    taus, noise = (flat[3].shape[-1] if flat[3] is not None else 0,
                   flat[4].shape[-1] if flat[4] is not None else 0)  # fmt: skip
    lines = [f"{n} {taus} {noise}"]
    for r in range(n):
        row = [x[r].reshape(-1) for x in flat if x is not None]
        lines.append(" ".join(repr(v) for v in torch.cat(row).tolist()))
    path.write_text("\n".join(lines) + "\n")


def call_cpp(
    program: Path,
    model: Path,
    node_type: str,
    flat: list[torch.Tensor | None],
    tmp_path: Path,
    support: tuple[float, float, int] | None = None,
    env: dict[str, str] | None = None,
) -> list[Call]:
    """Run ``program`` (``planner_call`` or ``planner_call_pt2``) on the robots of
    ``flat = [self_state, objects, mask, taus | None, noise | None]`` and parse its output."""
    path = tmp_path / "input.txt"
    write_input(path, flat)
    args = [str(program), str(model), node_type, str(path)]
    if support is not None:
        args += [repr(float(support[0])), repr(float(support[1])), str(int(support[2]))]
    result = subprocess.run(args, capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, f"{program.name} {node_type} {model.name}: {result.stderr}"
    calls: dict[int, Call] = {}
    dtypes = {"Double": F64, "Float": torch.float32}
    record = None
    for line in result.stdout.splitlines():
        if line.startswith("record "):
            record = json.loads(line.removeprefix("record "))
            continue
        kind, robot, *rest = line.split()
        call = calls.setdefault(int(robot), Call([], torch.empty(0), (math.nan, math.nan)))
        if kind == "output":
            index, dtype, ndim = int(rest[0]), rest[1], int(rest[2])
            shape = [int(x) for x in rest[3 : 3 + ndim]]
            values = torch.tensor([float(x) for x in rest[3 + ndim :]], dtype=F64)
            assert index == len(call.outputs) and dtype in dtypes, line[:80]
            call.outputs.append(values.reshape(shape).to(dtypes[dtype]))
        elif kind == "action":
            values = [float(x) for x in rest]
            call.action = (torch.tensor(int(values[0])) if len(values) == 1
                           else torch.tensor(values, dtype=F64))  # fmt: skip
        elif kind == "rate":
            call.rate = (float(rest[0]), float(rest[1]))
        else:
            raise AssertionError(f"unexpected planner_call line {line[:80]!r}")
    assert sorted(calls) == list(range(flat[0].shape[0]))
    for call in calls.values():
        call.record = record
    return [calls[r] for r in range(len(calls))]


def node_type(name: str) -> str:
    """The node's ``agent_type`` that calls our ``name``'s export: its own where the node has it
    (``model_type``), else the node's type with the same outputs: one action (TD3 -> DDPG) or a
    Gaussian's ``(mu, log_sigma)`` (MAPPO, IPPO -> SAC)."""
    cls = agent_class(name)
    spelling = cls.model_type.replace("_", "-")
    if spelling in NODE_TYPES:
        return spelling
    by_outputs = {("action",): "DDPG", ("mu", "log_sigma"): "SAC"}
    if cls.action_kind == "continuous" and cls.export_outputs in by_outputs:
        return by_outputs[cls.export_outputs]
    raise AssertionError(f"{name}'s export ({cls.export_outputs}) fits none of the node's calls")


# --- the comparison -----------------------------------------------------------------------------


def node_rate(name: str, action: torch.Tensor) -> tuple[float, float]:
    """The thrust change rates (N/s) the node applies for ``action``: a continuous action as
    float32 times 1000, an index through the 5 x 5 table (left = index // 5, as the simulator)."""
    if agent_class(name).action_kind == "continuous":
        a = action.to(torch.float32) * torch.tensor(1000.0, dtype=torch.float32)
        return float(a[0]), float(a[1])
    left, right = divmod(int(action), 5)
    return (ROBOT_DEFAULTS["left_thrust_change"][left],
            ROBOT_DEFAULTS["right_thrust_change"][right])  # fmt: skip


def check_planner(
    program: Path,
    path: Path,
    node: str,
    tmp_path: Path,
    seed: int,
    reference: Path | None = None,
    cpp_inputs: Callable[[list[Any]], list[Any]] | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """``program`` on ``path`` against the Python loader for ``NUM_ROBOTS`` robots, each
    twice: (1) random taus / noise passed to both (outputs to 1e-12, the node's action rule on
    them equal: indices equal, continuous actions to 1e-12), (2) the deterministic extras
    (midpoint taus, zero noise) against :class:`PlannerPolicy`'s ``taus="midpoints"``,
    ``sac_action="mean"`` actions on a TensorDict batch with bool masks. With ``reference``
    (the same agent's TorchScript file) the program's outputs are also compared with that
    file's (to 1e-9) and a record it prints with the loader's. ``cpp_inputs`` changes what the
    program is given (a wrong caller: the check must then fail)."""
    module, name, metadata = load_planner(path)
    cls = agent_class(name)
    generator = torch.Generator().manual_seed(seed)
    state = planner_observation(NUM_ROBOTS, generator)
    needs_taus = "taus" in cls.export_extra_inputs
    samples = bool(rule_options(cls, {"noise": None}))  # a sampling rule: SAC's, PPO's
    taus = torch.rand(NUM_ROBOTS, EXPORT_NUM_TAU, generator=generator, dtype=F64)
    midpoints = ((torch.arange(EXPORT_NUM_TAU, dtype=F64) + 0.5) / EXPORT_NUM_TAU).expand_as(taus)
    noise = torch.randn(NUM_ROBOTS, 2, generator=generator, dtype=F64)
    # robots 0..N-1 with the random extras, N..2N-1 the same robots with the deterministic ones
    flat = [torch.cat((x, x)) for x in state]
    flat.append(torch.cat((taus, midpoints)) if needs_taus else None)
    flat.append(torch.cat((noise, torch.zeros_like(noise))) if samples else None)
    support = None
    if node == "Rainbow":
        support = (metadata["v_min"], metadata["v_max"], metadata["atoms"])
    given = cpp_inputs(list(flat)) if cpp_inputs is not None else flat
    calls = call_cpp(program, path, node, given, tmp_path, support, env)
    if calls[0].record is not None:
        assert calls[0].record == metadata, f"{path.name}: the record C++ reads"

    # (1) the loader's module on the batch, the planner's action rule on its outputs
    with torch.no_grad():
        extra = (flat[3],) if needs_taus else ()
        outputs = module(tuple(flat[:3]), *extra)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    options = rule_options(cls, metadata)
    if samples:
        options["noise"] = flat[4]
    actions = planner_action(name, outputs, **options)
    if reference is not None:
        traced, _, _ = load_planner(reference)
        with torch.no_grad():
            expected = traced(tuple(flat[:3]), *extra)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for r, call in enumerate(calls):
            for k, (cpp, py) in enumerate(zip(call.outputs, expected, strict=True)):
                torch.testing.assert_close(cpp, py[r : r + 1], **FORMAT_TOLERANCE,
                                           msg=lambda m, r=r, k=k: f"{path.name} robot {r} "
                                           f"output {k} against {reference.name}: {m}")  # fmt: skip
    for r, call in enumerate(calls):
        assert len(call.outputs) == len(outputs), f"{path.name}: outputs of robot {r}"
        for k, (cpp, py) in enumerate(zip(call.outputs, outputs, strict=True)):
            assert cpp.dtype == F64, f"{path.name} output {k} is {cpp.dtype}, not float64"
            torch.testing.assert_close(cpp, py[r : r + 1], **TOLERANCE,
                                       msg=lambda m, r=r, k=k: f"{path.name} robot {r} output "
                                       f"{k}: {m}")  # fmt: skip
        if cls.action_kind == "discrete":
            assert call.action.dtype == torch.int64 and call.action.dim() == 0
            assert int(call.action) == int(actions[r]), f"{path.name} robot {r}"
        else:
            torch.testing.assert_close(call.action, actions[r], **TOLERANCE)
        torch.testing.assert_close(call.rate, node_rate(name, call.action), rtol=1e-6, atol=0)

    # (2) the deterministic extras against the loader's policy
    policy = PlannerPolicy(module, name, metadata, taus="midpoints", sac_action="mean")
    deterministic = policy.act(state[0], state[1], state[2] > 0.5)
    cpp_actions = torch.stack([call.action for call in calls[NUM_ROBOTS:]])
    if cls.action_kind == "discrete":
        assert torch.equal(cpp_actions, deterministic), path.name
    else:
        torch.testing.assert_close(cpp_actions, deterministic, **TOLERANCE)


ORIGINAL_FILES = {"AC_IQN": "AC-IQN", "DDPG": "DDPG", "DQN": "DQN", "IQN": "IQN", "SAC": "SAC"}


@pytest.mark.parametrize("model_type", sorted(ORIGINAL_FILES))
def test_original_planner_files_from_cpp(planner_call: Path, model_type: str,
                                         tmp_path: Path) -> None:  # fmt: skip
    path = PRETRAINED / f"traced_{model_type}_model.pt"
    check_planner(planner_call, path, ORIGINAL_FILES[model_type], tmp_path, seed=11)


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_our_exports_from_cpp(planner_call: Path, name: str, exports, tmp_path: Path) -> None:
    check_planner(planner_call, exports(name, "torchscript"), node_type(name), tmp_path, seed=12)


@pytest.mark.parametrize("name", pt2_agents())
def test_our_pt2_packages_from_cpp(planner_call_pt2: Path, name: str, exports,
                                   tmp_path: Path) -> None:  # fmt: skip
    """The node's call through ``AOTIModelPackageLoader``: outputs equal to the Python loader's
    (1e-12) and the TorchScript file's (1e-9), the same actions, the record read in C++; the
    package checks what the caller passes (``AOTI_RUNTIME_CHECK_INPUTS=1``)."""
    check_planner(planner_call_pt2, exports(name, "pt2"), node_type(name), tmp_path, seed=12,
                  reference=exports(name, "torchscript"), env=CHECKED_INPUTS)  # fmt: skip


def _reversed_taus(flat: list[Any]) -> list[Any]:
    return [*flat[:3], flat[3].flip(-1), flat[4]]


def _negated_noise(flat: list[Any]) -> list[Any]:
    return [*flat[:4], -flat[4]]


def _no_objects_seen(flat: list[Any]) -> list[Any]:
    return [flat[0], flat[1], torch.zeros_like(flat[2]), *flat[3:]]


@pytest.mark.parametrize(
    ("name", "node", "cpp_inputs", "caught"),
    [
        ("iqn", "IQN", _reversed_taus, "robot 0 output 0"),  # fractions in another order
        ("sac", "SAC", _negated_noise, "not close"),  # other draws: other sampled actions
        ("sac", "SAC", _no_objects_seen, "robot 1 output 0"),  # masks dropped (robot 0: none)
        ("sac", "DDPG", None, "the node's DDPG call reads 1 output"),  # another agent's call
    ],
    ids=["taus-reversed", "noise-negated", "masks-zeroed", "sac-called-as-ddpg"],
)
def test_a_wrong_pt2_caller_fails_the_check(
    planner_call_pt2: Path, exports, tmp_path: Path, name: str, node: str, cpp_inputs, caught: str
) -> None:
    """The comparison above can fail: a C++ caller given other fractions, other noise or no
    objects than the Python side, or calling the package as another agent, is caught."""
    with pytest.raises(AssertionError, match=caught):
        check_planner(planner_call_pt2, exports(name, "pt2"), node, tmp_path, seed=12,
                      reference=exports(name, "torchscript"), cpp_inputs=cpp_inputs,
                      env=CHECKED_INPUTS)  # fmt: skip


def test_node_draws_and_rainbow_support(planner_call: Path, tmp_path: Path) -> None:
    """Without taus / noise in the input the program draws them as the node does (``torch::rand
    ({1, 32})``, ``torch::randn_like(mu)``): IQN's quantiles are ``[1, 32, 25]`` and its action
    an index; SAC's actions lie in (-1, 1). Rainbow without a support argument uses the node's
    ``linspace(-1, 1, 51)``, as ``planner_action(v_min=-1, v_max=1)`` does."""
    state = list(planner_observation(NUM_ROBOTS, torch.Generator().manual_seed(13)))
    for model_type in ("IQN", "SAC"):
        calls = call_cpp(planner_call, PRETRAINED / f"traced_{model_type}_model.pt", model_type,
                         [*state, None, None], tmp_path)  # fmt: skip
        for call in calls:
            if model_type == "IQN":
                assert call.outputs[0].shape == (1, EXPORT_NUM_TAU, 25)
                assert 0 <= int(call.action) < 25
            else:
                assert call.action.shape == (2,) and bool((call.action.abs() < 1).all())
    path = export_torchscript(make_agent("rainbow", seed=5), tmp_path / "traced_Rainbow_model.pt")
    calls = call_cpp(planner_call, path, "Rainbow", [*state, None, None], tmp_path)
    assert all(call.outputs[0].shape == (1, 25, NODE_SUPPORT[2]) for call in calls)
    probabilities = torch.cat([call.outputs[0] for call in calls])
    on_node_support = planner_action("rainbow", probabilities, v_min=-1.0, v_max=1.0)
    assert [int(call.action) for call in calls] == on_node_support.tolist()


def test_planner_call_refuses_an_unknown_agent_type(planner_call: Path, tmp_path: Path) -> None:
    path = tmp_path / "input.txt"
    write_input(path, [*planner_observation(1, torch.Generator().manual_seed(0)), None, None])
    result = _run([str(planner_call), str(PRETRAINED / "traced_DQN_model.pt"), "TD3", str(path)])
    assert result.returncode == 1 and "not one of the node's" in result.stderr
