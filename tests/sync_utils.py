"""Counting host synchronisations while a block runs: the CPU stand-in for
``torch.cuda.set_sync_debug_mode("error")`` that the no-host-sync tests use.

Two kinds are counted, each under its own key:

- **read-backs** from Python: ``.item()``, ``bool(tensor)``, ``.tolist()``, ... (the method's
  name as key);
- **operators whose output shape depends on the data** (key ``aten.<op>``): ``nonzero``,
  ``masked_select``, indexing or index-assignment with a boolean mask, ``unique``,
  ``repeat_interleave`` without ``output_size``, ``bincount``, ``equal``. On a CPU tensor they
  cost nothing extra, but on a CUDA tensor each waits for the device to learn how large its
  result is, which ``set_sync_debug_mode("error")`` refuses. Without this the CPU tests could
  not see them, and a CUDA run would be the first to find one;
- **host data made a tensor** (key ``aten.lift_fresh``), not a 0-dim one (a scalar, which a
  CUDA kernel takes by value): ``torch.tensor(values, device=...)``,
  ``torch.as_tensor`` of a list, indexing with a Python list. On a CUDA device each is a copy
  from host memory, which waits for the device as a read-back does (a layout's generation
  refused this way on an H200, 2026-12-01). A constant kept on the host and moved with
  ``.to(device)`` is not seen on a CPU (there the move is no operator at all): such tables are
  :class:`~marinenav.scenarios.base.DeviceConstant`.

A read-back's own operators (``bool(t)`` runs ``aten.is_nonzero``) are counted once, as the
read-back.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

READ_BACKS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")

aten = torch.ops.aten
# operators that synchronise on CUDA whatever their arguments
SYNCING_OPS = {
    aten.nonzero.default,
    aten.masked_select.default,
    aten._local_scalar_dense.default,
    aten.is_nonzero.default,
    aten.equal.default,
    aten._unique.default,
    aten._unique2.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
    aten.bincount.default,
}
# operators that synchronise on CUDA when an index is a boolean mask
MASK_INDEXED_OPS = {
    aten.index.Tensor,
    aten.index_put.default,
    aten.index_put_.default,
    aten._index_put_impl_.default,
}


def _is_mask(index: object) -> bool:
    return isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)


def syncs_on_cuda(func, args, kwargs) -> bool:
    """Whether the operator call ``func(*args, **kwargs)`` would wait on a CUDA device."""
    if func in SYNCING_OPS:
        return True
    if func in MASK_INDEXED_OPS:
        return any(_is_mask(i) for i in (args[1] if len(args) > 1 else kwargs["indices"]))
    if func is aten.repeat_interleave.Tensor:
        return kwargs.get("output_size") is None
    if func is aten.lift_fresh.default:  # host data; a 0-dim one is a scalar, never copied
        return args[0].dim() > 0
    return False


class _CountSyncingOps(TorchDispatchMode):
    """Counts the CUDA-syncing operators into ``counts``, except while a read-back, counted on
    its own, runs (``read_backs_running``)."""

    def __init__(self, counts: Counter[str]) -> None:
        super().__init__()
        self.counts, self.read_backs_running = counts, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.read_backs_running and syncs_on_cuda(func, args, kwargs):
            self.counts[f"aten.{func.overloadpacket.__name__}"] += 1
        return func(*args, **kwargs)


@contextlib.contextmanager
def count_read_backs(operators: bool = True):
    """Count host read-backs and CUDA-syncing operators while the block runs (see the module's
    docstring); ``sum(counts.values()) == 0`` is the no-host-sync assertion.

    ``operators=False`` counts the read-backs only, for compiled code: torch.compile does not
    trace under a dispatch mode (it skips every frame, "non-infra torch dispatch mode
    present"), and with ``fullgraph=True`` an operator whose output shape depends on the data
    is refused when the graph is made, so the count is not needed there."""
    counts: Counter[str] = Counter()
    syncing_ops = _CountSyncingOps(counts) if operators else contextlib.nullcontext()
    originals = {name: getattr(torch.Tensor, name) for name in READ_BACKS}

    def counting(name):
        original = originals[name]

        def wrapper(self, *args, **kwargs):
            counts[name] += 1
            if not operators:
                return original(self, *args, **kwargs)
            syncing_ops.read_backs_running += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                syncing_ops.read_backs_running -= 1

        return wrapper

    for name in READ_BACKS:
        setattr(torch.Tensor, name, counting(name))
    try:
        with syncing_ops:
            yield counts
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


def take_the_cuda_code_path(sim) -> None:
    """Switch a CPU simulator to the code its CUDA twin runs: resets and perception picked with
    ``nonzero`` (data-dependent shapes) are eager-CPU-only shortcuts (``compact_resets``,
    ``compact_perception``); the fixed-shape paths are what a CUDA device runs."""
    sim.compact_resets = False
    sim.compact_perception = False
