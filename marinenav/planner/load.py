"""Planner files as batched policies: the original's trained files and our exports alike.

A *planner file* is a float64 TorchScript module in the calling convention of the original's C++
planner (docs/migrating.md, "The node's call, from C++"; :mod:`marinenav.planner.convention`):
``forward((self_state [N, 7], objects [N, 5, 5], mask [N, 5]), *extra)`` with the agent's extra
inputs (quantile fractions ``taus [N, 32]`` for an implicit quantile network). The original authors'
trained planners (``traced_AC_IQN_model.pt``, ...) and the files :mod:`marinenav.planner.export`
writes load through the one function :func:`load_planner`, and :class:`PlannerPolicy` turns either
into a TorchRL policy that acts on ``MarineNavEnv`` observations of any batch shape with the
planner's own action rule: the agent class's ``planner_action`` (``marinenav.agents``; e.g. the
actor's output, an argmax of action values, the mean of quantiles, ``sum_z z p`` on the support
recorded in the file's metadata).

Our exports in the other formats load the same way, by their suffix: an AOTInductor package
(``.pt2``, :class:`PackagePlanner`) and an ONNX model (``.onnx``, :class:`OnnxPlanner`, run by
ONNX Runtime); each is wrapped to be called as the TorchScript module is, so
:class:`PlannerPolicy` and everything above it do not tell them apart.

Two choices make a planner deterministic for exact comparisons: ``taus="midpoints"`` feeds the
fixed fractions ``(i + 0.5) / 32`` instead of ``taus ~ U(0, 1)`` (the planner's rule), and
``sac_action="mean"`` takes a sampling policy's mean action ``(2/pi) atan(mu)`` instead of
``(2/pi) atan(mu + exp(log_sigma) n)``, ``n ~ N(0, 1)`` (the planner's rule, ``"sample"``).

The agent type comes from ``agent_type=`` when given, else from the metadata our exports carry,
else from the original's file name ``traced_<MODEL_TYPE>_model.pt``. A given type must agree
with the file: with its metadata record when it has one (an export renamed for the C++ planner,
e.g. TD3 as ``traced_DDPG_model.pt``, keeps its own type), else with a file name of that form;
and the module must take the type's inputs and give its outputs' shapes (one robot is run
through it), so that no planner is scored by another agent's action rule.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey

from marinenav.agents import agent_class
from marinenav.keys import ACTION_KEY, POLICY_IN_KEYS
from marinenav.planner.convention import (
    EXPORT_NUM_TAU,
    FORMATS,
    METADATA_FILE,
    agent_type_name,
    example_inputs,
    input_names,
    model_types,
    planner_inputs,
    rule_options,
)
from marinenav.policy.wrapper import check_cvar

#: Network rows per planner call (a robot is one row, or one per quantile fraction): the
#: activations of a block of 512 float64 rows (512 x 256 x 8 B = 1 MiB) stay in a core's L2
#: cache. A whole evaluation batch at once (750 robots x 32 fractions = 24,000 rows, 49 MB per
#: layer) runs from memory, 2-3x slower per row on the CPU (docs/benchmarks.md).
DEFAULT_BLOCK_ROWS = 512
_FILE_NAME = re.compile(r"traced_(?P<type>.+)_model\.pt$")
#: what :func:`load_planner` returns as the module: called ``module((self_state, objects,
#: mask), *extra)``, it returns one float64 tensor or a tuple of them
PlannerModule = Callable[..., Any]


class PlannerLoadError(ValueError):
    """A file that is not a usable planner (unreadable, or of unknown agent type)."""


class PackagePlanner:
    """An AOTInductor package (``.pt2``, :func:`marinenav.planner.export.export_pt2`) called as a
    TorchScript planner: ``planner((self_state [N, 7], objects [N, 5, 5], mask [N, 5]), *extra)``
    returns the outputs (float64 ``[N, ...]``; one bare, several as a tuple).

    The inputs are cast to contiguous float64 CPU tensors and their sizes after the batch are
    checked against ``input_shapes`` before the call: the compiled code reads its inputs at the
    shapes it was compiled for and does not check them itself (unless the environment sets
    ``AOTI_RUNTIME_CHECK_INPUTS=1``). ``RuntimeError`` for inputs of another number or shape."""

    def __init__(self, package: Any, input_shapes: tuple[tuple[int, ...], ...]) -> None:
        self.package = package
        self.input_shapes = input_shapes
        # flat tensors in, flat outputs out: the package's own __call__ flattens and rebuilds
        # its argument tree on every call (about 30 us, as long as a small network's forward)
        self._run = package.loader.run

    def __call__(self, state: tuple[torch.Tensor, ...], *extra: torch.Tensor) -> Any:
        inputs = [x.to("cpu", torch.float64).contiguous() for x in (*state, *extra)]
        shapes = tuple(tuple(x.shape[1:]) for x in inputs)
        if shapes != self.input_shapes or len({x.shape[0] for x in inputs}) != 1:
            raise RuntimeError(
                f"the package takes inputs [N, ...] of sizes {self.input_shapes} after one "
                f"batch N, got {tuple(tuple(x.shape) for x in inputs)}"
            )
        outputs = self._run(inputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


class OnnxPlanner:
    """An ONNX planner (:func:`marinenav.planner.export.export_onnx`, run by an ONNX Runtime CPU
    session) called as a TorchScript planner: ``planner((self_state, objects, mask), *extra)``
    feeds the tensors (as contiguous float64) to the session's inputs in order and returns its
    outputs as float64 tensors (one bare, several as a tuple). ONNX Runtime's errors (wrong
    shapes, wrong number of inputs) are raised as ``RuntimeError``."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.input_names = [node.name for node in session.get_inputs()]

    def __call__(self, state: tuple[torch.Tensor, ...], *extra: torch.Tensor) -> Any:
        inputs = (*state, *extra)
        if len(inputs) != len(self.input_names):
            raise RuntimeError(
                f"the ONNX planner takes {len(self.input_names)} inputs "
                f"({', '.join(self.input_names)}), got {len(inputs)}"
            )
        rows = inputs[0].shape[0]
        if rows == 0:  # ONNX Runtime cannot reshape an empty batch: run a zero row, keep none
            inputs = tuple(x.new_zeros(1, *x.shape[1:]) for x in inputs)
        feeds = {
            name: x.detach().to("cpu", torch.float64).contiguous().numpy()
            for name, x in zip(self.input_names, inputs, strict=True)
        }
        try:
            outputs = self.session.run(None, feeds)
        except Exception as error:  # ONNX Runtime's own exception classes (not RuntimeError)
            raise RuntimeError(f"ONNX Runtime: {error}") from error
        tensors = tuple(torch.from_numpy(output)[:rows] for output in outputs)
        return tensors[0] if len(tensors) == 1 else tensors


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _read_torchscript(path: Path) -> tuple[torch.jit.ScriptModule, dict[str, Any]]:
    extra = {METADATA_FILE: ""}
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    except (RuntimeError, ValueError) as error:
        raise PlannerLoadError(
            f"{path} is not a TorchScript planner ({_first_line(error)})"
        ) from None
    return module, (json.loads(extra[METADATA_FILE]) if extra[METADATA_FILE] else {})


