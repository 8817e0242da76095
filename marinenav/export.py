"""Export a trained agent's acting network for the original's C++ (VRX) planner
(docs/migrating.md, "The node's call, from C++").

The exported module is a float64, CPU copy of the agent's :meth:`~marinenav.agents.base.Agent.
export_network` (the acting network in the planner's calling convention), traced with
``torch.jit.trace`` on batch-of-1 example inputs. The C++ planner calls
``model.forward({tensorTuple})``: one tuple argument

``x = (self_state (N, 7) f64, object_states (N, 5, 5) f64, object_masks (N, 5) f64)``

(objects nearest first, always zero-padded to 5, masks 0/1: the traced graph has no "no objects"
branch), any batch ``N``, followed by the agent's ``export_extra_inputs`` (quantile fractions
``taus (N, 32)`` f64 for an implicit quantile network). Files are named as the original's,
``traced_<model_type>_model.pt`` (:func:`planner_file_name`, :data:`MODEL_TYPES`), so the
original's planner loads them unchanged, and :mod:`marinenav.planner` loads ours and the
original's shipped files alike.

Everything agent-specific comes from the agent's class (``marinenav.agents.base``): the
outputs (``export_outputs``, documented with each agent's ``export_network``), the extra
inputs, the file-name spelling (``model_type``), extra metadata (``export_metadata()``) and the
planner's action rule (``planner_action``). :func:`planner_action` applies that rule to an
exported module's outputs, so an export can be checked against the live policy.

The file also carries ``marinenav_export.json`` (``torch.jit.load(path, _extra_files=...)``, or
:func:`export_metadata`): the agent name, input / output names and the agent's extra entries
(e.g. the support of a categorical return distribution).

ONNX has no tuple inputs: the ONNX export takes the three state tensors (and the extra inputs)
as separate inputs, batch 1; ONNX Runtime has no float64 ``Atan``, so every ``atan`` of the
exported graph is written with elementary operations
(:func:`marinenav.elementary_atan.atan_elementary`).

Command line: ``python -m marinenav.export RUN_DIR [--out DIR] [--onnx]`` writes
``traced_<model_type>_model.pt`` (and ``<model_type>_model.onnx``) for the run's trained agent.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from marinenav.agents import AGENT_NAMES, Agent, agent_class
from marinenav.elementary_atan import ElementaryAtan
from marinenav.sim.constants import MAX_OBJECTS, OBJECT_DIM, SELF_STATE_DIM

EXPORT_NUM_TAU = 32  # K of the quantile fractions input: the C++ planner hard-wires it
THRUST_RATE_SCALE = 1000.0  # the planner multiplies continuous actions by this (N/s)
METADATA_FILE = "marinenav_export.json"
STATE_INPUTS = ("self_state", "object_states", "object_masks")
# the planner inputs an agent may ask for after the state tuple: batch-1 float64 examples
EXTRA_INPUT_EXAMPLES = {
    "taus": lambda generator: torch.rand(1, EXPORT_NUM_TAU, generator=generator,
                                         dtype=torch.float64),
}  # fmt: skip
RECORD_KEYS = ("agent", "dtype", "inputs", "outputs", "spec", "num_tau")  # metadata of every file


@functools.cache
def _tables() -> dict[str, Any]:
    """The registry's export capabilities by agent name (imports every agent module once)."""
    classes = {name: agent_class(name) for name in AGENT_NAMES}
    return {
        "MODEL_TYPES": {name: cls.model_type for name, cls in classes.items()},
        "OUTPUT_NAMES": {name: cls.export_outputs for name, cls in classes.items()},
        "CONTINUOUS": tuple(n for n, cls in classes.items() if cls.action_kind == "continuous"),
    }


def model_types() -> dict[str, str]:
    """Agent name -> the original's file-name spelling (``model_type``) of every registered
    agent (also :data:`MODEL_TYPES`)."""
    return _tables()["MODEL_TYPES"]


def __getattr__(name: str) -> Any:
    """``MODEL_TYPES`` (see :func:`model_types`), ``OUTPUT_NAMES`` (agent name -> exported
    output names) and ``CONTINUOUS`` (the continuous agents), derived from the registry when
    first asked for (so that importing this module imports no agent)."""
    if name in ("MODEL_TYPES", "OUTPUT_NAMES", "CONTINUOUS"):
        return _tables()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def planner_file_name(agent_type: str) -> str:
    """``traced_<model_type>_model.pt``, the file name the original's planner loads."""
    return f"traced_{agent_class(agent_type_name(agent_type)).model_type}_model.pt"


def agent_type_name(agent_type: str) -> str:
    """Normalise an agent name or the original's ``model_type`` spelling of it (any case, ``-``
    for ``_``) to the registry name. Raises ``ValueError`` for an unknown name."""
    name = agent_type.strip().lower().replace("-", "_")
    if name in AGENT_NAMES:
        return name
    by_model_type = {spelling.lower(): n for n, spelling in model_types().items()}
    if name in by_model_type:
        return by_model_type[name]
    raise ValueError(f"unknown agent type {agent_type!r}; choose one of {', '.join(AGENT_NAMES)}")


