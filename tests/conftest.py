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


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    """``exports(name, fmt)``: the path of ``make_agent(name, seed=EXPORT_SEED)`` exported in
    ``fmt`` (``marinenav.planner.convention.FORMATS``), written once per session (a ``.pt2``
    package is compiled once). Skips ``pt2`` where no C++ compiler is found and ``onnx``
    without the ``onnx`` package."""
    from marinenav.agents import make_agent
    from marinenav.planner.convention import export_file_name
    from marinenav.planner.export import EXPORTERS
    from tests.export_utils import EXPORT_SEED

    directory = tmp_path_factory.mktemp("exports")
    written: dict[tuple[str, str], object] = {}

    def export(name: str, fmt: str):
        if fmt == "pt2":
            from torch._inductor.cpp_builder import get_cpp_compiler
            from torch._inductor.exc import InvalidCxxCompiler

            try:
                get_cpp_compiler()
            except InvalidCxxCompiler as error:
                pytest.skip(f"AOTInductor needs a C++ compiler to build a .pt2: {error}")
        if fmt == "onnx":
            pytest.importorskip("onnx")
        if (name, fmt) not in written:
            agent = make_agent(name, seed=EXPORT_SEED)
            written[name, fmt] = EXPORTERS[fmt](agent, directory / export_file_name(name, fmt))
        return written[name, fmt]

    return export