def _read_package(path: Path) -> tuple[Any, dict[str, Any]]:
    try:
        package = torch._inductor.aoti_load_package(str(path))
    except Exception as error:  # zip, archive and dlopen errors of several classes
        raise PlannerLoadError(
            f"{path} is not an AOTInductor package ({_first_line(error)})"
        ) from None
    record = package.get_metadata().get(METADATA_FILE)
    return package, (json.loads(record) if record else {})


def _read_onnx(path: Path) -> tuple[Any, dict[str, Any]]:
    try:
        import onnxruntime
    except ImportError:
        raise PlannerLoadError(
            f"{path}: ONNX planners need ONNX Runtime: pip install onnxruntime"
        ) from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()  # the process's torch setting
    options.inter_op_num_threads = 1
    try:
        session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # ONNX Runtime's own exception classes
        raise PlannerLoadError(f"{path} is not an ONNX planner ({_first_line(error)})") from None
    fixed = [node.name for node in session.get_inputs() if not isinstance(node.shape[0], str)]
    if fixed:
        raise PlannerLoadError(
            f"{path} has a fixed batch size in {', '.join(fixed)} (an ONNX export from before "
            "the batch was dynamic): export it again"
        )
    record = session.get_modelmeta().custom_metadata_map.get(METADATA_FILE)
    return OnnxPlanner(session), (json.loads(record) if record else {})


