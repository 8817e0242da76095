"""The scenario-layout interface: where vessels, obstacles and currents are at an episode's start.

A *layout* is one class in one file (``marinenav/scenarios/<name>.py``) plus one YAML file
(``conf/scenario/<name>.yaml``), as a VMAS scenario is: the physics and the rules know nothing
of it. The simulator asks its layout for new scenarios whenever environments restart
(:meth:`ScenarioLayout.generate`); the trainer and ``marinenav.evaluate`` ask it for a fixed
evaluation set (:meth:`ScenarioLayout.evaluation_scenarios`).

A layout writes a :class:`~marinenav.sim.scenario.Scenario`: starts and goals of the robots
present, static obstacles, vortex cores, padded to the simulator's slots. It is batched tensor
code: ``n`` scenarios per call, random numbers from the generator it is handed only (so a seed
fixes the scenarios), no host read-back, no Python loop over environments (the performance rules
of docs/architecture.md, "Performance rules and where they are kept"); the simulator calls it
inside the training loop. Nor does it copy host data to the device there: on CUDA such a copy
(``torch.tensor(values, device=...)``, indexing with a Python list, ``table.to(device)``) waits
for the device as a read-back does; a layout's constant table is a :class:`DeviceConstant`,
copied once to each device.

Registering: decorate the class with :func:`register_layout`; its ``Config`` dataclass is the
typed schema of ``conf/scenario/<name>.yaml`` (every option with a default), and
``python train.py scenario=<name>`` selects it. Checklist: docs/extending.md.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import torch
from torch import Tensor

from marinenav.sim.rules import PAPER_RULES, LayoutRules
from marinenav.sim.scenario import Scenario, Slots, default_scenario
from marinenav.sim.scenario_json import scenarios_to_dicts


class ScenarioLayout(ABC):
    """Batched, seeded generation of episode start conditions.

    Subclasses set :attr:`name` and :attr:`Config` (a dataclass of options), take an instance
    of ``Config`` in ``__init__``, and implement :attr:`slots` and :meth:`generate`. Layouts
    with stages (a curriculum) override :attr:`num_stages` and :meth:`stage_start`.
    """

    name: ClassVar[str]
    Config: ClassVar[type]

    @property
    @abstractmethod
    def slots(self) -> Slots:
        """The most robots, obstacles and cores one generated scenario holds: the smallest
        slot counts a simulator using this layout may have."""

    @abstractmethod
    def generate(self, base: Scenario, step: Tensor, generator: torch.Generator) -> Scenario:
        """New scenarios for the ``n = base.num_envs`` environments restarting now.

        Args:
            base: ``n`` environments with the simulator's slots, dtype, device and default
                constants (map size, vessel and perception constants); nothing present.
            step: ``[]`` int64 on ``base``'s device, the simulator's curriculum clock
                (timesteps summed over environments since the run started). Read it with
                tensor ops only (no ``int(step)``: a host sync on CUDA).
            generator: the simulator's random generator, on ``base``'s device.

        Returns:
            A Scenario of the same ``n``, slots, dtype and device, sharing no tensor with
            ``base``. Every robot present must start outside every object and at least its
            ``goal_dis`` from its goal.
        """

    @property
    def num_stages(self) -> int:
        """Stages of the layout (a curriculum's; 1 for a layout without stages). The
        evaluation set holds the same number of episodes of each."""
        return 1

    def stage_start(self, stage: int) -> int:
        """The curriculum clock (timesteps) at which ``stage`` begins."""
        if not 0 <= stage < self.num_stages:
            raise ValueError(f"stage must be in [0, {self.num_stages}), got {stage}")
        return 0

    @property
    def rules(self) -> LayoutRules:
        """Reward terms and end conditions the layout adds to the paper's (none by default;
        docs/extending.md, "Give a layout rules of its own")."""
        return PAPER_RULES

    def episode_labels(self, scenarios: list[dict]) -> list[str]:
        """What a report calls each episode of this layout's evaluation set."""
        return [f"episode {k}" for k in range(len(scenarios))]

    def radius_noise_kappas(self, base: Scenario) -> Tensor:
        """Every perception ``r_kappa`` a generated scenario can carry (the simulator builds
        its radius-noise tables from them once). Default: the base's, which a layout that
        only places things keeps."""
        return base.r_kappa

    def evaluation_scenarios(
        self, episodes_per_stage: int, seed: int, slots: Slots | tuple[int, int, int]
    ) -> list[dict]:
        """A fixed evaluation set: ``episodes_per_stage`` episodes of each stage, stage 0's
        first, generated in float64 from ``seed`` on the CPU, as scenario dicts (the
        original's JSON layout, what ``eval_configs.json`` holds)."""
        check_slots(self, slots)
        generator = torch.Generator().manual_seed(seed)
        parts = []
        for stage in range(self.num_stages):
            base = default_scenario(episodes_per_stage, *slots, dtype=torch.float64)
            base.seed.fill_(seed)
            base.is_eval_env.fill_(True)
            step = torch.tensor(self.stage_start(stage), dtype=torch.int64)
            parts.extend(scenarios_to_dicts(self.generate(base, step, generator)))
        return parts


