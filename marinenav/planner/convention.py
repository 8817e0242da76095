"""The calling convention of the original's C++ (VRX) planner: how a planner file is named,
called and read (docs/migrating.md, "The node's call, from C++").

A *planner file* is a float64 TorchScript module (or the same module as an AOTInductor ``.pt2``
package or an ONNX model: :data:`FORMATS`, which take the tuple's three tensors and the extra
inputs as separate inputs). The C++ planner calls
``model.forward({tensorTuple})``: one tuple argument

``x = (self_state (N, 7) f64, object_states (N, 5, 5) f64, object_masks (N, 5) f64)``

(objects nearest first, always zero-padded to 5, masks 0/1), any batch ``N``, followed by the
agent's ``export_extra_inputs`` (quantile fractions ``taus (N, 32)`` f64 for an implicit quantile
network: :data:`EXTRA_INPUT_EXAMPLES`). Files are named as the original's,
``traced_<model_type>_model.pt`` (:func:`planner_file_name`, :func:`model_types`), and ours carry
a ``marinenav_export.json`` record (:data:`METADATA_FILE`, :data:`RECORD_KEYS`). The planner turns
the outputs into an action with the agent class's ``planner_action`` rule, given the options
the class declares (``planner_options``: :func:`rule_options`, :func:`planner_action`), and
multiplies a continuous action by :data:`THRUST_RATE_SCALE`.

Both sides depend on this module and it on neither: :mod:`marinenav.planner.export` writes
planner files, :mod:`marinenav.planner.load` reads them (ours and the original's shipped files
alike). Everything agent-specific comes from the agent's class (``marinenav.agents.base``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from marinenav.agents import AGENT_NAMES, Agent, agent_class
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
#: file formats -> their suffix: TorchScript (the original node's), AOTInductor package, ONNX
FORMATS = {"torchscript": ".pt", "pt2": ".pt2", "onnx": ".onnx"}


@functools.cache
def model_types() -> dict[str, str]:
    """Agent name -> the original's file-name spelling (``model_type``) of every registered
    agent (imports every agent module, once)."""
    return {name: agent_class(name).model_type for name in AGENT_NAMES}


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


def planner_file_name(agent_type: str) -> str:
    """``traced_<model_type>_model.pt``, the file name the original's planner loads."""
    return f"traced_{agent_class(agent_type_name(agent_type)).model_type}_model.pt"


def export_file_name(agent_type: str, fmt: str = "torchscript") -> str:
    """The file name of an export in format ``fmt`` (:data:`FORMATS`): the original's
    ``traced_<model_type>_model.pt`` for TorchScript, ``<model_type>_model.pt2`` /
    ``<model_type>_model.onnx`` for the others."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "torchscript":
        return planner_file_name(agent_type)
    return f"{agent_class(agent_type_name(agent_type)).model_type}_model{FORMATS[fmt]}"


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
            support, default the agent's config; see
            ``marinenav.planner.export.export_metadata(path)`` for the values a model was
            trained with), ``noise`` (a sampling policy's standard-normal draws ``[..., 2]``;
            without them the deterministic action, the ``PolicyWrapper``'s evaluation action).

    Returns:
        int64 action indices ``[...]`` or continuous actions ``[..., 2]`` in (-1, 1) (times
        1000 with ``thrust_rate``).
    """
    cls = agent_class(agent_type_name(agent_type))
    action = cls.planner_action(outputs, **rule_options(cls, options))
    if thrust_rate and cls.action_kind == "continuous":
        return action * THRUST_RATE_SCALE
    return action