def load_planner(
    path: str | Path, agent_type: str | None = None
) -> tuple[PlannerModule, str, dict[str, Any]]:
    """Load a planner file.

    Args:
        path: a TorchScript file (the original's ``traced_*_model.pt`` or our export), or one of
            our exports as an AOTInductor package (``.pt2``) or ONNX model (``.onnx``, needs
            ``onnxruntime``), told by the suffix.
        agent_type: a registered agent name or the original's spelling of it (``"AC_IQN"``);
            default from the file.

    Returns:
        ``(module, agent_type, metadata)``: the module called as the planner calls it, on the
        CPU (a frozen TorchScript module in eval mode, a :class:`PackagePlanner` or an
        :class:`OnnxPlanner`), the normalised agent name (registry name), and the file's
        ``marinenav_export.json`` record (``{}`` for the original's files).

    Raises:
        FileNotFoundError: no such file.
        PlannerLoadError: not a planner file of its suffix's format, its agent type cannot be
            told, or the file does not fit ``agent_type`` (its record, name, inputs or output
            shapes).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no planner file at {path}")
    if path.suffix == FORMATS["pt2"]:
        module, metadata = _read_package(path)
    elif path.suffix == FORMATS["onnx"]:
        module, metadata = _read_onnx(path)
    else:
        module, metadata = _read_torchscript(path)
    match = _FILE_NAME.search(path.name)
    # what the file says of itself: its record, else (the original's files) its name
    if "agent" in metadata:
        own_type, own_source = metadata["agent"], f"its {METADATA_FILE} record"
    else:
        own_type, own_source = (match.group("type") if match else None), "its file name"
    told_by = "agent_type / --agent-type" if agent_type is not None else own_source
    if agent_type is None:
        agent_type = own_type
    if agent_type is None:
        raise PlannerLoadError(
            f"cannot tell the agent type of {path}: name it traced_<TYPE>_model.pt "
            f"(TYPE one of {', '.join(model_types().values())}) or pass agent_type / --agent-type"
        )
    try:
        name = agent_type_name(agent_type)
    except ValueError as error:
        raise PlannerLoadError(f"{path}: {error}") from None
    misfit = f"{path} does not fit agent type {name} ({told_by}):"
    if own_type is not None:
        try:
            own_name = agent_type_name(own_type)
        except ValueError:  # a name like traced_mine_model.pt says nothing
            own_name = None
        if own_name is not None and own_name != name:
            raise PlannerLoadError(f"{misfit} {own_source} says {own_name}")
    if path.suffix == FORMATS["pt2"]:
        module = PackagePlanner(module, tuple(tuple(x.shape[1:]) for x in example_inputs(name)))
    check_planner_io(module, name, misfit)
    if isinstance(module, torch.jit.ScriptModule):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            # Constants folded, linear + ReLU fused: about 1.4x faster per row on the CPU, the
            # same outputs to round-off (3e-13 on the IQN planner).
            module = torch.jit.optimize_for_inference(torch.jit.freeze(module.eval()))
    return module, name, metadata


def _shapes_text(shapes: list[tuple[int | None, ...]]) -> str:
    """``(1, 2) and (1, 2)``; ``*`` for a size left to the file."""
    return " and ".join(f"({', '.join('*' if x is None else str(x) for x in s)})" for s in shapes)


def _fits(shape: tuple[int, ...], expected: tuple[int | None, ...]) -> bool:
    return len(shape) == len(expected) and all(
        e is None or e == x for x, e in zip(shape, expected, strict=True)
    )


def check_planner_io(module: PlannerModule, agent_type: str, misfit: str) -> None:
    """Run one robot (:func:`marinenav.planner.convention.example_inputs`) through ``module``
    with the inputs of ``agent_type`` and compare its outputs' shapes with the agent class's
    ``export_output_shapes`` (``[1, ...]``); raises :class:`PlannerLoadError` starting with
    ``misfit`` when the module does not take those inputs or gives other shapes. Load time only
    (one call on the CPU)."""
    try:
        with torch.no_grad():
            outputs = module(*planner_inputs(example_inputs(agent_type)))
    except RuntimeError:
        names = ", ".join(input_names(agent_type))
        message = f"{misfit} it does not take {agent_type}'s inputs ({names})"
        raise PlannerLoadError(message) from None
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    got = [tuple(output.shape) for output in outputs]
    expected = [(1, *shape) for shape in agent_class(agent_type).export_output_shapes()]
    if len(got) != len(expected) or not all(map(_fits, got, expected)):
        raise PlannerLoadError(
            f"{misfit} its outputs for one robot are {_shapes_text(got)}, {agent_type}'s are "
            f"{_shapes_text(expected)}"
        )


class PlannerPolicy(TensorDictModuleBase):
    """A planner file acting on ``MarineNavEnv`` observations (any batch shape).

    Args:
        module: the loaded planner (:func:`load_planner`: TorchScript, ``.pt2`` or ONNX).
        agent_type: its agent name (the agent class gives the extra inputs and the action
            rule).
        metadata: the file's export record; the entries the agent's action rule takes (its
            class's ``planner_options``) are passed to it (e.g. a categorical return
            distribution's support).
        sac_action: ``"sample"`` (the planner's rule) or ``"mean"``; only for action rules that
            take ``noise`` (sampling policies, e.g. SAC: ``"noise"`` in ``planner_options``).
        taus: ``"random"`` (the planner's rule) or ``"midpoints"``; only for planners with a
            ``taus`` input.
        cvar: the caller's CVaR level in (0, 1]: the fractions it feeds (random or midpoints)
            are scaled to ``[0, cvar]``, so a quantile planner acts on the mean of the worst
            ``cvar`` of its return distribution (the original's ``cvar`` parameter, which its
            node leaves at 1, the default); a categorical planner (Rainbow) acts on the lower
            ``cvar`` of its probabilities. Only for these two. A file exported with
            ``agent.cvar_alpha`` holds that level already; the two multiply.
        seed: seed of the policy's random stream (taus, then noise), drawn in flat batch
            order.
        in_keys: keys of ``(self_state [..., 7], objects [..., 5, 5], objects_mask [..., 5])``.
        out_key: the action: int64 ``[...]`` or ``[..., 2]`` in the observation's float dtype.
        block_rows: network rows per module call (a robot is ``taus`` rows for a quantile
            planner, else one): a large batch is run in consecutive blocks of robots so that
            the activations stay in cache. The random inputs are drawn for the whole batch
            first, so the stream and the actions do not depend on it.

    The module runs on the CPU in float64 (the file's precision): observations are moved and
    cast, actions cast and moved back to the observation's device.
    """

    def __init__(
        self,
        module: PlannerModule,
        agent_type: str,
        metadata: dict[str, Any] | None = None,
        *,
        sac_action: Literal["sample", "mean"] = "sample",
        taus: Literal["random", "midpoints"] = "random",
        cvar: float = 1.0,
        seed: int = 0,
        in_keys: tuple[NestedKey, ...] = POLICY_IN_KEYS,
        out_key: NestedKey = ACTION_KEY,
        block_rows: int = DEFAULT_BLOCK_ROWS,
    ) -> None:
        super().__init__()
        if block_rows < 1:
            raise ValueError(f"block_rows must be at least 1, got {block_rows}")
        if sac_action not in ("sample", "mean"):
            raise ValueError(f"sac_action must be 'sample' or 'mean', got {sac_action!r}")
        if taus not in ("random", "midpoints"):
            raise ValueError(f"taus must be 'random' or 'midpoints', got {taus!r}")
        self.module = module
        self.agent_type = agent_type_name(agent_type)
        self.agent_class = agent_class(self.agent_type)
        unknown = [name for name in self.agent_class.export_extra_inputs if name != "taus"]
        if unknown:
            raise ValueError(f"planner input {unknown[0]!r} of {self.agent_type} is not supported")
        check_cvar(cvar)
        # a quantile planner takes the level through its fractions, a categorical one's rule
        # as an option (Rainbow: the lower tail of its probabilities)
        takes_cvar = "cvar" in self.agent_class.planner_options
        if cvar != 1.0 and "taus" not in self.agent_class.export_extra_inputs and not takes_cvar:
            raise ValueError(f"cvar is for planners of a return distribution (IQN's quantiles, "
                             f"Rainbow's probabilities); {self.agent_type} has none")  # fmt: skip
        self.cvar = float(cvar)
        self.metadata = dict(metadata or {})
        self.action_options = rule_options(self.agent_class, self.metadata)
        if takes_cvar:
            self.action_options["cvar"] = self.cvar
        # a sampling rule gets standard-normal noise shaped like the first output
        self.sample_noise = sac_action == "sample" and "noise" in self.agent_class.planner_options
        self.sac_action = sac_action
        self.taus = taus
        rows_per_robot = EXPORT_NUM_TAU if self.agent_class.export_extra_inputs else 1
        self.block_robots = max(1, block_rows // rows_per_robot)
        self.in_keys = list(in_keys)
        self.out_keys = [out_key]
        self.generator = torch.Generator().manual_seed(seed)
        self.seed = seed
        midpoints = (torch.arange(EXPORT_NUM_TAU, dtype=torch.float64) + 0.5) / EXPORT_NUM_TAU
        self.register_buffer("_midpoints", midpoints.unsqueeze(0), persistent=False)

    @property
    def action_kind(self) -> Literal["discrete", "continuous"]:
        return self.agent_class.action_kind

    def set_seed(self, seed: int) -> None:
        """Restart the random stream (taus, noise)."""
        self.seed = seed
        self.generator.manual_seed(seed)

    @torch.no_grad()
    def act(
        self, self_state: torch.Tensor, objects: torch.Tensor, objects_mask: torch.Tensor
    ) -> torch.Tensor:
        """Actions of a flat batch: ``self_state [N, 7]``, ``objects [N, 5, 5]``,
        ``objects_mask [N, 5]`` (bool or 0/1) -> int64 ``[N]`` or float64 ``[N, 2]`` (CPU)."""
        f64 = torch.float64
        state = (self_state.to("cpu", f64), objects.to("cpu", f64), objects_mask.to("cpu", f64))
        n = state[0].shape[0]
        extra = ()
        if self.agent_class.export_extra_inputs:  # taus [N, 32]
            if self.taus == "random":
                taus = torch.rand(n, EXPORT_NUM_TAU, generator=self.generator, dtype=f64)
            else:
                taus = self._midpoints.expand(n, EXPORT_NUM_TAU)
            extra = (taus * self.cvar,)  # exact at the default 1
        outputs = self._blocked_forward(state, extra)
        options = self.action_options
        if self.sample_noise:
            first = outputs[0] if isinstance(outputs, tuple) else outputs
            noise = torch.randn(first.shape, generator=self.generator, dtype=f64)
            options = {**options, "noise": noise}
        return self.agent_class.planner_action(outputs, **options)

    def _blocked_forward(
        self, state: tuple[torch.Tensor, ...], extra: tuple[torch.Tensor, ...]
    ) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """The module on consecutive blocks of ``self.block_robots`` robots, outputs concatenated
        (no row depends on another, so the result is one call's on the whole batch: bit for bit
        on the CPUs measured, to rounding wherever a matrix-multiply kernel rounds by shape)."""
        n = state[0].shape[0]
        if n <= self.block_robots:
            return self.module(state, *extra)
        pieces = zip(*(part.split(self.block_robots) for part in (*state, *extra)), strict=True)
        k = len(state)
        blocks = [self.module(piece[:k], *piece[k:]) for piece in pieces]
        if isinstance(blocks[0], tuple):
            return tuple(torch.cat(parts) for parts in zip(*blocks, strict=True))
        return torch.cat(blocks)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        self_state = tensordict.get(self.in_keys[0])
        objects = tensordict.get(self.in_keys[1])
        objects_mask = tensordict.get(self.in_keys[2])
        batch = self_state.shape[:-1]
        action = self.act(
            self_state.reshape(-1, self_state.shape[-1]),
            objects.reshape(-1, *objects.shape[-2:]),
            objects_mask.reshape(-1, objects_mask.shape[-1]),
        )
        if self.action_kind == "continuous":
            action = action.to(self_state.dtype)
        action = action.to(self_state.device).reshape(*batch, *action.shape[1:])
        tensordict.set(self.out_keys[0], action)
        return tensordict


def planner_policy(path: str | Path, agent_type: str | None = None, **kwargs: Any) -> PlannerPolicy:
    """:func:`load_planner` then :class:`PlannerPolicy` (keyword arguments go to it)."""
    module, name, metadata = load_planner(path, agent_type)
    return PlannerPolicy(module, name, metadata, **kwargs)
