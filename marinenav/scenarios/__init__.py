"""Scenario layouts: where an episode's vessels, obstacles and currents start (plug-ins).

``random`` (the original's curriculum sampler, the default), ``files`` (episodes from scenario
JSON files), ``harbour`` (a channel with moored boats and two-way traffic), ``imazu`` (the 22
standard encounter situations with target ships that do not give way) and ``mix`` (several of
them at once, weighted). A new layout is
one module here plus ``conf/scenario/<name>.yaml`` (docs/extending.md).
"""

from marinenav.scenarios.base import (
    LAYOUTS,
    ScenarioLayout,
    check_slots,
    layout_class,
    make_layout,
    register_layout,
)
from marinenav.scenarios.files import FilesLayout
from marinenav.scenarios.harbour import HarbourLayout
from marinenav.scenarios.imazu import ImazuLayout
from marinenav.scenarios.mix import MixLayout
from marinenav.scenarios.random import RandomLayout

__all__ = [
    "LAYOUTS",
    "FilesLayout",
    "HarbourLayout",
    "ImazuLayout",
    "MixLayout",
    "RandomLayout",
    "ScenarioLayout",
    "check_slots",
    "layout_class",
    "make_layout",
    "register_layout",
]
