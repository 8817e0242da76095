"""Every ``python`` code block in the README and in ``docs/`` runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
EXAMPLES = [
    pytest.param(code, id=f"{page.name}:{i}")
    for page in PAGES
    for i, code in enumerate(BLOCK.findall(page.read_text()))
]


def test_the_readme_has_examples() -> None:
    assert any("README" in str(p.id) for p in EXAMPLES)


@pytest.mark.parametrize("code", EXAMPLES)
def test_doc_example_runs(code: str) -> None:
    exec(compile(code, "<doc example>", "exec"), {"__name__": "__doc_example__"})


TRAIN_COMMANDS = [
    line.split("#")[0].strip()
    for page in PAGES
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.DOTALL)
    for line in block.splitlines()
    if line.strip().startswith("python train.py")
]


def test_the_readme_shows_training_commands() -> None:
    assert any(command == "python train.py agent=sac" for command in TRAIN_COMMANDS)


@pytest.mark.parametrize("command", TRAIN_COMMANDS)
def test_documented_train_commands_compose_and_validate(command: str) -> None:
    """Every ``python train.py ...`` line of the docs is a valid configuration (the first value
    of a sweep is composed); Hydra's own keys (``hydra/...``) are left to Hydra. A line that
    asks for CUDA graphs on a machine without CUDA must stop with the documented error."""
    check_train_command(command)


def check_train_command(command: str) -> None:
    """Compose and validate the config of ``python train.py ARGS`` (see the test above)."""
    import torch
    from hydra import compose, initialize_config_dir

    from marinenav.training.config import ConfigError, register_configs, validate

    overrides = [
        arg.split(",")[0] if "=" in arg and "," in arg.split("=", 1)[1] else arg
        for arg in command.split()[2:]
        if arg != "-m" and not arg.startswith(("hydra", "\\"))
    ]
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
        if "cudagraphs=true" in overrides and not torch.cuda.is_available():
            with pytest.raises(ConfigError, match="cudagraphs=true needs a CUDA device"):
                validate(cfg)
        else:
            validate(cfg)


def run_python(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python ARGS`` in the repository root, one torch thread, output captured."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def help_sections(text: str) -> dict[str, list[str]]:
    """The ``== Title ==`` sections of a help page: title -> its non-empty lines, stripped."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        title = re.fullmatch(r"== (.+) ==", line.strip())
        if title:
            current = sections.setdefault(title.group(1), [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return sections


def test_train_help_lists_agents_recipes_main_keys_and_examples() -> None:
    """Issue 20: ``python train.py --help`` is a help page (conf/hydra/help/marinenav.yaml), not
    the raw config: every agent, recipe, curriculum and logger is listed, the internal
    ``schema/*`` groups are not, every main key exists in the composed config, and its three
    examples compose and validate."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from marinenav.agents import AGENT_NAMES
    from marinenav.training.config import register_configs

    result = run_python("train.py", "--help")
    assert result.returncode == 0, result.stderr
    page = result.stdout
    assert "schema" not in page and "_target_" not in page
    sections = help_sections(page)
    assert list(sections) == ["Agents (agent=NAME)", "Recipes (recipe=NAME)", "Other groups",
                              "Main keys", "Examples", "After a run"]  # fmt: skip
    listed = [line.split()[0] for line in sections["Agents (agent=NAME)"]]
    assert sorted(listed) == sorted(AGENT_NAMES)
    recipes = [line.split()[0] for line in sections["Recipes (recipe=NAME)"]]
    assert sorted(recipes) == sorted(p.stem for p in (ROOT / "conf" / "recipe").glob("*.yaml"))
    groups = {line.split()[0].split("=")[0]: line.split()[0].split("=")[1].split("|")
              for line in sections["Other groups"] if "|" in line}  # fmt: skip
    for group in ("curriculum", "logger"):
        assert sorted(groups[group]) == sorted(
            p.stem for p in (ROOT / "conf" / group).glob("*.yaml")
        )
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config")
    keys = [line.split()[0].split("=")[0] for line in sections["Main keys"]]
    assert len(keys) >= 10
    for key in keys:
        if key.startswith("hydra.") or key.endswith(","):
            continue
        assert OmegaConf.select(cfg, key, default="missing") != "missing", key
    examples = sections["Examples"]
    assert len(examples) == 3 and all(e.startswith("python train.py ") for e in examples)
    for example in examples:
        check_train_command(example)
