"""Shared by the tests of the export formats (the ``exports`` fixture is in ``conftest.py``)."""

from __future__ import annotations

from marinenav.agents import AGENT_NAMES
from tests.agent_utils import agents_in_the_default_set

EXPORT_SEED = 5  # the agents every format test exports
# The agents whose .pt2 packages the default run compiles (AOTInductor compiles C++ for each,
# 10-30 s on 2 cores): IQN (the taus input) and SAC (two outputs); `pytest -m slow` does the rest.
PT2_AGENTS = ("iqn", "sac")


def pt2_agents() -> list:
    """Every agent name as a parameter, those outside :data:`PT2_AGENTS` marked ``slow``."""
    return agents_in_the_default_set(AGENT_NAMES, PT2_AGENTS)
