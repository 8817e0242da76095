"""A run directory's files: their names, and the readers that every reader of a run needs.

The trainer (:mod:`marinenav.training`) writes them; the pictures (:mod:`marinenav.viz`) and
the statistics across runs (:mod:`marinenav.aggregate`) read them. They are named here, below
all three, so that reading a run does not import the trainer or the pictures. The run
directory's layout: docs/training.md, "Logs and the run directory".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

CHECKPOINT_NAME = "checkpoint.pt"  # the run's latest state (training/checkpoint.py)
EVALUATIONS_NAME = "evaluations.jsonl"  # one line per evaluation on the validation set
# the last checkpoint's large-set metrics, when present (python -m marinenav.evaluate RUN
# --set large --out RUN/evaluation_large.json, or scripts/collect_recipe_run.sh)
LARGE_NAME = "evaluation_large.json"
# a job of several seeds ('seeds=[0,1,2]'): its seeds and their final success (training/seeds.py)
SUMMARY_NAME = "seeds.json"


def run_config(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's config: Hydra's ``.hydra/config.yaml``, else the checkpoint's, else None."""
    run_dir = Path(run_dir)
    hydra_config = run_dir / ".hydra" / "config.yaml"
    if hydra_config.is_file():
        return OmegaConf.to_container(OmegaConf.load(hydra_config))
    checkpoint = run_dir / CHECKPOINT_NAME
    if checkpoint.is_file():
        import torch  # only here: the names above and Hydra's record need no torch

        state = torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)
        return state["config"]
    return None


def seed_directory(run_dir: str | Path, seed: int) -> Path:
    """Where seed ``seed`` of a several-seed job trains: ``<run_dir>/seed<seed>``."""
    return Path(run_dir) / f"seed{seed}"


def seed_directories(run_dir: str | Path) -> list[Path]:
    """The ``seed<N>`` directories inside ``run_dir``, in seed order (seed2 before seed10)."""
    found = [path for path in Path(run_dir).glob("seed*") if path.name[4:].isdigit()]
    return sorted(found, key=lambda path: int(path.name[4:]))
