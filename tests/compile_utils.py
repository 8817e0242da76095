"""Shared by the tests of ``torch.compile`` paths."""

from __future__ import annotations

import os
import shutil

import pytest

# Inductor compiles its generated CPU code with a C++ compiler; without one it cannot run.
HAS_CXX = any(shutil.which(c) for c in (os.environ.get("CXX", "g++"), "g++", "c++", "clang++"))
needs_cxx = pytest.mark.skipif(
    not HAS_CXX, reason="torch.compile on CPU needs a C++ compiler (g++, c++ or clang++)"
)
