"""The training loop (docs/training.md), batched over environments and kept on one device.

Per batched step: epsilon from the schedule (host arithmetic on the host step counter; for
agents whose class says ``epsilon_greedy``), act with the agent's ``PolicyWrapper``, step every
environment and restart the finished ones (``MarineNavEnv.step_and_reset``, no host read), and
hand the step to the agent's *learner* (``marinenav.training.learners``: the one its class
attribute ``learning`` names), which stores what it needs and takes the gradient updates due
through the run's :class:`~marinenav.training.updater.Updater`: the trainer's optimisers,
gradient clipping and target updates over the losses the agent declares. Target copies
(``updater.update_targets()``; with ``training.target_tau`` the updater takes a Polyak step
after every update instead), evaluations, checkpoints and metric read-backs happen when the
timestep counter crosses their intervals. The learning rates follow a linear decay to
``training.final_lr_fraction`` of their initial values over the budget (constant by
default). Every evaluation that matches or beats the best success so far writes the agent to
``best/checkpoint.pt`` (a policy snapshot: no replay, not resumable); with
``checkpoint.keep_evaluated`` every evaluated agent is kept in ``evaluated/<timestep>/``.
With ``training.policy_average_start`` the planner (what evaluations act with, snapshots and
``load_agent`` give) is the acting network's weight average over the end of the run
(``marinenav.training.averaging``); learning keeps the online network.
Metrics are accumulated as device tensors and read back once per logging interval. The
trainer knows agents only through that contract (``marinenav.agents.base``), never by name.

Accelerators (opt-in, TorchRL's sota ``compile`` / ``cudagraphs`` keys): ``compile=true``
compiles the environment step (``MarineNavEnv(compile_step=True)``), the acting network
(``agent.compile_policy()``) and the update (``updater.compile()``); ``cudagraphs=true``
replays the environment step and the update as CUDA graphs (CUDA only, refused at start-up
elsewhere). Eager is the default and the reference; the accelerated paths are tested equal to it.

Deviations from the original trainer (documented in ``docs/training.md``): timeouts are
truncations (bootstrapped), many environments run in parallel (so an interval may be crossed in
the middle of a batched step and is handled at its end), n-step returns are per robot.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDict, TensorDictBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.envs import transition
from marinenav.files import remove_leftovers, write_text
from marinenav.keys import (
    ACTIVE_KEY,
    DONE,
    FAILURES_KEY,
    INFO_KEY,
    REWARD_KEY,
    REWARD_TERMS_KEY,
    device_named,
)
from marinenav.run_files import EVALUATIONS_NAME
from marinenav.sim import InfoState
from marinenav.training.averaging import AVERAGE_KEY, PolicyAverage
from marinenav.training.checkpoint import (
    BEST_DIR,
    CHECKPOINT_NAME,
    EVALUATED_DIR,
    checkpoint_path,
    load_checkpoint,
    peek_checkpoint,
    refuse_snapshot,
    restore_agent,
    restore_random_streams,
    run_state,
    write_checkpoint,
)
from marinenav.training.config import crossed, layout_of, with_intervals
from marinenav.training.constraint import PricedTerm, make_priced_term
from marinenav.training.factory import build_agent, build_env, build_evaluator
from marinenav.training.learners import make_learner
from marinenav.training.loggers import make_logger, progress_bar, truncate_csv_logs
from marinenav.training.machine import record_session
from marinenav.training.rundir import (
    RunDirectoryLock,
    check_fresh_start,
    check_resumable,
    record_resume,
)
from marinenav.training.updater import Updater
from marinenav.training.validation import ConfigError, gpu_advice, no_update_warning, validate

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR2)  # Ctrl-C, kill / Slurm, submitit
# The trainer's record of a run: what it says to the user, and each evaluation. Under train.py,
# Hydra's job logging (conf/hydra/job_logging/marinenav.yaml) sends it to the run's train.log.
LOG = logging.getLogger(__name__)


def say(message: str, error: bool = False) -> None:
    """Tell the user ``message``: printed (stdout, or stderr for a stop), so a Trainer used
    from any script speaks, and written to :data:`LOG` (train.log under train.py, whose logging
    config keeps this logger off the terminal: each line shows once). A reader that went away
    (``python train.py | head -1``) does not stop the run: the stream is sent to /dev/null
    from then on, and the run's record stays in train.log."""
    LOG.log(logging.WARNING if error else logging.INFO, message)
    stream = sys.stderr if error else sys.stdout
    try:
        print(message, file=stream, flush=True)
    except BrokenPipeError:
        silence(stream)


