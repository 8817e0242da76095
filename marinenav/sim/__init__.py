"""The batched marine-navigation simulator: pure tensor code, no TorchRL (docs/simulator.md)."""

from marinenav.sim.constants import InfoState
from marinenav.sim.perception import Observation
from marinenav.sim.scenario import Scenario, default_scenario
from marinenav.sim.scenario_json import (
    load_scenario_file,
    save_scenario_file,
    scenarios_from_dicts,
    scenarios_to_dicts,
)
from marinenav.sim.simulator import MarineNavSimulator, StepResult

__all__ = [
    "InfoState",
    "MarineNavSimulator",
    "Observation",
    "Scenario",
    "StepResult",
    "default_scenario",
    "load_scenario_file",
    "save_scenario_file",
    "scenarios_from_dicts",
    "scenarios_to_dicts",
]
