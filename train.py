"""Train a marinenav agent: ``python train.py agent=sac`` (Hydra; see docs/training.md)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, open_dict

from marinenav.training.config import register_configs

register_configs()


def resume_command(run_dir: Path) -> str:
    """The command line that continues this run in its own directory."""
    kept = [
        override for override in HydraConfig.get().overrides.task
        if override.split("=", 1)[0].lstrip("+~") not in ("resume", "hydra.run.dir")
    ]  # fmt: skip
    args = [*kept, f"hydra.run.dir={run_dir}", "resume=true"]
    return " ".join(["python", "train.py", *(shlex.quote(arg) for arg in args)])


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    """Train, evaluate and checkpoint in Hydra's run directory; returns the final success rate
    (the value a sweeper optimises)."""
    from marinenav.training.checkpoint import CHECKPOINT_NAME
    from marinenav.training.trainer import Trainer, TrainingInterrupted

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    if cfg.resume is None and os.environ.get("SUBMITIT_EXECUTOR"):
        # a job requeued by submitit after preemption runs again in its own directory
        if (run_dir / CHECKPOINT_NAME).is_file():
            with open_dict(cfg):
                cfg.resume = True
    try:
        trainer = Trainer(cfg, run_dir)
        trainer.resume_command = resume_command(run_dir)
        return trainer.train()["eval/success_rate"]
    except TrainingInterrupted as stop:
        sys.exit(stop.exit_code)


if __name__ == "__main__":
    main()