def silence(stream) -> None:
    """Point ``stream``'s file descriptor at /dev/null (its reader is gone: later writes, and
    the flush at exit, would raise ``BrokenPipeError``)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def headline(metrics: dict[str, Any]) -> str:
    """An evaluation's overall metrics in one line (``return 0.02, success_rate 0.5, ...``;
    per-stage rates and absent values left out)."""
    return ", ".join(
        f"{name[5:]} {value:.3g}" for name, value in metrics.items()
        if name.startswith("eval/") and "stage" not in name and value is not None
    )  # fmt: skip


def quiet_torchrl() -> None:
    """torchrl announces routine steps at INFO in colour on every run ("Initialized
    LazyTensorStorage ..."); keep its warnings and errors only."""
    logging.getLogger("torchrl").setLevel(logging.WARNING)


class TrainingInterrupted(Exception):
    """Raised by :meth:`Trainer.train` after a stop signal, once the checkpoint is written."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum  # the shell's convention for a death by signal


class TrainingDiverged(RuntimeError):
    """A loss or parameter became NaN or infinite; the last finite checkpoint is kept."""


class StopSignals:
    """While active, SIGINT / SIGTERM / SIGUSR2 only record that a stop was asked for; the loop
    checks :attr:`signum` after each batched step. A second SIGINT exits at once.

    Under submitit (Hydra's submitit launcher) the handler it installed for SIGUSR2 (checkpoint
    and requeue) is kept in :attr:`requeue` and called once our checkpoint is written.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.requeue: Callable | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self  # signals are delivered to the main thread only
        previous_usr2 = signal.getsignal(signal.SIGUSR2)
        if callable(previous_usr2):
            self.requeue = previous_usr2
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame) -> None:
        if self.signum == signal.SIGINT and signum == signal.SIGINT:
            print("\nsecond interrupt: exiting now (the last written checkpoint is kept)",
                  file=sys.stderr, flush=True)  # fmt: skip
            os._exit(128 + signum)
        self.signum = signum


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return device_named(name, f"device={name}")


def linear_epsilon(timestep: int, cfg) -> float:
    """The original's schedule (docs/training.md, "Counting, and the defaults"):
    linear from initial to final over the first
    ``exploration_fraction`` of the budget, then constant."""
    progress = timestep / cfg.total_timesteps
    if progress >= cfg.exploration_fraction:
        return cfg.final_epsilon
    slope = (cfg.final_epsilon - cfg.initial_epsilon) / cfg.exploration_fraction
    return cfg.initial_epsilon + progress * slope


