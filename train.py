"""Train a marinenav agent: ``python train.py agent=sac`` (Hydra; see docs/training.md)."""

from __future__ import annotations

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from marinenav.training.config import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    """Train, evaluate and checkpoint in Hydra's run directory; returns the final success rate
    (the value a sweeper optimises)."""
    from marinenav.training.trainer import Trainer

    trainer = Trainer(cfg, HydraConfig.get().runtime.output_dir)
    return trainer.train()["eval/success_rate"]


if __name__ == "__main__":
    main()
