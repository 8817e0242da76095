"""Export a trained agent's acting network for the original's C++ (VRX) planner
(docs/migrating.md, "The node's call, from C++"), and for its successors after TorchScript.

The exported module is a float64, CPU copy of the agent's :meth:`~marinenav.agents.base.Agent.
export_network` (the acting network in the planner's calling convention,
:mod:`marinenav.planner.convention`: one tuple ``(self_state, object_states, object_masks)``,
any batch ``N``, then the agent's extra inputs), traced with ``torch.jit.trace`` on batch-of-1
example inputs (objects always zero-padded to 5: the traced graph has no "no objects" branch).
Files are named as the original's, ``traced_<model_type>_model.pt``
(:func:`~marinenav.planner.convention.planner_file_name`), so the original's planner loads them
unchanged, and :mod:`marinenav.planner` loads ours and the original's shipped files alike.

Everything agent-specific comes from the agent's class (``marinenav.agents.base``): the
outputs (``export_outputs``, documented with each agent's ``export_network``), the extra
inputs, the file-name spelling (``model_type``), extra metadata (``export_metadata()``) and the
planner's action rule (``planner_action``, ``planner_options``), which
:func:`marinenav.planner.convention.planner_action` applies to an exported module's outputs, so
an export can be checked against the live policy.

The file also carries ``marinenav_export.json`` (``torch.jit.load(path, _extra_files=...)``, or
:func:`export_metadata`): the agent name, input / output names and the agent's extra entries
(e.g. the support of a categorical return distribution).

Two more formats (:data:`FORMATS`) hold the same float64 module with the same record; they
take the three state tensors and the extra inputs as separate inputs
(``self_state [N, 7], object_states [N, 5, 5], object_masks [N, 5][, taus [N, 32]]``, float64,
any batch ``N``), since neither has tuple inputs:

- ``pt2`` (:func:`export_pt2`): ``torch.export`` compiled ahead of time by AOTInductor into a
  package ``<model_type>_model.pt2`` (a shared library for this CPU and this torch), which C++
  runs with ``torch::inductor::AOTIModelPackageLoader`` and Python with
  ``torch._inductor.aoti_load_package``; the record is the package's metadata entry
  ``marinenav_export.json``. Compiling needs a C++ compiler and takes seconds to a minute.
- ``onnx`` (:func:`export_onnx`): ``<model_type>_model.onnx`` for ONNX Runtime, the record in
  the model's ``metadata_props``. ONNX Runtime has no float64 ``Atan``, so every ``atan`` of the
  exported graph is written with elementary operations
  (:func:`marinenav.planner.elementary_atan.atan_elementary`).

Every file is written under a temporary name beside its target and renamed into place, so a
reader never sees a half-written planner.

Command line: ``python -m marinenav.export RUN_DIR [--out DIR] [--format torchscript pt2 onnx]``
writes the run's trained agent in the given formats (TorchScript, the original node's, by
default).
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from marinenav.agents import Agent
from marinenav.cli import cvar_level, run_command
from marinenav.files import FileWriteError, atomic_path
from marinenav.planner.convention import (
    EXPORT_NUM_TAU,
    FORMATS,
    METADATA_FILE,
    RECORD_KEYS,
    example_inputs,
    export_file_name,
    input_names,
    planner_inputs,
)
from marinenav.planner.elementary_atan import ElementaryAtan

# --- exported modules ---------------------------------------------------------------------------


def export_module(agent: Agent) -> nn.Module:
    """The eager (untraced) export module of ``agent``: a float64, CPU, eval-mode deep copy of
    its :meth:`~marinenav.agents.base.Agent.export_network`. The live agent is not touched."""
    module = copy.deepcopy(agent.export_network()).to("cpu").double().eval()
    module.requires_grad_(False)
    return module


class FlatInputs(nn.Module):
    """ONNX and ``.pt2`` have no tuple inputs: ``forward(self_state, object_states,
    object_masks, *extra)`` calls a module in the planner's convention."""

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
        "spec": "docs/migrating.md#the-nodes-call-from-c",  # the C++ node's calling convention
    }
    if "taus" in cls.export_extra_inputs:
        info["num_tau"] = EXPORT_NUM_TAU
    extra = agent.export_metadata()
    clash = sorted(set(extra) & set(RECORD_KEYS))
    if clash:
        raise ValueError(f"{cls.__name__}.export_metadata() may not set {', '.join(clash)}")
    info.update(extra)
    return info


