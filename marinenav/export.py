"""Export a trained agent's acting network for the original's C++ (VRX) planner (spec C7).

The exported module is a float64, CPU copy of the acting network, traced with
``torch.jit.trace`` on batch-of-1 example inputs, in the calling convention of the original's C++
planner (``model.forward({tensorTuple})``): one tuple argument

``x = (self_state (N, 7) f64, object_states (N, 5, 5) f64, object_masks (N, 5) f64)``

(objects nearest first, always zero-padded to 5, masks 0/1: the traced graph has no "no objects"
branch), any batch ``N``, and IQN's ``forward(x, taus)``. Files are named as the original's,
``traced_<MODEL_TYPE>_model.pt`` (:data:`MODEL_TYPES`: ``AC_IQN``, ``DDPG``, ...), so the
original's planner loads them unchanged, and :mod:`marinenav.planner` loads ours and the
original's shipped files alike. Outputs, per agent:

=========  ================  ==========================  =========================================
agent      network           extra input                 output
=========  ================  ==========================  =========================================
ac_iqn     actor             --                          action ``(N, 2)`` in (-1, 1)
ddpg       actor             --                          action ``(N, 2)`` in (-1, 1)
sac        actor             --                          ``(mu (N, 2), log_sigma (N, 2))``,
                                                         ``log_sigma`` in [-20, 2], no sampling or
                                                         squashing
iqn        full network      ``taus (N, 32)`` f64        quantiles ``(N, 32, 25)``
dqn        full network      --                          Q-values ``(N, 25)``
rainbow    full network      --                          atom probabilities ``(N, 25, atoms)``
                                                         (mean weights: no noise)
=========  ================  ==========================  =========================================

:func:`planner_action` applies the C++ planner's rule to those outputs (argmax of the mean
quantile, of Q, of ``sum_z z p``; the actor output; SAC's ``(2/pi) atan(mu + sigma * noise)``), so
an exported module can be checked against the live policy.

The file also carries ``marinenav_export.json`` (``torch.jit.load(path, _extra_files=...)``, or
:func:`export_metadata`): the agent name, input / output names and, for Rainbow, the support.

ONNX has no tuple inputs: the ONNX export takes the three state tensors (and ``taus``) as
separate inputs, batch 1.

Command line: ``python -m marinenav.export RUN_DIR [--out DIR] [--onnx]`` writes
``traced_<MODEL_TYPE>_model.pt`` (and ``<MODEL_TYPE>_model.onnx``) for the run's trained agent.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from marinenav.sim.constants import MAX_OBJECTS, OBJECT_DIM, SELF_STATE_DIM

EXPORT_NUM_TAU = 32  # K of the IQN export: the C++ planner's reshapes hard-wire it (C7)
THRUST_RATE_SCALE = 1000.0  # the planner multiplies continuous actions by this (N/s)
METADATA_FILE = "marinenav_export.json"
STATE_INPUTS = ("self_state", "object_states", "object_masks")
OUTPUT_NAMES = {
    "ac_iqn": ("action",),
    "ddpg": ("action",),
    "sac": ("mu", "log_sigma"),
    "iqn": ("quantiles",),
    "dqn": ("q_values",),
    "rainbow": ("probabilities",),
}
CONTINUOUS = ("ac_iqn", "ddpg", "sac")
# The original's ``model_type`` spellings, used in its file names (C7: ``AC_IQN`` with an
# underscore). The original ships no Rainbow file; ``Rainbow`` follows its trainer's spelling.
MODEL_TYPES = {
    "ac_iqn": "AC_IQN", "ddpg": "DDPG", "sac": "SAC", "iqn": "IQN", "dqn": "DQN",
    "rainbow": "Rainbow",
}  # fmt: skip


def planner_file_name(agent_type: str) -> str:
    """``traced_<MODEL_TYPE>_model.pt``, the file name the original's planner loads."""
    return f"traced_{MODEL_TYPES[agent_type_name(agent_type)]}_model.pt"


def agent_type_name(agent_type: str) -> str:
    """Normalise an agent name: ``"AC-IQN"``, ``"AC_IQN"``, ``"ac_iqn"`` -> ``"ac_iqn"``;
    ``"Rainbow"`` -> ``"rainbow"``. Raises ``ValueError`` for an unknown name."""
    name = agent_type.strip().lower().replace("-", "_")
    if name not in OUTPUT_NAMES:
        raise ValueError(
            f"unknown agent type {agent_type!r}; choose one of {', '.join(OUTPUT_NAMES)}"
        )
    return name


