"""Reading trained agents back from a run: ``load_agent(path)``.

A run directory (``hydra.run.dir``) holds ``checkpoint.pt`` (written by the trainer: config,
agent networks and optimisers, replay, simulator state, counters) and ``eval_configs.json``
(the fixed evaluation set in the original's layout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from marinenav.agents import Agent, agent_class

CHECKPOINT_NAME = "checkpoint.pt"


def checkpoint_path(path: str | Path) -> Path:
    """The checkpoint file of a run directory (or the file itself); raises if missing."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    return path


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """The raw checkpoint dict (see ``Trainer.save_checkpoint``)."""
    return torch.load(checkpoint_path(path), map_location=device, weights_only=False)


def load_agent(path: str | Path, device: torch.device | str = "cpu") -> tuple[Agent, dict]:
    """The trained agent of a run (networks and targets restored, on ``device``) and the run's
    config as a plain dict."""
    state = load_checkpoint(path, device)
    config = state["config"]
    values = dict(config["agent"])
    cls = agent_class(values.pop("name"))
    agent = cls(cls.config_class(**values)).to(device)
    agent.load_state_dict(state["agent"]["modules"])
    agent.eval()
    return agent, config