# --- exported modules ---------------------------------------------------------------------------


def export_module(agent: Agent) -> nn.Module:
    """The eager (untraced) export module of ``agent``: a float64, CPU, eval-mode deep copy of
    its :meth:`~marinenav.agents.base.Agent.export_network`. The live agent is not touched."""
    module = copy.deepcopy(agent.export_network()).to("cpu").double().eval()
    module.requires_grad_(False)
    return module


class FlatInputs(nn.Module):
    """ONNX has no tuple inputs: ``forward(self_state, object_states, object_masks, *extra)``
    calls a module in the planner's convention."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, self_state, object_states, object_masks, *extra):
        return self.module((self_state, object_states, object_masks), *extra)


def example_inputs(agent_type: str, num_objects: int = 1) -> tuple[torch.Tensor, ...]:
    """Batch-1 float64 example inputs, flat: ``self_state (1, 7)``, ``object_states (1, 5, 5)``
    (``num_objects`` present, the rest zero padding), ``object_masks (1, 5)`` and the agent's
    extra inputs (``taus (1, 32)`` in [0, 1)). :func:`planner_inputs` groups them as the planner
    passes them."""
    cls = agent_class(agent_type_name(agent_type))
    generator = torch.Generator().manual_seed(0)
    f64 = torch.float64
    self_state = torch.randn(1, SELF_STATE_DIM, generator=generator, dtype=f64)
    mask = (torch.arange(MAX_OBJECTS) < num_objects).to(f64).unsqueeze(0)
    objects = torch.randn(1, MAX_OBJECTS, OBJECT_DIM, generator=generator, dtype=f64)
    inputs = (self_state, objects * mask.unsqueeze(-1), mask)
    for name in cls.export_extra_inputs:
        if name not in EXTRA_INPUT_EXAMPLES:
            raise ValueError(
                f"{cls.__name__} asks for the planner input {name!r}; the planner convention has "
                f"{', '.join(EXTRA_INPUT_EXAMPLES)}"
            )
        inputs += (EXTRA_INPUT_EXAMPLES[name](generator),)
    return inputs


def planner_inputs(flat: tuple[torch.Tensor, ...]) -> tuple[Any, ...]:
    """Flat inputs ``(self_state, object_states, object_masks, *extra)`` as the planner's call
    arguments: ``((self_state, object_states, object_masks), *extra)``."""
    return ((flat[0], flat[1], flat[2]), *flat[3:])


def input_names(agent_type: str) -> tuple[str, ...]:
    """Names of the exported inputs (the agent's extra inputs last)."""
    return STATE_INPUTS + agent_class(agent_type_name(agent_type)).export_extra_inputs


def metadata(agent: Agent) -> dict[str, Any]:
    """What the exported file records about the export (``marinenav_export.json``): the
    :data:`RECORD_KEYS` and the agent's :meth:`~marinenav.agents.base.Agent.export_metadata`."""
    cls = type(agent)
    info: dict[str, Any] = {
        "agent": agent.name,
        "dtype": "float64",
        "inputs": list(input_names(agent.name)),
        "outputs": list(cls.export_outputs),
        "spec": "C7",  # a fixed tag of every record: the C++ planner's calling convention
    }
    if "taus" in cls.export_extra_inputs:
        info["num_tau"] = EXPORT_NUM_TAU
    extra = agent.export_metadata()
    clash = sorted(set(extra) & set(RECORD_KEYS))
    if clash:
        raise ValueError(f"{cls.__name__}.export_metadata() may not set {', '.join(clash)}")
    info.update(extra)
    return info


def export_torchscript(agent: Agent, path: str | Path) -> Path:
    """Trace ``agent``'s acting network (float64, CPU, batch 1; see the module docstring) and
    save it to ``path`` (parents created). Returns the path. The live agent is unchanged."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = export_module(agent)
    inputs = example_inputs(agent.name)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\..*deprecated", category=DeprecationWarning
        )
        traced = torch.jit.trace(module, planner_inputs(inputs))
        extra = {METADATA_FILE: json.dumps(metadata(agent), sort_keys=True)}
        torch.jit.save(traced, str(path), _extra_files=extra)
    return path


def export_metadata(path: str | Path) -> dict[str, Any]:
    """The ``marinenav_export.json`` record of a file written by :func:`export_torchscript`."""
    extra = {METADATA_FILE: ""}
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\..*deprecated", category=DeprecationWarning
        )
        torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    return json.loads(extra[METADATA_FILE]) if extra[METADATA_FILE] else {}


def export_onnx(agent: Agent, path: str | Path, opset_version: int = 17) -> Path:
    """Export the same module as :func:`export_torchscript` to ONNX (float64 inputs and outputs
    named as in :func:`input_names` / the agent's ``export_outputs``, fixed batch of 1), with
    torch's TorchScript-based exporter (``dynamo=False``: no ``onnxscript`` needed). ``atan`` is
    written with :func:`~marinenav.elementary_atan.atan_elementary` (no float64 kernel in ONNX
    Runtime). Needs the ``onnx`` package (``pip install onnx``). Returns the path."""
    try:
        import onnx  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "ONNX export needs the onnx package: pip install onnx (or the 'export' extra)"
        ) from error
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = FlatInputs(export_module(agent))
    with warnings.catch_warnings(), torch.no_grad(), ElementaryAtan():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        torch.onnx.export(
            module,
            example_inputs(agent.name),
            str(path),
            input_names=list(input_names(agent.name)),
            output_names=list(type(agent).export_outputs),
            opset_version=opset_version,
            dynamo=False,
        )
    return path


# --- the C++ planner's action rule --------------------------------------------------------------


def rule_options(cls: type[Agent], options: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``options`` that ``cls.planner_action`` takes: those its class declares in
    ``planner_options`` (the rest are for other agents' rules)."""
    return {key: value for key, value in options.items() if key in cls.planner_options}


def planner_action(
    agent_type: str, outputs: Any, *, thrust_rate: bool = False, **options: Any
) -> torch.Tensor:
    """The action the C++ planner takes from an exported module's ``outputs``: the
    agent's ``planner_action`` rule.

    Args:
        agent_type: a registered agent name (the original's spellings, e.g. ``"AC_IQN"``, are
            accepted).
        outputs: what the module returned (tensors or NumPy arrays, any leading batch ``[...]``).
        thrust_rate: continuous agents only: multiply by 1000 (N/s), as the planner does before
            its thrust update ``T <- clip(T + rate * 0.5, -500, 1000)``.
        options: passed to the rule where its class declares them (``planner_options``),
            ignored otherwise: ``v_min``, ``v_max`` (a categorical return distribution's
            support, default the agent's config; see ``export_metadata(path)`` for the values a
            model was trained with), ``noise`` (a sampling policy's standard-normal draws
            ``[..., 2]``; without them the deterministic action, the ``PolicyWrapper``'s
            evaluation action).

    Returns:
        int64 action indices ``[...]`` or continuous actions ``[..., 2]`` in (-1, 1) (times
        1000 with ``thrust_rate``).
    """
    cls = agent_class(agent_type_name(agent_type))
    action = cls.planner_action(outputs, **rule_options(cls, options))
    if thrust_rate and cls.action_kind == "continuous":
        return action * THRUST_RATE_SCALE
    return action


# --- command line -------------------------------------------------------------------------------


def out_dir_problem(out: Path) -> str | None:
    """Why ``out`` cannot be the export's output directory, in one line naming ``--out``, or
    None. The directory may be missing (it is created), but neither it nor any of its existing
    ancestors may be a file: checked before anything is loaded or written, so that a mistyped
    ``--out`` (a file name, say) is a refusal rather than a ``FileExistsError`` traceback."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a directory"
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"--out {out} is under {parent}, which is a file, not a directory"
            break
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m marinenav.export RUN_DIR [--out DIR] [--onnx]``: export the run's trained
    agent (its last checkpoint) and, when the run has one, its best evaluated agent (``best/``)
    into ``DIR/best/``; prints the written paths. Exit code 2, with one line, for a missing run
    directory or checkpoint, an ``--out`` that is a file or lies under one, or an output that
    cannot be written."""
    parser = argparse.ArgumentParser(
        prog="python -m marinenav.export",
        description="Export a trained agent as TorchScript (and ONNX) for the C++ planner.",
    )
    parser.add_argument("run_dir", type=Path, help="run directory holding checkpoint.pt")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default RUN_DIR)")
    parser.add_argument("--onnx", action="store_true", help="also write <agent>_model.onnx")
    args = parser.parse_args(argv)

    from marinenav.training.checkpoint import (
        BEST_DIR,
        CHECKPOINT_NAME,
        checkpoint_path,
        load_agent,
    )

    if not args.run_dir.exists():
        parser.error(f"run directory {args.run_dir} does not exist")
    try:
        checkpoint_path(args.run_dir)
    except FileNotFoundError:
        parser.error(f"no {CHECKPOINT_NAME} in {args.run_dir} (is it a training run directory?)")
    if args.out is not None:
        problem = out_dir_problem(args.out)
        if problem:
            parser.error(problem)
    if args.onnx:
        try:
            import onnx  # noqa: F401
        except ImportError:
            parser.error("--onnx needs the onnx package: pip install onnx")

    out = args.out if args.out is not None else args.run_dir
    # the last checkpoint, and the best evaluated agent (best/, written by the trainer) beside it
    sources = [(args.run_dir, out)]
    if (args.run_dir / BEST_DIR / CHECKPOINT_NAME).is_file():
        sources.append((args.run_dir / BEST_DIR, out / BEST_DIR))
    for source, target in sources:
        try:
            agent, _ = load_agent(source, device="cpu")
        except ValueError as error:  # a truncated or corrupt checkpoint: one line naming it
            parser.error(str(error))
        try:
            paths = [export_torchscript(agent, target / planner_file_name(agent.name))]
            if args.onnx:
                paths.append(export_onnx(agent, target / f"{type(agent).model_type}_model.onnx"))
        except OSError as error:  # e.g. no write permission: one line, not a traceback
            parser.error(f"--out {out}: cannot write {error.filename or target}: "
                         f"{error.strerror or error}")
        for path in paths:
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
