"""Export a trained agent's acting network for the original's C++ (VRX) planner
(docs/migrating.md, "The node's call, from C++").

The exported module is a float64, CPU copy of the agent's :meth:`~marinenav.agents.base.Agent.
export_network` (the acting network in the planner's calling convention,
:mod:`marinenav.planner_convention`: one tuple ``(self_state, object_states, object_masks)``,
any batch ``N``, then the agent's extra inputs), traced with ``torch.jit.trace`` on batch-of-1
example inputs (objects always zero-padded to 5: the traced graph has no "no objects" branch).
Files are named as the original's, ``traced_<model_type>_model.pt``
(:func:`~marinenav.planner_convention.planner_file_name`), so the original's planner loads them
unchanged, and :mod:`marinenav.planner` loads ours and the original's shipped files alike.

Everything agent-specific comes from the agent's class (``marinenav.agents.base``): the
outputs (``export_outputs``, documented with each agent's ``export_network``), the extra
inputs, the file-name spelling (``model_type``), extra metadata (``export_metadata()``) and the
planner's action rule (``planner_action``, ``planner_options``), which
:func:`marinenav.planner_convention.planner_action` applies to an exported module's outputs, so
an export can be checked against the live policy.

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
import io
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from marinenav.agents import Agent
from marinenav.cli import run_command
from marinenav.elementary_atan import ElementaryAtan
from marinenav.files import FileWriteError, write_bytes
from marinenav.planner_convention import (
    EXPORT_NUM_TAU,
    METADATA_FILE,
    RECORD_KEYS,
    example_inputs,
    input_names,
    planner_file_name,
    planner_inputs,
)

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
    save it to ``path`` (parents created; written atomically, :mod:`marinenav.files`). Returns
    the path. The live agent is unchanged."""
    module = export_module(agent)
    inputs = example_inputs(agent.name)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\..*deprecated", category=DeprecationWarning
        )
        traced = torch.jit.trace(module, planner_inputs(inputs))
        extra = {METADATA_FILE: json.dumps(metadata(agent), sort_keys=True)}
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer, _extra_files=extra)
    return write_bytes(path, buffer.getvalue())  # atomic: never a torn planner file


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
    Runtime). Needs the ``onnx`` package (``pip install onnx``). Written atomically
    (:mod:`marinenav.files`); returns the path."""
    try:
        import onnx  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "ONNX export needs the onnx package: pip install onnx (or the 'export' extra)"
        ) from error
    module = FlatInputs(export_module(agent))
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad(), ElementaryAtan():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        torch.onnx.export(
            module,
            example_inputs(agent.name),
            buffer,
            input_names=list(input_names(agent.name)),
            output_names=list(type(agent).export_outputs),
            opset_version=opset_version,
            dynamo=False,
        )
    return write_bytes(path, buffer.getvalue())


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
        except FileWriteError as error:  # a full disk, no permission: one line, no file left
            parser.error(f"--out {out}: {error}")
        for path in paths:
            print(path)
    return 0


if __name__ == "__main__":
    run_command(main, "python -m marinenav.export")