class DeviceConstant:
    """A constant tensor made on the host, copied to a device the first time it is asked for
    there and kept (a host-to-device copy waits for a CUDA device: once, at the first reset,
    never again in the training loop).

    ``table.on(device)`` is the tensor on ``device`` (the host's own for the CPU)."""

    def __init__(self, values: Tensor) -> None:
        self.host = values
        self._copies: dict[torch.device, Tensor] = {values.device: values}

    def on(self, device: torch.device) -> Tensor:
        copy = self._copies.get(device)
        if copy is None:
            copy = self._copies[device] = self.host.to(device)
        return copy


LAYOUTS: dict[str, type[ScenarioLayout]] = {}


def register_layout(cls: type[ScenarioLayout]) -> type[ScenarioLayout]:
    """Class decorator: make ``cls`` selectable as ``scenario=<cls.name>``."""
    if not dataclasses.is_dataclass(getattr(cls, "Config", None)):
        raise TypeError(f"layout {cls.__name__} needs a dataclass Config")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"layout {cls.__name__} needs a name")
    if name in LAYOUTS and LAYOUTS[name] is not cls:
        raise ValueError(f"a scenario layout named {name!r} is registered already")
    LAYOUTS[name] = cls
    return cls


def layout_class(name: str) -> type[ScenarioLayout]:
    """The layout registered as ``name``."""
    if name not in LAYOUTS:
        raise ValueError(
            f"unknown scenario layout {name!r}; choose one of {', '.join(sorted(LAYOUTS))}"
        )
    return LAYOUTS[name]


def make_layout(name: str, options: dict[str, Any] | None = None) -> ScenarioLayout:
    """An instance of the layout ``name`` with ``options`` (its Config's fields; the rest keep
    their defaults). Unknown options are refused naming the allowed ones."""
    cls = layout_class(name)
    options = dict(options or {})
    fields = {f.name for f in dataclasses.fields(cls.Config)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(
            f"scenario {name!r} has no option {unknown[0]!r}; its options: "
            f"{', '.join(sorted(fields)) or 'none'}"
        )
    return cls(cls.Config(**options))


def check_slots(layout: ScenarioLayout, slots: Slots | tuple[int, int, int]) -> None:
    """Refuse slot counts below what ``layout`` places, naming the first one short."""
    have = Slots(*slots)
    need = layout.slots
    for label, h, n in zip(("robot", "obstacle", "core"), have, need, strict=True):
        if h < n:
            raise ValueError(
                f"scenario {layout.name!r} places up to {n} {label}s but the simulator has "
                f"{h} {label} slots (set env.{label}_slots={n} or more)"
            )
