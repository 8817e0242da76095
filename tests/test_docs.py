"""Every ``python`` code block in the README and in ``docs/`` runs as written."""

from __future__ import annotations

import re
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
