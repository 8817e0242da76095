"""Train a marinenav agent: ``python train.py agent=sac`` (Hydra; see docs/training.md)."""

from __future__ import annotations

import contextlib
import os
import shlex
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import hydra
import hydra._internal.hydra
import hydra._internal.utils
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from marinenav.cli import one_line
from marinenav.files import write_text
from marinenav.training.config import register_configs

register_configs()

# Exit statuses (docs/training.md, "Checkpoints and resuming"): 0 finished, 1 the run failed
# while it ran (a file it could not write, an unexpected error: traceback in train.log), 2
# refused before it started (a bad command line or config, a run directory in use), 3 diverged,
# 128 + N stopped by signal N (130 Ctrl-C, 143 SIGTERM).
FAILED, REFUSED, DIVERGED = 1, 2, 3


class JobFailed(Exception):
    """A job of a sweep that failed or was refused; its ``error:`` line is printed already.
    Raised (not ``sys.exit``) so that Hydra's launcher runs the sweep's other jobs."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message, exit_code)  # both: a launcher's other process unpickles it
        self.message, self.exit_code = message, exit_code

    def __str__(self) -> str:
        return self.message


# the jobs of this process's sweep that failed: (job number, overrides, message)
FAILED_JOBS: list[tuple[int, str, str]] = []


def run_and_report(func):
    """Hydra's reporter, with its errors (unknown keys, wrong types, unknown choices) as one
    line and exit status 2 instead of a traceback; after a sweep whose jobs failed, one line
    naming each (in this process; else the first) and the first one's exit status."""
    try:
        return func()
    except JobFailed as failed:
        jobs = FAILED_JOBS or [(None, "", str(failed))]  # jobs of another process: the first
        named = "; ".join(f"job {number} ({overrides}): {message}" if number is not None
                          else message for number, overrides, message in jobs)  # fmt: skip
        print(f"error: {len(jobs)} job(s) of the sweep failed: {named}",
              file=sys.stderr, flush=True)  # fmt: skip
        sys.exit(failed.exit_code)
    except Exception as error:
        print(f"error: {one_line(error)}", file=sys.stderr, flush=True)
        sys.exit(REFUSED)


hydra._internal.utils.run_and_report = run_and_report


def help_page(self: Any, help_cfg: DictConfig, cfg: DictConfig, args_parser: Any,
              resolve: bool) -> str:  # fmt: skip
    """Hydra's ``--help`` and ``--hydra-help`` page, with only the ``$`` fields its template
    uses filled in. Hydra fills all four first, and listing the config groups copies the
    config store once per group: ``python train.py --help`` spent more than half of its 11 s
    there (Intel Xeon VM), for a page (conf/hydra/help/marinenav.yaml) that lists none."""
    template = string.Template(help_cfg.template)

    def hydras(group: str) -> bool:
        return group == "hydra" or group.startswith("hydra/")

    fields = {
        "FLAGS_HELP": lambda: self.format_args_help(args_parser),
        "HYDRA_CONFIG_GROUPS": lambda: self.format_config_groups(hydras),
        "APP_CONFIG_GROUPS": lambda: self.format_config_groups(lambda group: not hydras(group)),
        "CONFIG": lambda: OmegaConf.to_yaml(cfg, resolve=resolve),
    }
    used = {match.group("named") or match.group("braced")
            for match in template.pattern.finditer(template.template)}  # fmt: skip
    return template.substitute({name: fill() for name, fill in fields.items() if name in used})


hydra._internal.hydra.Hydra.get_help = help_page


CONFIG_DIR = Path(__file__).resolve().parent / "conf"