# --- exported modules ---------------------------------------------------------------------------


class ActorExport(nn.Module):
    """AC-IQN / DDPG: ``forward((self_state, object_states, object_masks))`` -> action
    ``(N, 2)``."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        self_state, object_states, object_masks = x
        return self.actor(self_state, object_states, object_masks)


class GaussianActorExport(nn.Module):
    """SAC: ``(mu (N, 2), log_sigma (N, 2))`` of the pre-squash Gaussian (no sampling)."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor]):
        self_state, object_states, object_masks = x
        mu, log_sigma = self.actor(self_state, object_states, object_masks)
        return mu, log_sigma


class QuantileExport(nn.Module):
    """IQN: ``forward(state_tuple, taus (N, K))`` -> quantiles ``(N, K, 25)`` (K = 32 in the
    planner)."""

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(
        self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor], taus: torch.Tensor
    ) -> torch.Tensor:
        self_state, object_states, object_masks = x
        return self.network(self_state, object_states, object_masks, taus)


class QValueExport(nn.Module):
    """DQN: Q-values ``(N, 25)``."""

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        self_state, object_states, object_masks = x
        return self.network(self_state, object_states, object_masks)


class DistributionExport(nn.Module):
    """Rainbow: atom probabilities ``(N, 25, atoms)`` with the noisy layers' mean weights."""

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        self_state, object_states, object_masks = x
        return self.network(self_state, object_states, object_masks, noise=False).exp()


class FlatInputs(nn.Module):
    """ONNX has no tuple inputs: ``forward(self_state, object_states, object_masks[, taus])``
    calls a tuple-convention export module."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, self_state, object_states, object_masks, *taus):
        return self.module((self_state, object_states, object_masks), *taus)


# Cephes' double-precision arctangent (range reduction, then a rational approximation): ONNX
# Runtime has no float64 ``Atan`` kernel, so the ONNX export of the deterministic actors computes
# their ``(2/pi) atan`` squash with basic float64 operations instead (within 1e-16 of torch.atan).
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
           -1.228866684490136173410e2, -6.485021904942025371773e1)  # fmt: skip
_ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
           4.853903996359136964868e2, 1.945506571482613964425e2)  # fmt: skip
_ATAN_MOREBITS = 6.123233995736765886130e-17  # pi/2 - float64(pi/2)
_TAN_3PI_8 = 2.41421356237309504880


def atan_elementary(x: torch.Tensor) -> torch.Tensor:
    """``atan(x)`` from ``+ - * /``, ``abs``, ``sign`` and ``where`` only (Cephes ``atan``: full
    float64 precision): exportable to ONNX graphs that ONNX Runtime runs in float64."""
    a = x.abs()
    big = a > _TAN_3PI_8
    mid = (a > 0.66) & ~big
    one = torch.ones_like(a)
    reduced = torch.where(
        big, -1.0 / torch.where(big, a, one), torch.where(mid, (a - 1) / (a + 1), a)
    )
    zero = torch.zeros_like(a)
    offset = torch.where(big, math.pi / 2, torch.where(mid, math.pi / 4 + zero, zero))
    extra = torch.where(big, _ATAN_MOREBITS, torch.where(mid, 0.5 * _ATAN_MOREBITS + zero, zero))
    z = reduced * reduced
    p = torch.full_like(z, _ATAN_P[0])
    for c in _ATAN_P[1:]:
        p = p * z + c
    q = z + _ATAN_Q[0]
    for c in _ATAN_Q[1:]:
        q = q * z + c
    y = offset + (reduced * (z * p / q) + reduced + extra)
    return torch.sign(x) * y


class OnnxActorExport(nn.Module):
    """AC-IQN / DDPG for ONNX: ``actor.head(actor.encoder(...))`` squashed with
    :func:`atan_elementary` (ONNX Runtime cannot run ``Atan`` in float64)."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, self_state, object_states, object_masks) -> torch.Tensor:
        pre = self.actor.head(self.actor.encoder(self_state, object_states, object_masks))
        return (2.0 / math.pi) * atan_elementary(pre)


def acting_network(agent: nn.Module) -> nn.Module:
    """The agent's live acting network: ``agent.actor`` (AC-IQN, DDPG, SAC) or
    ``agent.network`` (IQN, DQN, Rainbow)."""
    name = agent_type_name(agent.name)
    return agent.actor if name in CONTINUOUS else agent.network


