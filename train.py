"""Train a marinenav agent: ``python train.py agent=sac`` (Hydra; see docs/training.md)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import hydra
import hydra._internal.utils
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from marinenav.files import write_text
from marinenav.training.config import register_configs

register_configs()

# lines of Hydra's and OmegaConf's messages that repeat the key or describe internals
NOISE = ("full_key:", "reference_type=", "object_type=", "To append", "Set the environment")


def one_line(error: BaseException) -> str:
    """An error and its cause as one line: Hydra's option lists joined by commas, OmegaConf's
    node details dropped."""
    parts: list[str] = []
    while error is not None:
        text, items = [], []
        for line in str(error).splitlines():
            if line.startswith("Config search path"):
                break
            if line.startswith("\t"):
                items.append(line.strip())
            elif line.strip() and not line.strip().startswith(NOISE):
                text.append(line.strip().rstrip(":."))
        if items:
            text[-1] = f"{text[-1] if text else 'choose one of'}: {', '.join(items)}"
        message = "; ".join(text) or type(error).__name__
        if not any(message in part for part in parts):
            parts.append(message)
        error = error.__cause__
    return ": ".join(parts)


def run_and_report(func):
    """Hydra's reporter, with its errors (unknown keys, wrong types, unknown choices) as one
    line and exit status 2 instead of a traceback."""
    try:
        return func()
    except Exception as error:
        print(f"error: {one_line(error)}", file=sys.stderr, flush=True)
        sys.exit(2)


hydra._internal.utils.run_and_report = run_and_report


def resume_command(run_dir: Path) -> str:
    """The command line that continues this run in its own directory."""
    kept = [
        override for override in HydraConfig.get().overrides.task
        if override.split("=", 1)[0].lstrip("+~") not in ("resume", "hydra.run.dir")
    ]  # fmt: skip
    args = [*kept, f"hydra.run.dir={run_dir}", "resume=true"]
    return " ".join(["python", "train.py", *(shlex.quote(arg) for arg in args)])


def save_hydra_config(cfg: DictConfig, run_dir: Path) -> None:
    """Write ``.hydra/`` (config.yaml, hydra.yaml, overrides.yaml, as Hydra would) once the
    run owns its directory and its resume has been checked (``hydra.output_subdir`` is null in
    conf/config.yaml so that Hydra writes nothing before): a refused start leaves an earlier
    run's record as it was; a resume records its allowed changes in resumes.jsonl."""
    hydra_cfg = HydraConfig.instance().cfg
    directory = run_dir / ".hydra"
    directory.mkdir(exist_ok=True)
    for name, node in (("config.yaml", cfg), ("hydra.yaml", hydra_cfg),
                       ("overrides.yaml", hydra_cfg.hydra.overrides.task)):  # fmt: skip
        write_text(directory / name, OmegaConf.to_yaml(node))


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    """Train, evaluate and checkpoint in Hydra's run directory; returns the final success rate
    (the value a sweeper optimises)."""
    from marinenav.training.checkpoint import CHECKPOINT_NAME
    from marinenav.training.rundir import remove_new_directories
    from marinenav.training.trainer import Trainer, TrainingDiverged, TrainingInterrupted

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    if cfg.resume is None and os.environ.get("SUBMITIT_EXECUTOR"):
        # a job requeued by submitit after preemption runs again in its own directory
        if (run_dir / CHECKPOINT_NAME).is_file():
            with open_dict(cfg):
                cfg.resume = True
    try:
        trainer = Trainer(cfg, run_dir)
    except (ValueError, FileNotFoundError) as error:  # config, directory, resume: nothing ran
        remove_new_directories(run_dir)  # only what Hydra made for this run, never the user's
        print(f"error: {one_line(error)}", file=sys.stderr, flush=True)
        sys.exit(2)
    save_hydra_config(cfg, run_dir)
    trainer.resume_command = resume_command(run_dir)
    try:
        return trainer.train()["eval/success_rate"]
    except TrainingInterrupted as stop:
        sys.exit(stop.exit_code)
    except TrainingDiverged as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
