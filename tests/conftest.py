"""Test session settings."""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    """``exports(name, fmt)``: the path of ``make_agent(name, seed=EXPORT_SEED)`` exported in
    ``fmt`` (``marinenav.planner.convention.FORMATS``), written once per test run (a ``.pt2``
    package is compiled once): under pytest-xdist the workers share one directory, and the
    first worker to ask writes the file under a lock that the others wait on. Skips ``pt2``
    where no C++ compiler is found and ``onnx`` without the ``onnx`` package."""
    from filelock import FileLock

    from marinenav.agents import make_agent
    from marinenav.planner.convention import export_file_name
    from marinenav.planner.export import EXPORTERS
    from tests.export_utils import EXPORT_SEED

    base = tmp_path_factory.getbasetemp()  # a worker's own; its parent is the run's
    directory = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "exports"
    directory.mkdir(exist_ok=True)

    def export(name: str, fmt: str) -> Path:
        if fmt == "pt2":
            from torch._inductor.cpp_builder import get_cpp_compiler
            from torch._inductor.exc import InvalidCxxCompiler

            try:
                get_cpp_compiler()
            except InvalidCxxCompiler as error:
                pytest.skip(f"AOTInductor needs a C++ compiler to build a .pt2: {error}")
        if fmt == "onnx":
            pytest.importorskip("onnx")
        path = directory / export_file_name(name, fmt)
        with FileLock(f"{path}.lock"):
            if not path.exists():
                EXPORTERS[fmt](make_agent(name, seed=EXPORT_SEED), path)
        return path

    return export