def export_module(agent: nn.Module) -> nn.Module:
    """The eager (untraced) export wrapper of ``agent``: a float64, CPU, eval-mode deep copy of
    its acting network wrapped with the C7 signature. The live agent is not touched."""
    name = agent_type_name(agent.name)
    network = copy.deepcopy(acting_network(agent)).to("cpu").double().eval()
    network.requires_grad_(False)
    wrapper = {
        "ac_iqn": ActorExport,
        "ddpg": ActorExport,
        "sac": GaussianActorExport,
        "iqn": QuantileExport,
        "dqn": QValueExport,
        "rainbow": DistributionExport,
    }[name]
    return wrapper(network).eval()


def example_inputs(agent_type: str, num_objects: int = 1) -> tuple[torch.Tensor, ...]:
    """Batch-1 float64 example inputs, flat: ``self_state (1, 7)``, ``object_states (1, 5, 5)``
    (``num_objects`` present, the rest zero padding), ``object_masks (1, 5)`` and, for IQN,
    ``taus (1, 32)``. :func:`planner_inputs` groups them as the planner passes them."""
    name = agent_type_name(agent_type)
    generator = torch.Generator().manual_seed(0)
    f64 = torch.float64
    self_state = torch.randn(1, SELF_STATE_DIM, generator=generator, dtype=f64)
    mask = (torch.arange(MAX_OBJECTS) < num_objects).to(f64).unsqueeze(0)
    objects = torch.randn(1, MAX_OBJECTS, OBJECT_DIM, generator=generator, dtype=f64)
    inputs = (self_state, objects * mask.unsqueeze(-1), mask)
    if name == "iqn":
        inputs += (torch.rand(1, EXPORT_NUM_TAU, generator=generator, dtype=f64),)
    return inputs


def planner_inputs(flat: tuple[torch.Tensor, ...]) -> tuple[Any, ...]:
    """Flat inputs ``(self_state, object_states, object_masks[, taus])`` as the planner's call
    arguments: ``((self_state, object_states, object_masks),)`` or ``(state_tuple, taus)``."""
    return ((flat[0], flat[1], flat[2]), *flat[3:])


def input_names(agent_type: str) -> tuple[str, ...]:
    """Names of the exported inputs (``taus`` last for IQN)."""
    return STATE_INPUTS + (("taus",) if agent_type_name(agent_type) == "iqn" else ())


def metadata(agent: nn.Module) -> dict[str, Any]:
    """What the exported file records about the export (``marinenav_export.json``)."""
    name = agent_type_name(agent.name)
    info: dict[str, Any] = {
        "agent": name,
        "dtype": "float64",
        "inputs": list(input_names(name)),
        "outputs": list(OUTPUT_NAMES[name]),
        "spec": "C7",
    }
    if name == "iqn":
        info["num_tau"] = EXPORT_NUM_TAU
    if name == "rainbow":
        network = agent.network
        info.update(atoms=int(network.atoms), v_min=network.v_min, v_max=network.v_max)
    return info


def export_torchscript(agent: nn.Module, path: str | Path) -> Path:
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


def export_onnx(agent: nn.Module, path: str | Path, opset_version: int = 17) -> Path:
    """Export the same module as :func:`export_torchscript` to ONNX (float64 inputs and outputs
    named as in :func:`input_names` / ``OUTPUT_NAMES``, fixed batch of 1), with torch's
    TorchScript-based exporter (``dynamo=False``: no ``onnxscript`` needed). The AC-IQN / DDPG
    squash uses :func:`atan_elementary` instead of ``Atan`` (no float64 kernel in ONNX Runtime).
    Needs the ``onnx`` package (``pip install onnx``). Returns the path."""
    try:
        import onnx  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "ONNX export needs the onnx package: pip install onnx (or the 'export' extra)"
        ) from error
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    name = agent_type_name(agent.name)
    module = export_module(agent)
    if isinstance(module, ActorExport):
        module = OnnxActorExport(module.actor)
    else:
        module = FlatInputs(module)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        torch.onnx.export(
            module,
            example_inputs(name),
            str(path),
            input_names=list(input_names(name)),
            output_names=list(OUTPUT_NAMES[name]),
            opset_version=opset_version,
            dynamo=False,
        )
    return path


# --- the C++ planner's action rule --------------------------------------------------------------


