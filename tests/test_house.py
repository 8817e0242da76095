"""One source of each fact: the shared vocabulary (marinenav/keys.py), which the environment
speaks and no module copies; and tests that share helpers through helper modules
(tests/*_utils.py), never by importing another test module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from marinenav.envs import MarineNavEnv
from marinenav.keys import DTYPES, GROUP, OBSERVATION_KEYS, dtype_named

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "marinenav"


def test_the_environment_observes_the_shared_fields_in_the_shared_group() -> None:
    env = MarineNavEnv(num_envs=2, num_robots=2, num_obstacles=1, num_cores=1, seed=0)
    observation = env.observation_spec[GROUP]
    assert set(OBSERVATION_KEYS) <= set(observation.keys())
    td = env.reset()
    assert td[GROUP].batch_size == torch.Size([2, 2])  # E environments, R robot slots
    assert td[GROUP, OBSERVATION_KEYS[0]].shape[-1] == 7  # self state: goal, velocity, thrusts


def test_no_module_redefines_the_vocabulary() -> None:
    """``GROUP``, ``OBSERVATION_KEYS`` and the dtype-name conversion live in keys.py only."""
    copies = []
    pattern = re.compile(r'^\s*(_?GROUP\s*=\s*"agents"|_?OBSERVATION_KEYS\s*=\s*\(\s*"self_state"'
                         r'|.*torch\.float64 if .*== "float64")', re.M)  # fmt: skip
    for path in PACKAGE.rglob("*.py"):
        if path.name != "keys.py" and pattern.search(path.read_text()):
            copies.append(str(path.relative_to(PACKAGE)))
    assert copies == []


def test_dtype_names() -> None:
    assert dtype_named("float64") is torch.float64 and set(DTYPES) == {"float32", "float64"}
    expected = r"dtype must be one of \['float32', 'float64'\], got 'half'"
    with pytest.raises(ValueError, match=expected):
        dtype_named("half")


def test_no_test_module_imports_another() -> None:
    pattern = re.compile(r"^\s*(from|import) tests\.test_", re.M)
    importing = [path.name for path in TESTS.glob("*.py") if pattern.search(path.read_text())]
    assert importing == []
