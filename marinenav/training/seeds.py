"""Several seeds in one job: ``python train.py 'seeds=[0,1,2]'``.

A tuning trial that trains one seed scores a config with that seed's luck in it; a study whose
trials all train seed 0 selects for seed 0 (docs/results.md, "The Optuna study's best on full
runs"). With ``seeds`` set, one job trains each seed one after another, in
``<run dir>/seed<N>/``, and returns the **mean of their final success rates**: the value a
sweeper optimises, so that every trial scores its values on the same seeds.

Each ``seed<N>/`` is a complete run directory (its own config with ``seed=N``, checkpoint,
evaluations, logs): ``evaluate``, ``export``, ``viz runs`` and ``resume`` read it as any run.
The job directory holds ``seeds.json``: the seeds, each finished seed's final success, and
their mean once every seed has finished. ``resume=true`` on the job directory resumes the
seeds that have a checkpoint (a finished one returns its final evaluation at once) and starts
the others.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, open_dict

from marinenav.files import write_text
from marinenav.keys import check_seed
from marinenav.run_files import CHECKPOINT_NAME, SUMMARY_NAME, seed_directories, seed_directory
from marinenav.training.validation import ConfigError


def check_seeds(seeds: Any) -> list[int]:
    """``seeds`` as a list of distinct valid seeds; :class:`ConfigError` (one line) else."""
    if not isinstance(seeds, (list, tuple, ListConfig)) or len(seeds) == 0:
        raise ConfigError(f"seeds must be null or a non-empty list of seeds ('seeds=[0,1,2]'), "
                          f"got {seeds}")  # fmt: skip
    seeds = list(seeds)
    for seed in seeds:
        check_seed(seed, "seeds")
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise ConfigError(f"seeds must be distinct, {repeated} repeated in {seeds}")
    return seeds


def seed_runs(cfg: DictConfig, run_dir: Path, requeued: bool = False) -> list[
        tuple[int, DictConfig, Path]]:  # fmt: skip
    """The runs of a several-seed job: ``(seed, config, run directory)`` per seed, in order.

    Each config is ``cfg`` with ``seed=N`` and ``seeds=null``. ``resume=true`` (or a job
    requeued by submitit, ``requeued``) resumes each seed whose directory holds a checkpoint
    and starts the others fresh; a fresh job refuses a seed directory with a checkpoint (as a
    single run does, unless ``overwrite=true``). ``resume=PATH`` is refused: each seed has its
    own checkpoint."""
    seeds = check_seeds(cfg.seeds)
    resume = cfg.resume
    if resume is not None and resume is not False and str(resume).lower() != "true":
        raise ConfigError(f"resume={resume}: a job of several seeds resumes only its own "
                          "directory (resume=true); resume one seed from elsewhere with "
                          "seed=N resume=PATH")  # fmt: skip
    runs = []
    for seed in seeds:
        directory = seed_directory(run_dir, seed)
        started = (directory / CHECKPOINT_NAME).is_file()
        seed_cfg = copy.deepcopy(cfg)
        with open_dict(seed_cfg):
            seed_cfg.seed, seed_cfg.seeds = seed, None
            if resume is not None and resume is not False or requeued:
                seed_cfg.resume = True if started else None
        runs.append((seed, seed_cfg, directory))
    return runs


def write_summary(
    run_dir: Path, seeds: list[int], finals: dict[int, dict[str, Any]]
) -> float | None:
    """Write ``seeds.json`` in the job directory: the job's seeds, each finished seed's final
    evaluation timestep and success rate, and their mean once every seed has finished (null
    before). Written when the first seed starts and after each seed ends, so that the file also
    marks the directory as a job of several seeds (``viz`` reads its ``seed<N>`` directories).
    Returns the mean, or ``None`` while a seed is unfinished."""
    rates = {seed: float(final["eval/success_rate"]) for seed, final in finals.items()}
    mean = sum(rates.values()) / len(rates) if set(rates) == set(seeds) else None
    record = {
        "seeds": list(seeds),
        "final_success_rate": {str(seed): rate for seed, rate in rates.items()},
        "final_timestep": {str(seed): int(final["timestep"]) for seed, final in finals.items()},
        "mean_final_success_rate": mean,
    }  # fmt: skip
    write_text(Path(run_dir) / SUMMARY_NAME, json.dumps(record, indent=2) + "\n")
    return mean


def seed_job_hint(path: str | Path) -> str:
    """For a message about a missing checkpoint: where ``path`` is the directory of a job of
    several seeds, ``"; PATH is a job of several seeds: name one of its runs (PATH/seed0, ...)"``,
    else ``""``."""
    path = Path(path)
    if not (path / SUMMARY_NAME).is_file():
        return ""
    runs = [run for run in seed_directories(path) if (run / CHECKPOINT_NAME).is_file()]
    names = ", ".join(map(str, runs)) or "none has a checkpoint yet"
    return f"; {path} is a job of several seeds: name one of its runs ({names})"
