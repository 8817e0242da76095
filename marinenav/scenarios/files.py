"""``scenario=files``: episodes drawn uniformly from a set of scenario JSON files.

The files are in the original's episode layout (an ``eval_configs.json``, a file written by
``marinenav.sim.save_scenario_file`` or by ``python -m marinenav.viz`` tools; docs/simulator.md,
"Scenario layouts"). Every episode of every file is one template; a restarting environment gets a
template drawn uniformly at random, with the constants the file gives it (map, reward, vessel
and perception constants: a file's values win, as when loading a scenario). The same files
serve training (``python train.py scenario=files 'scenario.paths=[a.json,b.json]'``) and
evaluation (the evaluation set is every template once, in file order, whatever the per-stage
count).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from omegaconf import MISSING
from torch import Tensor

from marinenav.scenarios.base import ScenarioLayout, check_slots, register_layout
from marinenav.sim.constants import ROBOT_DEFAULTS
from marinenav.sim.scenario import Scenario, Slots
from marinenav.sim.scenario_json import load_scenario_file, scenarios_from_dicts


@dataclass
class FilesConfig:
    # scenario JSON files (paths relative to the working directory), each one episode dict or
    # a list of them
    paths: list[str] = MISSING


@register_layout
class FilesLayout(ScenarioLayout):
    """Templates read from files, drawn uniformly per restarting environment.

    Args:
        config: the file paths (read at first use).
        episodes: episode dicts to use instead of files (``config`` then unused).
    """

    name = "files"
    Config = FilesConfig

    def __init__(self, config: FilesConfig | None = None, episodes: list[dict] | None = None):
        if episodes is None:
            paths = config.paths if config is not None else []
            if isinstance(paths, str) or not paths:  # MISSING is the string "???"
                raise ValueError("scenario 'files' needs scenario.paths (one file or more)")
            self.paths = [Path(path) for path in paths]
        elif not episodes:
            raise ValueError("scenario 'files' has no episodes")
        self._episodes = None if episodes is None else list(episodes)
        # the templates on each (device, dtype, slots) the layout is used with
        self._templates: dict[tuple, Scenario] = {}

    @property
    def episodes(self) -> list[dict]:
        """Every episode of the files, in order (the files are read and checked at first use:
        a bad file is refused in one line naming it, the episode and the key)."""
        if self._episodes is None:
            self._episodes = [e for path in self.paths for e in load_scenario_file(path)]
        return self._episodes

    @property
    def slots(self) -> Slots:
        envs = [e["env"] for e in self.episodes]
        return Slots(
            max(int(env["num_robots"]) for env in envs),
            max(len(env["obstacles"]["positions"]) for env in envs),
            max(len(env["cores"]["positions"]) for env in envs),
        )

    def templates(self, like: Scenario) -> Scenario:
        """Every episode as a Scenario with ``like``'s slots, dtype and device (parsed once)."""
        key = (like.start.device, like.start.dtype, like.slots)
        if key not in self._templates:
            check_slots(self, like.slots)
            self._templates[key] = scenarios_from_dicts(
                self.episodes, like.slots, int(ROBOT_DEFAULTS["N"]),
                dtype=like.start.dtype, device=like.start.device, where="scenario file episode",
            )  # fmt: skip
        return self._templates[key]

    def generate(self, base: Scenario, step: Tensor, generator: torch.Generator) -> Scenario:
        templates = self.templates(base)
        pick = torch.randint(
            templates.num_envs, (base.num_envs,), generator=generator, device=base.start.device
        )
        return templates.index(pick)

    def radius_noise_kappas(self, base: Scenario) -> Tensor:
        return torch.cat([base.r_kappa.reshape(-1), self.templates(base).r_kappa.reshape(-1)])

    def evaluation_scenarios(
        self, episodes_per_stage: int, seed: int, slots: Slots | tuple[int, int, int]
    ) -> list[dict]:
        """Every episode of the files once, in order (the count and seed do not apply)."""
        check_slots(self, slots)
        return [dict(e) for e in self.episodes]
