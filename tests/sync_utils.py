"""Counting host read-backs (``.item()``, ``bool(tensor)``, ...) while a block runs: the CPU
stand-in for ``torch.cuda.set_sync_debug_mode("error")`` that the no-host-sync tests use."""

from __future__ import annotations

import contextlib
from collections import Counter

import torch

READ_BACKS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")


@contextlib.contextmanager
def count_read_backs():
    """Count calls of tensor read-back methods while the block runs."""
    counts: Counter[str] = Counter()
    originals = {name: getattr(torch.Tensor, name) for name in READ_BACKS}

    def counting(name):
        original = originals[name]

        def wrapper(self, *args, **kwargs):
            counts[name] += 1
            return original(self, *args, **kwargs)

        return wrapper

    for name in READ_BACKS:
        setattr(torch.Tensor, name, counting(name))
    try:
        yield counts
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
