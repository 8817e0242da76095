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

ROOT = Path(__file__).resolve().parents[1]

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


def _yaml_values(path: Path) -> dict:
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    values.pop("defaults", None)
    return values


def _defaults(config_class: type) -> dict:
    import dataclasses

    return {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING
                     else f.default) for f in dataclasses.fields(config_class)}  # fmt: skip


def test_run_values_live_only_in_the_yaml_files() -> None:
    """Issue 21: the run schemas carry types, not values (every field MISSING), so a value is
    written once, in conf/; the composed default config has no MISSING key."""
    import dataclasses

    from hydra import compose, initialize_config_dir
    from omegaconf import MISSING, OmegaConf

    from marinenav.training import config

    for schema in (config.EnvConf, config.CurriculumConf, config.TrainingConf,
                   config.EvaluationConf, config.LoggerConf, config.CheckpointConf):  # fmt: skip
        assert all(f.default is MISSING for f in dataclasses.fields(schema)), schema
    config.register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        for overrides in ([], ["recipe=paper"], ["scenario=harbour", "agent=sac"]):
            assert not OmegaConf.missing_keys(compose("config", overrides=overrides))


@pytest.mark.parametrize("kind", ["agent", "scenario"])
def test_agent_and_layout_yaml_files_repeat_the_dataclass_defaults(kind: str) -> None:
    """The options used from Python (agent and layout dataclasses) hold the defaults; their YAML
    files show the same values (a value interpolated from another group is the random layout's
    curriculum, compared below)."""
    from marinenav.agents import agent_class
    from marinenav.scenarios import layout_class

    for path in sorted((ROOT / "conf" / kind).glob("*.yaml")):
        values = _yaml_values(path)
        if kind == "scenario" and "scenario" in values:  # a _global_ file: its own part
            values = values["scenario"]
        name = values.pop("name")
        assert name == path.stem
        cls = agent_class(name).config_class if kind == "agent" else layout_class(name).Config
        defaults = _defaults(cls)
        for key, value in values.items():
            if isinstance(value, str) and value.startswith("${"):
                continue
            if value == "???":  # required, no default
                assert defaults[key] == "???", (path.name, key)
                continue
            assert value == defaults[key], (path.name, key, value, defaults[key])


def test_the_paper_curriculum_is_one_schedule() -> None:
    from marinenav.scenarios import RandomLayout
    from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule

    values = _yaml_values(ROOT / "conf" / "curriculum" / "paper.yaml")
    values.pop("eval_episodes_per_stage")
    assert CurriculumSchedule(**values) == DEFAULT_TRAINING_SCHEDULE
    assert RandomLayout().schedule == DEFAULT_TRAINING_SCHEDULE
