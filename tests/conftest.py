"""Test session settings."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def one_cpu_thread():
    """The networks and batches here are small: on a 2-core machine two intra-op threads make
    them 10-40 times slower than one (thread hand-off dominates)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