def explain_command(argv: list[str]) -> int:
    """``python train.py [KEY=VALUE ...] --explain KEY [KEY ...]``: for each key (or every key
    under a node, ``agent``), the value the command's run would get, the file (or command-line
    override) that set it and what it replaced (:mod:`marinenav.training.provenance`). Trains
    nothing; exit status 2 on a bad command line or key."""
    from hydra import compose, initialize_config_dir

    from marinenav.training.provenance import explain, value_sources

    keys = [arg for arg in argv[argv.index("--explain") + 1 :] if "=" not in arg]
    overrides = [arg for arg in argv if arg != "--explain" and arg not in keys]
    if not keys:
        print("error: --explain needs a key (agent.lr; a node such as agent lists all of its "
              "keys)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            final = compose("config", overrides=overrides)
            print(explain(value_sources(overrides), keys, final))
    except Exception as error:  # noqa: BLE001 (a bad override or key: one line, as a run)
        print(f"error: {one_line(error).strip(chr(39))}", file=sys.stderr)
        return 2
    return 0


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
    # where each value came from (python train.py ... --explain KEY tells the same)
    from marinenav.training.provenance import sources_yaml, value_sources

    overrides = list(hydra_cfg.hydra.overrides.task)
    write_text(directory / "sources.yaml", sources_yaml(value_sources(overrides)))


def end_job(message: str, exit_code: int) -> NoReturn:
    """Print ``error: message`` and end this job with ``exit_code``: the process, or, in a
    sweep, only this job (:class:`JobFailed`), so that the sweep's other jobs run."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    if HydraConfig.get().mode == RunMode.MULTIRUN:
        hydra_cfg = HydraConfig.get()
        # the job's own values: its overrides that the command line does not hold as they are
        given = {arg.lower() for arg in sys.argv}
        swept = [o for o in hydra_cfg.overrides.task if o.lower() not in given]
        FAILED_JOBS.append((hydra_cfg.job.num, " ".join(swept), message))
        raise JobFailed(message, exit_code)
    sys.exit(exit_code)


def unexpected(error: Exception, run_dir: Path) -> str:
    """Write ``error``'s traceback to the run's log (train.log) and return the line that says
    so: an error that is not the user's to fix, kept for whoever is."""
    from marinenav.training.trainer import LOG

    LOG.error("unexpected error", exc_info=error)
    log = run_dir / f"{HydraConfig.get().job.name}.log"
    return (f"unexpected {type(error).__name__}: {one_line(error)} (the traceback is in {log}; "
            "please report it)")  # fmt: skip


def train_run(cfg: DictConfig, run_dir: Path, job_dir: Path, first: bool,
              on_start: Callable[[], None] | None = None) -> dict:  # fmt: skip
    """Train one run in ``run_dir`` (the job's directory, or a seed's directory inside it) and
    return its final evaluation; a failure ends the job with the exit statuses above. A refused
    start removes what Hydra made for the job only while nothing of it has trained (``first``);
    ``on_start`` runs once the run owns its directory (the job's own records)."""
    from marinenav.files import FileWriteError
    from marinenav.run_files import CHECKPOINT_NAME
    from marinenav.training.rundir import remove_new_directories
    from marinenav.training.trainer import Trainer, TrainingDiverged, TrainingInterrupted

    try:
        trainer = Trainer(cfg, run_dir)
    except (ValueError, FileNotFoundError) as error:  # config, directory, resume: nothing ran
        if run_dir != job_dir:  # a seed's directory this start made, left empty
            with contextlib.suppress(OSError):
                run_dir.rmdir()
        if first:
            remove_new_directories(job_dir)  # only what Hydra made for this job, never the user's
        end_job(one_line(error), REFUSED)
    except FileWriteError as error:
        end_job(str(error), FAILED)
    except Exception as error:
        end_job(unexpected(error, job_dir), FAILED)
    try:
        save_hydra_config(cfg, run_dir)
        if on_start is not None:
            on_start()
        trainer.resume_command = resume_command(job_dir)
        return trainer.train()
    except TrainingInterrupted as stop:
        sys.exit(stop.exit_code)  # a stop stops a sweep too
    except TrainingDiverged as error:
        end_job(str(error), DIVERGED)
    except FileWriteError as error:  # a full disk: the last checkpoint written is kept
        kept = run_dir / CHECKPOINT_NAME
        end_job(f"{error}; stopped at timestep {trainer.timesteps:,}"
                + (f", the last checkpoint {kept} is kept; free space and resume with: "
                   f"{trainer.resume_command}" if kept.is_file() else ""), FAILED)  # fmt: skip
    except Exception as error:
        end_job(unexpected(error, job_dir), FAILED)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    """Train, evaluate and checkpoint in Hydra's run directory; returns the final success rate
    (the value a sweeper optimises), or with ``seeds`` set the mean over those seeds' runs
    (:mod:`marinenav.training.seeds`). Ends with the exit statuses above."""
    from marinenav.run_files import CHECKPOINT_NAME, SUMMARY_NAME
    from marinenav.training.rundir import remove_new_directories
    from marinenav.training.seeds import seed_runs, write_summary
    from marinenav.training.trainer import say

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    requeued = bool(os.environ.get("SUBMITIT_EXECUTOR"))  # a job submitit requeued runs again
    if cfg.get("seeds") is None:
        if cfg.resume is None and requeued and (run_dir / CHECKPOINT_NAME).is_file():
            with open_dict(cfg):
                cfg.resume = True
        return train_run(cfg, run_dir, run_dir, first=True)["eval/success_rate"]
    try:
        runs = seed_runs(cfg, run_dir, requeued=requeued and cfg.resume is None)
    except ValueError as error:
        remove_new_directories(run_dir)
        end_job(one_line(error), REFUSED)
    seeds, finals = [seed for seed, _, _ in runs], {}

    def record_job() -> None:  # the job's config and seeds.json, once the job owns its directory
        save_hydra_config(cfg, run_dir)
        write_summary(run_dir, seeds, finals)

    for index, (seed, seed_cfg, seed_dir) in enumerate(runs):
        say(f"marinenav: seed {seed} ({index + 1} of {len(runs)}) in {seed_dir}")
        finals[seed] = train_run(seed_cfg, seed_dir, run_dir, first=index == 0,
                                 on_start=record_job if index == 0 else None)  # fmt: skip
        mean = write_summary(run_dir, seeds, finals)
    rates = ", ".join(f"seed {seed} {final['eval/success_rate']:.3f}"
                      for seed, final in finals.items())  # fmt: skip
    say(f"marinenav: {len(finals)} seeds finished: {rates}; mean {mean:.3f} "
        f"(the job's value; {run_dir / SUMMARY_NAME})")
    return mean


if __name__ == "__main__":
    if "--explain" in sys.argv[1:]:
        sys.exit(explain_command(sys.argv[1:]))
    main()