def write_in_place(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(temporary)`` on a new name beside ``path`` with the same suffix (AOTInductor
    wants ``.pt2``), then rename it to ``path`` (:func:`marinenav.files.atomic_path`: parents
    created; on an error the temporary file is removed, ``path`` is left as it was and an I/O
    failure is one :class:`~marinenav.files.FileWriteError`). Returns ``path``."""
    with atomic_path(path) as temporary:
        write(temporary)
    return Path(path)


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
        # into memory first: torch's C++ file writer aborts the process on a full disk, Python's
        # write below raises an OSError that becomes one line
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer, _extra_files=extra)
    return write_in_place(path, lambda temporary: temporary.write_bytes(buffer.getvalue()))


def export_metadata(path: str | Path) -> dict[str, Any]:
    """The ``marinenav_export.json`` record of a file written by :func:`export_torchscript`,
    :func:`export_pt2` (``.pt2``) or :func:`export_onnx` (``.onnx``); ``{}`` for a file
    without one."""
    path = Path(path)
    if path.suffix == FORMATS["pt2"]:
        record = torch._inductor.aoti_load_package(str(path)).get_metadata().get(METADATA_FILE)
        return json.loads(record) if record else {}
    if path.suffix == FORMATS["onnx"]:
        import onnx

        props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
        return json.loads(props[METADATA_FILE]) if METADATA_FILE in props else {}
    extra = {METADATA_FILE: ""}
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\..*deprecated", category=DeprecationWarning
        )
        torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    return json.loads(extra[METADATA_FILE]) if extra[METADATA_FILE] else {}


def export_onnx(agent: Agent, path: str | Path, opset_version: int = 17) -> Path:
    """Export the same module as :func:`export_torchscript` to ONNX: float64 inputs and outputs
    named as in :func:`input_names` / the agent's ``export_outputs``, a dynamic batch
    dimension ``batch`` (the first of every input and output) and the record in the model's
    ``metadata_props`` (key ``marinenav_export.json``), with torch's TorchScript-based exporter
    (``dynamo=False``: no ``onnxscript`` needed). ``atan`` is written with
    :func:`~marinenav.planner.elementary_atan.atan_elementary` (no float64 kernel in ONNX Runtime).
    Needs the ``onnx`` package (``pip install onnx``). Returns the path."""
    try:
        import onnx
    except ImportError as error:
        raise ImportError(
            "ONNX export needs the onnx package: pip install onnx (or the 'export' extra)"
        ) from error
    module = FlatInputs(export_module(agent))
    names = list(input_names(agent.name)) + list(type(agent).export_outputs)
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
            dynamic_axes={name: {0: "batch"} for name in names},
            opset_version=opset_version,
            dynamo=False,
        )
    model = onnx.load_from_string(buffer.getvalue())
    onnx.helper.set_model_props(model, {METADATA_FILE: json.dumps(metadata(agent), sort_keys=True)})
    return write_in_place(path, lambda temporary: onnx.save(model, str(temporary)))


def export_pt2(agent: Agent, path: str | Path) -> Path:
    """Export the same module as :func:`export_torchscript` with ``torch.export`` and compile
    it ahead of time with AOTInductor into a ``.pt2`` package at ``path`` (parents created).

    The package takes the inputs of :func:`input_names` as separate float64 tensors (contiguous,
    on the CPU) with one dynamic batch dimension ``N >= 1`` shared by all of them, and returns
    the agent's ``export_outputs`` (float64 ``[N, ...]``). Its metadata holds the record under
    ``marinenav_export.json`` (C++: ``AOTIModelPackageLoader::get_metadata()``), beside
    AOTInductor's own entries (``AOTI_CPU_ISA``: the vector instructions the code was compiled
    for). The package's code is compiled for this CPU's instruction set and links against this
    torch's libtorch: compile it where (or for the CPU and torch where) it will run. Needs a C++
    compiler (``$CXX`` or ``g++``). Returns the path."""
    module = FlatInputs(export_module(agent))
    # two rows: torch.export specialises a batch of 1 to a constant
    inputs = tuple(
        torch.cat(pair)
        for pair in zip(example_inputs(agent.name, 1), example_inputs(agent.name, 3), strict=True)
    )
    batch = {0: torch.export.Dim("batch", min=1)}
    dynamic = (batch,) * 3 + (((batch,) * (len(inputs) - 3),) if len(inputs) > 3 else ())
    configs = {
        "aot_inductor.metadata": {METADATA_FILE: json.dumps(metadata(agent), sort_keys=True)},
        # the package's own input checks (AOTI_RUNTIME_CHECK_INPUTS=1) then accept a batch of 1
        "aot_inductor.check_lowerbound": False,
    }
    with warnings.catch_warnings():
        # torch's own deprecations raised inside torch.export and Inductor, not our calls
        warnings.filterwarnings("ignore", message=r".*LeafSpec.*deprecated", category=FutureWarning)
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\.script_method.*deprecated",
            category=DeprecationWarning,
        )  # fmt: skip
        program = torch.export.export(module, inputs, dynamic_shapes=dynamic)
        return write_in_place(
            path,
            lambda temporary: torch._inductor.aoti_compile_and_package(
                program, package_path=str(temporary), inductor_configs=configs
            ),
        )


#: the writer of each format (:data:`~marinenav.planner.convention.FORMATS`)
EXPORTERS: dict[str, Callable[[Agent, str | Path], Path]] = {
    "torchscript": export_torchscript,
    "pt2": export_pt2,
    "onnx": export_onnx,
}


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
    """``python -m marinenav.export RUN_DIR [--out DIR] [--format FORMAT ...] [--onnx]``: export
    the run's trained agent (its last checkpoint) and, when the run has one, its best evaluated
    agent (``best/``) into ``DIR/best/``, in each format asked for (TorchScript by default;
    ``--onnx`` adds ONNX); prints the written paths. Exit code 2, with one line, for a missing
    run directory or checkpoint, an ``--out`` that is a file or lies under one, a missing
    ``onnx`` package or C++ compiler, or an output that cannot be written."""
    parser = argparse.ArgumentParser(
        prog="python -m marinenav.export",
        description="Export a trained agent as a planner file: TorchScript for the original's "
        "C++ node, an AOTInductor package (.pt2) for libtorch after TorchScript, or ONNX.",
    )
    parser.add_argument("run_dir", type=Path, help="run directory holding checkpoint.pt")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default RUN_DIR)")
    parser.add_argument(
        "--format", nargs="+", choices=FORMATS, default=None, dest="formats", metavar="FORMAT",
        help="one or more of: torchscript (traced_<agent>_model.pt, the default), pt2 "
        "(<agent>_model.pt2, compiled with AOTInductor: needs a C++ compiler), onnx "
        "(<agent>_model.onnx)",
    )  # fmt: skip
    parser.add_argument(
        "--onnx", action="store_true", help="also write ONNX (adds onnx to --format)"
    )
    parser.add_argument(
        "--online", action="store_true",
        help="a run that averaged its acting network's weights (training.policy_average_start): "
        "export the online network its last checkpoint keeps, not the average (no best/)",
    )  # fmt: skip
    parser.add_argument(
        "--cvar", type=cvar_level, default=None,
        help="IQN and Rainbow: the planner acts on CVaR_CVAR of its return distribution instead "
        "of the run's agent.cvar_alpha (the file holds the level; the node's call is unchanged)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    formats = list(dict.fromkeys(args.formats or ["torchscript"]))
    if args.onnx and "onnx" not in formats:
        formats.append("onnx")

    from marinenav.training.checkpoint import (
        BEST_DIR,
        CHECKPOINT_NAME,
        checkpoint_path,
        load_agent,
    )
    from marinenav.training.seeds import seed_job_hint

    if not args.run_dir.exists():
        parser.error(f"run directory {args.run_dir} does not exist")
    try:
        checkpoint_path(args.run_dir)
    except FileNotFoundError:
        hint = seed_job_hint(args.run_dir) or " (is it a training run directory?)"
        parser.error(f"no {CHECKPOINT_NAME} in {args.run_dir}{hint}")
    if args.out is not None:
        problem = out_dir_problem(args.out)
        if problem:
            parser.error(problem)
    if "onnx" in formats:
        try:
            import onnx  # noqa: F401
        except ImportError:
            parser.error("--format onnx needs the onnx package: pip install onnx")
    if "pt2" in formats:
        from torch._inductor.cpp_builder import get_cpp_compiler
        from torch._inductor.exc import InvalidCxxCompiler

        try:
            get_cpp_compiler()
        except InvalidCxxCompiler as error:
            parser.error(f"--format pt2 needs a C++ compiler for AOTInductor: {error}")

    out = args.out if args.out is not None else args.run_dir
    # the last checkpoint, and the best evaluated agent (best/, written by the trainer) beside it
    sources = [(args.run_dir, out)]
    if (args.run_dir / BEST_DIR / CHECKPOINT_NAME).is_file() and not args.online:
        sources.append((args.run_dir / BEST_DIR, out / BEST_DIR))
    for source, target in sources:
        try:
            agent, _ = load_agent(source, device="cpu", average=not args.online)
        except ValueError as error:  # a truncated or corrupt checkpoint: one line naming it
            parser.error(str(error))
        if args.cvar is not None:
            if not agent.policy.selector.acts_on_cvar:
                parser.error(f"--cvar is for agents that act on a return distribution (IQN, "
                             f"Rainbow); this run's agent is {agent.name}")  # fmt: skip
            agent.config.cvar_alpha = args.cvar  # what export_network and the record read
        for fmt in formats:
            try:
                path = EXPORTERS[fmt](agent, target / export_file_name(agent.name, fmt))
            except FileWriteError as error:  # a full disk, no permission: one line, no file left
                parser.error(f"--out {out}: {error}")
            print(path)
    return 0


if __name__ == "__main__":
    run_command(main, "python -m marinenav.export")