class Trainer:
    """Builds everything a run needs from its config and trains.

    Args:
        cfg: the run config (``marinenav.training.config.TrainConfig`` layout).
        run_dir: where logs, evaluations, scenarios and checkpoints go.
    """

    def __init__(self, cfg: DictConfig, run_dir: str | Path) -> None:
        validate(cfg)
        quiet_torchrl()
        # null evaluation / checkpoint intervals become a tenth of the budget (auto_interval),
        # recorded as such in the checkpoint's and the logger's config
        cfg = with_intervals(cfg)
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # the run owns its directory from here until train() ends (or the trainer is dropped)
        self.lock = RunDirectoryLock(self.run_dir)
        taken_over = self.lock.acquire()
        if taken_over:
            say(f"marinenav: {taken_over}", error=True)
        for directory in (self.run_dir, self.run_dir / BEST_DIR):  # of a run killed in a write
            remove_leftovers(directory)
        try:
            self._build()
        except BaseException:
            self.lock.release()
            raise
        weakref.finalize(self, self.lock.release)

    def _build(self) -> None:
        """Everything the run needs; refuses (nothing written) a directory holding another
        run's checkpoint, or a resume whose config does not fit its checkpoint."""
        cfg = self.cfg
        resume_from, changes = self._checkpoint_to_resume()  # fails before any write
        self.device = resolve_device(cfg.device)
        if cfg.threads > 0:  # small networks: more threads hand off more than they compute
            torch.set_num_threads(cfg.threads)
        layout = layout_of(cfg)
        torch.manual_seed(cfg.seed)
        self.agent = build_agent(cfg.agent, self.device, run_seed=cfg.seed)
        self.updater = Updater(self.agent, target_tau=cfg.training.get("target_tau", None))
        self.env = build_env(cfg, self.agent.action_kind, layout, self.device)
        self.learner = make_learner(self.agent, self.updater, cfg, self.device)
        self.policy_average = self._make_policy_average()
        self.evaluator = build_evaluator(cfg, self.agent, self.device)
        # the reward's terms (the paper's, then the layout's) and the layout's end conditions
        self.term_names = self.env.sim.reward_term_names
        self.end_names = self.env.sim.end_conditions
        # a mixed layout's parts (env.layout_part indexes them); empty for any other layout
        self.part_names = list(getattr(layout, "part_names", ()))
        self.priced = self._make_priced_term(self.part_names)
        self._ceiling_said = False  # the multiplier at its ceiling, said once (_warn_at_ceiling)
        scenarios = list(self.evaluator.evaluation_set.scenarios)
        write_text(self.run_dir / "eval_configs.json", json.dumps(scenarios))
        # Host-side counters (the loop's own arithmetic: never read from the device).
        self.timesteps = 0
        self.updates = 0
        # seconds spent in train() by this run over all its sessions (resumes add to it)
        self.wall_clock_before = 0.0
        self._session_started: float | None = None
        self.cpu_clock_before = 0.0
        self._session_cpu_started = 0.0
        self.evaluations: list[dict[str, Any]] = []
        # Device-side accumulators, read back once per logging interval.
        E, R = cfg.env.num_envs, cfg.env.robot_slots
        self.metrics = self._zero_metrics()
        self._updates_at_log = 0
        self.loss_sums: TensorDict | None = None
        self.episode_return = torch.zeros(E, dtype=torch.float64, device=self.device)
        self.reached = torch.zeros(E, R, dtype=torch.bool, device=self.device)
        self.collided = torch.zeros(E, dtype=torch.bool, device=self.device)
        # each reward term's sum over the episode so far [E, T] (T terms of term_names)
        self.episode_terms = torch.zeros(
            E, len(self.term_names), dtype=torch.float64, device=self.device
        )
        self.logger = make_logger(cfg.logger, self.run_dir, OmegaConf.to_container(cfg))
        # what a stop message tells the user to run (train.py sets the exact command line)
        self.resume_command = f"python train.py agent={cfg.agent.name} resume={self.run_dir}"
        self.td = self.env.reset()
        if resume_from is not None:
            self.load_checkpoint(resume_from)
        # the mixture part of each environment's running episode (per-part logs, a constraint
        # over one part), kept here: a step's reset has drawn the next episode's part by the
        # time the step is tracked
        self.episode_part = self.env.sim.scenario.layout_part.clone()
        if cfg.compile:  # after loading: a checkpoint's optimiser state resets capturable
            self.agent.compile_policy()
        if cfg.compile or cfg.cudagraphs:
            self.updater.compile(compile=cfg.compile, cudagraphs=cfg.cudagraphs)
        # evaluations.jsonl holds exactly the evaluations of the state the run continues from
        # (a run killed after an evaluation but before the next checkpoint repeats it)
        self._write_evaluations()
        if cfg.logger.backend == "csv":  # and the CSV logs the same: nothing after the state
            truncate_csv_logs(self.run_dir / "logs", self.timesteps, self.evaluations)
        if resume_from is not None:
            say(record_resume(self.run_dir, self.timesteps, resume_from, changes))
        record_session(self.run_dir, self.device, self.timesteps)  # the code and the machine
        warning = no_update_warning(cfg)
        if warning is not None:
            say(f"marinenav: {warning}", error=True)
        advice = gpu_advice(cfg, self.device)
        if advice is not None:
            say(f"marinenav: {advice}")

    def _make_policy_average(self) -> PolicyAverage | None:
        """The acting network's weight average from ``training.policy_average_start`` of the
        budget on (``None``: off; :mod:`marinenav.training.averaging`)."""
        training = self.cfg.training
        start = training.get("policy_average_start", None)
        if start is None:
            return None
        return PolicyAverage(self.agent.policy.selector,
                             start=round(start * training.total_timesteps),
                             interval=training.policy_average_interval)  # fmt: skip

    def _make_priced_term(self, part_names: list[str] | tuple[str, ...]) -> PricedTerm | None:
        """The reward term ``training.constraint`` prices, handed to the learner (``None``:
        off; :mod:`marinenav.training.constraint`). Refuses a term the run does not have, a
        part its mixture lacks (``part_names``: empty for a layout that is not a mixture) and an
        agent whose learner keeps no replay to re-price."""
        try:
            priced = make_priced_term(self.cfg.training.get("constraint", None),
                                      self.term_names, self.device, part_names)  # fmt: skip
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if priced is None:
            return None
        if not hasattr(self.learner, "price"):
            raise ConfigError(
                f"training.constraint.term={priced.term}: agent {self.cfg.agent.name} learns "
                f"on-policy ({self.agent.learning}), and only a replay learner re-prices its "
                "transitions; use an off-policy agent or training.constraint.term=null"
            )
        self.learner.price(priced)
        return priced

    def _average_state(self) -> dict[str, Any] | None:
        """The weight average's checkpoint entry (``None`` without one)."""
        return None if self.policy_average is None else self.policy_average.state_dict()

    def _zero_metrics(self) -> TensorDict:
        """The device accumulators read back at each log (float64, since the last log):
        finished episodes, successes, the sum of their per-robot returns, robot transitions,
        the reward summed over robots and steps, and each reward term's per-robot sum over the
        finished episodes (``reward_terms [T]``, ``term_names``' order) and the robots ended by
        each of the layout's end conditions (``failures [K]``, ``end_names``' order). A mixed
        layout adds the same per part (``part_names``' order): ``part_episodes [P]``,
        ``part_successes [P]`` and ``part_reward_terms [P, T]``."""
        zero = lambda *shape: torch.zeros(shape, dtype=torch.float64, device=self.device)  # noqa: E731
        P, T = len(self.part_names), len(self.term_names)
        per_part = {"part_episodes": zero(P), "part_successes": zero(P),
                    "part_reward_terms": zero(P, T)} if P else {}  # fmt: skip
        return TensorDict(
            {"episodes": zero(), "successes": zero(), "return_sum": zero(),
             "transitions": zero(), "reward_sum": zero(),
             "reward_terms": zero(T), "failures": zero(len(self.end_names)), **per_part},
            batch_size=[], device=self.device,
        )  # fmt: skip

    def _metric_labels(self, key: str) -> list[str]:
        """The labels of an accumulator's entries, flattened in its order (0-d: none)."""
        per_part_terms = [f"{part}.{term}" for part in self.part_names for term in self.term_names]
        return {"reward_terms": self.term_names, "failures": self.end_names,
                "part_episodes": self.part_names, "part_successes": self.part_names,
                "part_reward_terms": per_part_terms}.get(key, [])  # fmt: skip

    def _load_metrics(self, saved: dict | torch.Tensor) -> None:
        """Accumulators from a checkpoint; one of an earlier version is a packed ``[5]`` tensor
        of the first five, in order."""
        if isinstance(saved, torch.Tensor):
            saved = dict(zip(list(self.metrics.keys())[:5], saved.unbind(0), strict=True))
        for key, value in saved.items():
            self.metrics.get(key).copy_(value)

    # ------------------------------------------------------------------ the loop
    def train(self) -> dict[str, Any]:
        """Train until ``total_timesteps``; returns the last evaluation's metrics. A stop signal
        ends the run after the current batched step with a checkpoint and
        :class:`TrainingInterrupted`."""
        from tqdm.contrib.logging import logging_redirect_tqdm

        if not self.lock.held:  # trained before: own the directory again
            self.lock.acquire()
        try:
            started = self._session_started = time.perf_counter()
            self._session_cpu_started = time.process_time()
            # torchrl's INFO lines (storage allocation) print above the bar instead of through it
            with StopSignals() as stop, logging_redirect_tqdm([logging.getLogger("torchrl")]):
                final = self._train(stop)
            say(self.summary(time.perf_counter() - started))
        finally:
            self.lock.release()
        return final

    @property
    def wall_clock(self) -> float:
        """Seconds of training of this run so far, over every session (evaluations and
        checkpoints included, time between an interrupt and its resume not): the x axis of an
        equal-wall-clock comparison. Recorded as ``wall_clock_s`` in each evaluation."""
        if self._session_started is None:
            return self.wall_clock_before
        return self.wall_clock_before + time.perf_counter() - self._session_started

    @property
    def cpu_clock(self) -> float:
        """CPU seconds of this process (user + system, every thread) spent on this run so far,
        over every session: the time a run costs on a shared machine, where the wall clock
        counts the waits for a core too. Recorded as ``cpu_s`` in each evaluation."""
        if self._session_started is None:
            return self.cpu_clock_before
        return self.cpu_clock_before + time.process_time() - self._session_cpu_started

    def _train(self, stop: StopSignals) -> dict[str, Any]:
        cfg = self.cfg
        total, E = cfg.training.total_timesteps, cfg.env.num_envs
        say(f"marinenav: training {cfg.agent.name} in {self.run_dir} "
            f"from timestep {self.timesteps:,} to {total:,}; evaluation every "
            f"{cfg.evaluation.interval:,} from {cfg.evaluation.first:,}, checkpoint every "
            f"{cfg.checkpoint.interval:,}")  # fmt: skip
        bar = progress_bar(cfg.logger, total, self.timesteps)
        if bar is not None:
            bar.set_description("training")
        started, started_at = time.perf_counter(), self.timesteps
        while self.timesteps < total:
            before = self.timesteps
            self.step_environments()
            self.timesteps += E
            self.decay_learning_rate()
            self.learn()
            if self.policy_average is not None:
                self.policy_average.observe(before, self.timesteps)
            interval = cfg.training.target_update_interval
            hard_targets = cfg.training.get("target_tau", None) is None
            if hard_targets and crossed(before, self.timesteps, interval):
                self.updater.update_targets()
            if crossed(before, self.timesteps, cfg.evaluation.interval, cfg.evaluation.first):
                self.evaluate(bar)
            if crossed(before, self.timesteps, cfg.logger.interval):
                rate = (self.timesteps - started_at) / (time.perf_counter() - started)
                self.log_metrics(rate, bar)
            if crossed(before, self.timesteps, cfg.checkpoint.interval):
                self.save_checkpoint()
            if bar is not None:
                bar.update(self.timesteps - before)
            if stop.signum is not None:
                if bar is not None:
                    bar.close()
                self._stop(stop)
        if bar is not None:
            bar.close()
        if not self.evaluations or self.evaluations[-1]["timestep"] != self.timesteps:
            self.evaluate()
        self.save_checkpoint()
        return self.evaluations[-1]

    def summary(self, seconds: float) -> str:
        """What a finished run prints: final evaluation, wall clock, files, next commands."""
        final, run = self.evaluations[-1], self.run_dir
        metrics = headline(final)
        wall = datetime.timedelta(seconds=round(seconds))
        return "\n".join([
            f"marinenav: finished {self.cfg.agent.name} at timestep {self.timesteps:,} "
            f"in {wall} (this session)",
            f"  final evaluation ({len(final['episodes']['success'])} episodes): {metrics}",
            f"  checkpoint: {run / CHECKPOINT_NAME}",
            f"  evaluations: {run / EVALUATIONS_NAME}; logs: {run / 'logs'}",
            f"  evaluate: python -m marinenav.evaluate {run}",
            f"  plot: python -m marinenav.viz curves {run} --out {run / 'learning_curves.png'}",
        ])  # fmt: skip

    def _stop(self, stop: StopSignals) -> None:
        """Checkpoint, say where the run is and how to resume it, and end the run (or hand it
        to submitit's requeue, which exits)."""
        path = self.save_checkpoint()
        name = signal.Signals(stop.signum).name
        message = (f"{name}: stopped at timestep {self.timesteps:,} of "
                   f"{self.cfg.training.total_timesteps:,}, checkpoint {path}; "
                   f"resume with: {self.resume_command}")  # fmt: skip
        say(message, error=True)
        if stop.requeue is not None and stop.signum != signal.SIGINT:
            stop.requeue(signal.SIGUSR2, None)
        raise TrainingInterrupted(stop.signum, message)

    def step_environments(self) -> None:
        """One batched step: act, step, restart finished episodes, hand the step to the
        learner, track metrics."""
        if self.agent.epsilon_greedy:
            self.agent.policy.set_epsilon(linear_epsilon(self.timesteps, self.cfg.training))
        with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
            step_input = self.agent.policy(self.td)
            step_output, self.td = self.env.step_and_reset(step_input)
        self.learner.observe(transition(step_input, step_output))
        self._track_episodes(step_input, step_output)

    def decay_learning_rate(self) -> None:
        """Linear decay of every learning rate from its initial value (progress 0) to
        ``training.final_lr_fraction`` of it (the end of the budget); nothing when the fraction
        is 1 (the original's constant rate). Host arithmetic only."""
        final = self.cfg.training.get("final_lr_fraction", 1.0)
        if final == 1.0:
            return
        progress = min(self.timesteps / self.cfg.training.total_timesteps, 1.0)
        self.updater.set_lr_fraction(1.0 + (final - 1.0) * progress)

    def learn(self) -> None:
        """Let the learner take the updates due at the current timestep count; accumulate
        their losses (device tensors) for the next log."""
        losses, count = self.learner.learn(self.timesteps)
        if count == 0:
            return
        self.updates += count
        self.loss_sums = losses if self.loss_sums is None else self.loss_sums + losses

    def _track_episodes(self, step_input: TensorDictBase, step_output: TensorDictBase) -> None:
        """Episode counts, successes and returns, accumulated on the device."""
        info = step_output.get(INFO_KEY)
        reward = step_output.get(REWARD_KEY).squeeze(-1)
        done = step_output.get(DONE).squeeze(-1)
        self.episode_return += reward.sum(-1).double()
        self.episode_terms += step_output.get(REWARD_TERMS_KEY).sum(1).double()
        self.reached |= info == InfoState.REACH_GOAL
        self.collided |= (info == InfoState.COLLISION).any(-1)
        # padding and traffic are not the policy's robots: they neither arrive nor count
        empty = (info == InfoState.EMPTY_SLOT) | (info == InfoState.TRAFFIC)
        success = done & ~self.collided & (self.reached | empty).all(-1)
        robots = (~empty).sum(-1).clamp(min=1).double()
        m = self.metrics
        m.get("episodes").add_(done.sum())
        m.get("successes").add_(success.sum())
        m.get("return_sum").add_(torch.where(done, self.episode_return / robots, 0.0).sum())
        m.get("transitions").add_(step_input.get(ACTIVE_KEY).sum())
        m.get("reward_sum").add_(reward.sum())
        if self.end_names:
            failures = step_output.get(FAILURES_KEY)
            m.get("failures").add_(failures.sum(dim=(0, 1)))
        per_robot = self.episode_terms / robots.unsqueeze(-1)
        ended_terms = torch.where(done.unsqueeze(-1), per_robot, 0.0)
        m.get("reward_terms").add_(ended_terms.sum(0))
        if self.priced is not None:
            self.priced.observe_episodes(per_robot[:, self.priced.index], done, self.episode_part)
        if self.part_names:  # the same per part of the mixture, by each episode's own part
            part = self.episode_part
            m.get("part_episodes").index_add_(0, part, done.double())
            m.get("part_successes").index_add_(0, part, success.double())
            m.get("part_reward_terms").index_add_(0, part, ended_terms)
            part.copy_(self.env.sim.scenario.layout_part)  # the next step's running episodes
        self.episode_return.masked_fill_(done, 0.0)
        self.episode_terms.masked_fill_(done.unsqueeze(-1), 0.0)
        self.reached.masked_fill_(done.unsqueeze(-1), False)
        self.collided.masked_fill_(done, False)

    # ------------------------------------------------------------------ reporting
    def _warn_at_ceiling(self, multiplier: float, cost: float) -> None:
        """Say once per process when the constraint's multiplier has reached its ceiling (read
        from the values just logged: no read-back of its own). There the term's price no longer
        rises with its cost: the target is not met at the highest price the run allows."""
        if self._ceiling_said or multiplier < self.priced.ceiling:
            return
        self._ceiling_said = True
        LOG.warning(
            "training.constraint: the multiplier of %s reached its ceiling "
            "(training.constraint.max=%g) at timestep %d with a cost of %.3g per episode "
            "against the target %g: the target is not met at the highest price this run "
            "allows; a higher training.constraint.max or target, or a lower weight, moves it",
            self.priced.term, self.priced.ceiling, self.timesteps, cost, self.priced.target,
        )

    def log_metrics(self, timesteps_per_second: float, bar) -> dict[str, float]:
        """Read the accumulators back in one transfer, log them and reset them."""
        values, names = [], []
        for key, value in self.metrics.items():
            values.append(value.reshape(-1))
            labels = self._metric_labels(key)
            names += [key] if value.dim() == 0 else [f"{key}.{label}" for label in labels]
        if self.priced is not None:  # the multiplier now; the counted episodes' cost
            values += [value.reshape(1) for value in self.priced.log_values()]
            names += ["multiplier", "priced_cost", "priced_episodes"]
        kept = len(names)
        if self.loss_sums is not None:
            for key, value in self.loss_sums.items():
                values.append(value.detach().double().reshape(1))
                names.append(key)
        host = torch.cat(values).tolist()  # host: one read-back per logging interval
        raw = dict(zip(names, host, strict=True))
        broken = [name for name in names[kept:] if not math.isfinite(raw[name])]
        if broken:
            self._diverged(f"{broken[0]} is {raw[broken[0]]}")
        episodes = raw["episodes"]
        scalars = {
            "train/episodes": episodes,
            "train/success_rate": raw["successes"] / episodes if episodes else float("nan"),
            "train/episode_return": raw["return_sum"] / episodes if episodes else float("nan"),
            # the return's terms (they add up to it): which term drives behaviour
            **{f"train/reward_{name}": raw[f"reward_terms.{name}"] / episodes if episodes
               else float("nan") for name in self.term_names},
            # robots ended by each of the layout's end conditions (failures, as collisions)
            **{f"train/ended_{name}": raw[f"failures.{name}"] for name in self.end_names},
            "train/transitions": raw["transitions"],
            "train/timesteps_per_second": timesteps_per_second,
            "train/updates": float(self.updates),
        }
        for part in self.part_names:  # each part of a mixture on its own
            ended = raw[f"part_episodes.{part}"]
            scalars[f"train/{part}/episodes"] = ended
            scalars[f"train/{part}/success_rate"] = (
                raw[f"part_successes.{part}"] / ended if ended else math.nan
            )
            for name in self.term_names:
                value = raw[f"part_reward_terms.{part}.{name}"]
                scalars[f"train/{part}/reward_{name}"] = value / ended if ended else math.nan
        if self.priced is not None:
            term, counted = self.priced.term, raw["priced_episodes"]
            scalars[f"train/multiplier_{term}"] = raw["multiplier"]
            # the mean cost of the episodes that stepped it (its part's only, if it has one)
            scalars[f"train/cost_{term}"] = raw["priced_cost"] / counted if counted else math.nan
            self._warn_at_ceiling(raw["multiplier"], scalars[f"train/cost_{term}"])
        if self.agent.epsilon_greedy:
            scalars["train/epsilon"] = linear_epsilon(self.timesteps, self.cfg.training)
        if self.loss_sums is not None:
            interval_updates = max(self.updates - self._updates_at_log, 1)
            for key in self.loss_sums.keys():
                scalars[f"train/{key}"] = raw[key] / interval_updates
        for name, value in scalars.items():
            self.logger.log_scalar(name, value, step=self.timesteps)
        if bar is not None:
            bar.set_postfix(
                {"steps/s": f"{timesteps_per_second:.0f}",
                 "success": f"{scalars['train/success_rate']:.2f}",
                 **{k[6:]: f"{v:.3g}" for k, v in scalars.items() if k.startswith("train/loss")}},
                refresh=False,
            )  # fmt: skip
        self.metrics.zero_()
        if self.priced is not None:
            self.priced.reset_log()
        self.loss_sums = None
        self._updates_at_log = self.updates
        return scalars

    def evaluate(self, bar=None) -> dict[str, Any]:
        """Evaluate on the fixed set, log, and append to ``evaluations.jsonl``; the progress
        bar says so while it runs."""
        if bar is not None:
            bar.set_description(f"evaluating ({self.evaluator.env.num_envs} episodes)")
        self.agent.policy.eval()
        # the planner this run would give now: the weight average, once it has a sample
        average = self.policy_average
        with nullcontext() if average is None else average.acting():
            metrics = self.evaluator.run_with_encounters(self.agent.policy)
        self.agent.policy.train()
        if "colregs" in metrics:  # the count is logged; the per-target checks are evaluate's
            metrics.pop("encounters")
            metrics["eval/colregs_kept"] = metrics["colregs"]["kept"]
            metrics["eval/colregs_kept_sighted"] = metrics["colregs"]["kept_sighted"]
        if bar is not None:
            bar.set_description("training")
        metrics["timestep"] = self.timesteps
        metrics["wall_clock_s"] = round(self.wall_clock, 1)
        metrics["cpu_s"] = round(self.cpu_clock, 1)
        for name, value in metrics.items():
            if name.startswith("eval/") and value is not None:
                self.logger.log_scalar(name, value, step=self.timesteps)
        best = max((e["eval/success_rate"] for e in self.evaluations), default=-1.0)
        self.evaluations.append(metrics)
        self._write_evaluations()
        LOG.info("evaluation at timestep %s (%d episodes): %s", f"{self.timesteps:,}",
                 len(metrics["episodes"]["success"]), headline(metrics))  # fmt: skip
        if metrics["eval/success_rate"] >= best:  # ties: the later, longer-trained agent
            self.save_snapshot(self.run_dir / BEST_DIR)
        if self.cfg.checkpoint.get("keep_evaluated", False):
            self.save_snapshot(self.run_dir / EVALUATED_DIR / str(self.timesteps))
        return metrics

    def _write_evaluations(self) -> None:
        """``evaluations.jsonl``: one line per evaluation of :attr:`evaluations`, rewritten
        whole and atomically (a few kB), so a crash never leaves half a line."""
        lines = "".join(json.dumps(metrics) + "\n" for metrics in self.evaluations)
        write_text(self.run_dir / EVALUATIONS_NAME, lines)

    def save_snapshot(self, directory: Path) -> Path:
        """The agent as it is now (networks, optimisers, config, counters, the evaluations so
        far) in ``directory/checkpoint.pt``: what ``marinenav.export`` and
        ``marinenav.evaluate`` read, without the replay. Not resumable."""
        directory.mkdir(parents=True, exist_ok=True)
        state = run_state(
            OmegaConf.to_container(self.cfg, resolve=True), self.agent, self.updater,
            self._counters(), self.evaluations, average=self._average_state(),
        )  # fmt: skip
        return write_checkpoint(state, directory / CHECKPOINT_NAME)

    def _counters(self) -> dict[str, Any]:
        return {"timesteps": self.timesteps, "updates": self.updates,
                "wall_clock_s": self.wall_clock, "cpu_s": self.cpu_clock}  # fmt: skip

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_to_resume(self) -> tuple[Path | None, dict]:
        """The checkpoint to resume from and the config changes a resume records (``None``
        and ``{}`` for a fresh run). Reads only the checkpoint's config and flags: refuses a
        fresh run over an earlier run's checkpoint (unless ``overwrite``), a missing or
        unreadable checkpoint, a policy snapshot, and a config that does not fit."""
        resume = self.cfg.resume
        if resume is None or resume is False:
            check_fresh_start(self.run_dir, bool(self.cfg.get("overwrite", False)))
            return None, {}
        path = self.run_dir if resume is True or str(resume).lower() == "true" else Path(resume)
        try:
            path = checkpoint_path(path)
        except FileNotFoundError as error:
            raise FileNotFoundError(f"resume: {error}") from None
        saved = peek_checkpoint(path)
        refuse_snapshot(path, saved)
        current = OmegaConf.to_container(self.cfg, resolve=True)
        return path, check_resumable(path, saved["config"], current)

    def _diverged(self, what: str) -> None:
        path = self.run_dir / CHECKPOINT_NAME
        kept = (f"the last good checkpoint {path} is kept" if path.is_file()
                else "no checkpoint was written")  # fmt: skip
        message = (f"training diverged by timestep {self.timesteps:,}: {what}; stopped, {kept} "
                   "(try a lower agent.lr or agent.grad_clip_norm)")  # fmt: skip
        LOG.error(message)  # train.py prints it as the run's last line
        raise TrainingDiverged(message)

    def check_finite(self) -> None:
        """Raise :class:`TrainingDiverged` if a loss accumulated since the last log or a
        parameter is NaN or infinite (one read-back; called before each checkpoint write)."""
        flags = [torch.stack([p.detach().isfinite().all() for p in self.agent.parameters()]).all()]
        if self.loss_sums is not None:
            flags += [v.detach().isfinite().all() for v in self.loss_sums.values()]
        finite = torch.stack(flags).tolist()  # host: once per checkpoint
        if not finite[0]:
            self._diverged("a network parameter is not finite")
        if not all(finite):
            self._diverged(f"{list(self.loss_sums.keys())[finite[1:].index(False)]} is not finite")

    def save_checkpoint(self) -> Path:
        """Everything needed to continue this run exactly (atomic write); refuses to replace
        the last checkpoint by a diverged state."""
        self.check_finite()
        run = {
            "learner": self.learner.state_dict(),
            "simulator": self.env.sim.state_dict(),
            "trackers": {"metrics": self.metrics.to_dict(), "episode_return": self.episode_return,
                         "reached": self.reached, "collided": self.collided,
                         "episode_terms": self.episode_terms},
            "constraint": None if self.priced is None else self.priced.state_dict(),
        }  # fmt: skip
        state = run_state(
            OmegaConf.to_container(self.cfg, resolve=True), self.agent, self.updater,
            self._counters(), self.evaluations, run, average=self._average_state(),
        )  # fmt: skip
        return write_checkpoint(state, self.run_dir / CHECKPOINT_NAME)

    def load_checkpoint(self, path: Path) -> None:
        state = load_checkpoint(path, self.device)
        refuse_snapshot(path, state)
        saved = state["config"]
        if saved["agent"]["name"] != self.cfg.agent.name:
            raise ValueError(f"checkpoint {path} is of agent {saved['agent']['name']!r}, "
                             f"not {self.cfg.agent.name!r}")  # fmt: skip
        counters = state["counters"]
        restore_agent(state, self.agent, self.updater)
        self.learner.load_state_dict(state["learner"])
        if self.priced is not None and state.get("constraint") is not None:
            self.priced.load_state_dict(state["constraint"])
        self.env.sim.load_state_dict(state["simulator"])
        self.timesteps, self.updates = counters["timesteps"], counters["updates"]
        # checkpoints written by earlier versions lack wall_clock_s
        self.wall_clock_before = counters.get("wall_clock_s", 0.0)
        self.cpu_clock_before = counters.get("cpu_s", 0.0)
        self._updates_at_log = self.updates
        for name, value in state["trackers"].items():
            if name == "metrics":
                self._load_metrics(value)
            else:
                getattr(self, name).copy_(value)
        self.evaluations = state["evaluations"]
        if self.policy_average is not None and AVERAGE_KEY in state:
            self.policy_average.load_state_dict(state[AVERAGE_KEY])
        restore_random_streams(state, self.agent)
        self.td = self.env.observe()  # the next step's input, nothing restarted