def planner_action(
    agent_type: str,
    outputs: Any,
    *,
    v_min: float = -75.0,
    v_max: float = 50.0,
    noise: torch.Tensor | None = None,
    thrust_rate: bool = False,
) -> torch.Tensor:
    """The action the C++ planner takes from an exported module's ``outputs`` (spec C7).

    Args:
        agent_type: ``"ac_iqn"``, ``"ddpg"``, ``"sac"``, ``"iqn"``, ``"dqn"`` or ``"rainbow"``
            (the original's spellings, e.g. ``"AC_IQN"``, are accepted).
        outputs: what the module returned (tensors or NumPy arrays, any leading batch ``[...]``):
            action ``[..., 2]``; SAC ``(mu [..., 2], log_sigma [..., 2])``; quantiles
            ``[..., K, 25]``; Q ``[..., 25]``; probabilities ``[..., 25, atoms]``.
        v_min, v_max: Rainbow's support ``linspace(v_min, v_max, atoms)``; default this
            repo's ``RainbowConfig`` ([-75, 50]). The original planner uses [-1, 1]
            (see ``export_metadata(path)`` for the values a model was trained with).
        noise: SAC only: standard-normal draws ``[..., 2]``; the planner samples
            ``z = mu + exp(log_sigma) * noise``. ``None`` gives the deterministic ``z = mu``
            (the ``PolicyWrapper``'s evaluation action).
        thrust_rate: continuous agents only: multiply by 1000 (N/s), as the planner does before
            its thrust update ``T <- clip(T + rate * 0.5, -500, 1000)``.

    Returns:
        int64 action indices ``[...]`` (IQN: argmax of the mean over the quantiles; DQN: argmax
        Q; Rainbow: argmax of ``sum_z z p``) or continuous actions ``[..., 2]`` in (-1, 1)
        (times 1000 with ``thrust_rate``).
    """
    name = agent_type_name(agent_type)
    if name == "sac":
        mu, log_sigma = (torch.as_tensor(x) for x in outputs)
        z = mu if noise is None else mu + log_sigma.exp() * torch.as_tensor(noise).to(mu)
        action = (2.0 / math.pi) * torch.atan(z)
    elif name in CONTINUOUS:
        action = _single(outputs).clone()
    elif name == "iqn":
        return _single(outputs).mean(dim=-2).argmax(dim=-1)
    elif name == "dqn":
        return _single(outputs).argmax(dim=-1)
    else:  # rainbow
        probs = _single(outputs)
        support = torch.linspace(v_min, v_max, probs.shape[-1], dtype=probs.dtype)
        return (probs * support).sum(dim=-1).argmax(dim=-1)
    return action * THRUST_RATE_SCALE if thrust_rate else action


def _single(outputs: Any) -> torch.Tensor:
    """The one output tensor (also from a 1-tuple / list, e.g. ONNX Runtime's result)."""
    if isinstance(outputs, (tuple, list)):
        if len(outputs) != 1:
            raise ValueError(f"expected one output, got {len(outputs)}")
        outputs = outputs[0]
    return torch.as_tensor(outputs)


# --- command line -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m marinenav.export RUN_DIR [--out DIR] [--onnx]``: export the run's trained
    agent; prints the written paths. Exit code 2 for a missing run directory or checkpoint."""
    parser = argparse.ArgumentParser(
        prog="python -m marinenav.export",
        description="Export a trained agent as TorchScript (and ONNX) for the C++ planner (C7).",
    )
    parser.add_argument("run_dir", type=Path, help="run directory holding checkpoint.pt")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default RUN_DIR)")
    parser.add_argument("--onnx", action="store_true", help="also write <agent>_model.onnx")
    args = parser.parse_args(argv)

    from marinenav.training.checkpoint import CHECKPOINT_NAME, checkpoint_path, load_agent

    if not args.run_dir.exists():
        parser.error(f"run directory {args.run_dir} does not exist")
    try:
        checkpoint_path(args.run_dir)
    except FileNotFoundError:
        parser.error(f"no {CHECKPOINT_NAME} in {args.run_dir} (is it a training run directory?)")
    if args.onnx:
        try:
            import onnx  # noqa: F401
        except ImportError:
            parser.error("--onnx needs the onnx package: pip install onnx")

    try:
        agent, _ = load_agent(args.run_dir, device="cpu")
    except ValueError as error:  # a truncated or corrupt checkpoint: one line naming the file
        parser.error(str(error))
    out = args.out if args.out is not None else args.run_dir
    paths = [export_torchscript(agent, out / planner_file_name(agent.name))]
    if args.onnx:
        paths.append(export_onnx(agent, out / f"{MODEL_TYPES[agent.name]}_model.onnx"))
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
