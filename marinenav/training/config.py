"""Typed configuration of a training run, registered in Hydra's ConfigStore.

``conf/config.yaml`` and the group files (``agent/``, ``env/``, ``curriculum/``, ``logger/``)
start from these schemas, so a misspelt key or a wrong type fails when the run starts.
:func:`validate` adds the checks Hydra cannot make (sizes, curriculum against slots).

Counting: one *timestep* is one environment step of one environment, the original's unit
(C2); a batched step of ``E`` environments is ``E`` timesteps. Schedules (learning start, target
copies, epsilon decay, evaluation, curriculum stages, total budget) are in timesteps, and the
number of gradient updates per timestep (``updates_per_timestep``) defaults to the original's
one update every 4 steps. A timestep adds one transition per active robot.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from marinenav.agents import AGENT_NAMES, agent_class
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule
from marinenav.training.loggers import LOGGER_BACKENDS


@dataclass
class EnvConf:
    num_envs: int = 16  # environments simulated in parallel (E)
    robot_slots: int = 5  # padded robot slots per environment (R)
    obstacle_slots: int = 4  # padded obstacle slots per environment
    core_slots: int = 0  # padded vortex-core slots per environment
    max_episode_steps: int = 1000  # the original's step limit (a truncation)
    dtype: str = "float32"  # simulation precision: float32 or float64


@dataclass
class CurriculumConf:
    timesteps: list[int] = field(default_factory=lambda: list(DEFAULT_TRAINING_SCHEDULE.timesteps))
    num_robots: list[int] = field(
        default_factory=lambda: list(DEFAULT_TRAINING_SCHEDULE.num_robots)
    )
    num_cores: list[int] = field(default_factory=lambda: list(DEFAULT_TRAINING_SCHEDULE.num_cores))
    num_obstacles: list[int] = field(
        default_factory=lambda: list(DEFAULT_TRAINING_SCHEDULE.num_obstacles)
    )
    min_start_goal_dis: list[float] = field(
        default_factory=lambda: list(DEFAULT_TRAINING_SCHEDULE.min_start_goal_dis)
    )
    eval_episodes_per_stage: int = 10  # fixed evaluation episodes generated for each stage


@dataclass
class TrainingConf:
    total_timesteps: int = 6_000_000  # budget in environment steps (summed over environments)
    learning_starts: int = 2_000  # timesteps collected before the first update
    updates_per_timestep: float = 0.25  # gradient updates per timestep (original: 1 per 4)
    batch_size: int = 64  # transitions per gradient update
    target_update_interval: int = 10_000  # timesteps between hard target copies
    # Polyak rate of the target networks per gradient update (null: the original's hard copies
    # every target_update_interval; FastTD3 0.1, PQL 0.05, TorchRL / BenchMARL 0.005)
    target_tau: Optional[float] = None  # noqa: UP045 (OmegaConf needs Optional)
    # learning rates decay linearly over the budget to this fraction of agent.lr (1: constant)
    final_lr_fraction: float = 1.0
    initial_epsilon: float = 0.6  # exploration rate at the start
    final_epsilon: float = 0.05  # exploration rate after the decay
    exploration_fraction: float = 0.25  # fraction of the budget over which epsilon decays
    replay_capacity: int = 1_000_000  # robot transitions kept in the replay


# Evaluations and checkpoints per run when their intervals are null (see auto_interval)
AUTO_INTERVALS_PER_RUN = 10


@dataclass
class EvaluationConf:
    # timesteps between evaluations (null: a tenth of the budget, auto_interval)
    interval: Optional[int] = 60_000  # noqa: UP045 (OmegaConf needs Optional)
    # timestep of the first evaluation (the original: at learning start; null: the interval)
    first: Optional[int] = 2_000  # noqa: UP045
    seed: int = 253  # seed of the fixed evaluation set (the original's eval env seed)
    max_steps: int = 1001  # step cap of an evaluation episode
    # a named set (training.evaluation.EVALUATION_SETS: paper = 10 per stage, seed 253; large =
    # 100 per stage, seed 2026) instead of curriculum.eval_episodes_per_stage and seed above
    set: Optional[str] = None  # noqa: UP045 (OmegaConf needs Optional)


@dataclass
class LoggerConf:
    backend: str = "csv"  # one of training.loggers.LOGGER_BACKENDS (TorchRL loggers)
    interval: int = 10_000  # timesteps between metric read-backs (one host transfer each)
    progress_bar: bool = True  # tqdm bar with steps/s, success rate and losses
    project: str = "marinenav"  # project / experiment name for wandb and mlflow


@dataclass
class CheckpointConf:
    # timesteps between checkpoints, also written at the end (null: a tenth of the budget)
    interval: Optional[int] = 60_000  # noqa: UP045 (OmegaConf needs Optional)
    save_replay: bool = True  # include the replay buffer (exact resume, larger files)
    # also keep the agent of every evaluation in evaluated/<timestep>/ (policy snapshots: no
    # replay, not resumable; for evaluating the last checkpoints on another set). The agent of
    # the best evaluation is always kept in best/.
    keep_evaluated: bool = False


@dataclass
class TrainConfig:
    # the agent group: ac_iqn | iqn | ddpg | dqn | sac | rainbow | td3 | mappo | ippo
    # (agent=<name>, a name of marinenav.agents.AGENT_NAMES; mappo and ippo learn on-policy
    # from rollouts)
    agent: Any = MISSING
    env: EnvConf = field(default_factory=EnvConf)
    curriculum: CurriculumConf = field(default_factory=CurriculumConf)
    logger: LoggerConf = field(default_factory=LoggerConf)
    training: TrainingConf = field(default_factory=TrainingConf)
    evaluation: EvaluationConf = field(default_factory=EvaluationConf)
    checkpoint: CheckpointConf = field(default_factory=CheckpointConf)
    # the recipe the run was composed with (set by conf/recipe/<name>.yaml; recipe=<name>)
    recipe: str = "paper"
    seed: int = 0  # run seed: environments, exploration; networks use seed + 100
    device: str = "auto"  # auto (CUDA when present), cpu, cuda or cuda:N
    threads: int = 1  # torch CPU threads (0: torch's default); see docs/benchmarks.md
    compile: bool = False  # torch.compile the env step, the acting network and the update
    cudagraphs: bool = False  # replay the env step and the update as CUDA graphs (CUDA only)
    resume: Any = None  # null, true (this run directory), or a run directory / checkpoint path
    # a fresh run may replace the checkpoint (and outputs) of an earlier run in its directory
    overwrite: bool = False


def agent_schema(name: str) -> type:
    """A dataclass with the agent's hyperparameters plus its ``name``."""
    config_class = agent_class(name).config_class
    return dataclasses.make_dataclass(
        f"{config_class.__name__}Schema",
        [("name", str, field(default=name))],
        bases=(config_class,),
    )


def register_configs() -> None:
    """Register the schemas with Hydra's ConfigStore (idempotent). They live in a ``schema/``
    group of their own, so they are never offered as choices (``agent=<name>_schema``); the
    yaml files start from them with ``/schema/<group>/<name>@_here_``."""
    store = ConfigStore.instance()
    store.store(name="train_schema", node=TrainConfig)
    for name in AGENT_NAMES:
        store.store(group="schema/agent", name=name, node=agent_schema(name))
    store.store(group="schema/env", name="env", node=EnvConf)
    store.store(group="schema/curriculum", name="curriculum", node=CurriculumConf)
    store.store(group="schema/logger", name="logger", node=LoggerConf)


def schedule_of(cfg) -> CurriculumSchedule:
    """The curriculum schedule of a run config."""
    c = cfg.curriculum
    return CurriculumSchedule(
        timesteps=list(c.timesteps), num_robots=list(c.num_robots), num_cores=list(c.num_cores),
        num_obstacles=list(c.num_obstacles), min_start_goal_dis=list(c.min_start_goal_dis),
    )  # fmt: skip


class ConfigError(ValueError):
    """A run config that cannot train; the message names the key, the value and what is
    allowed, in one line."""


# Working set of the simulator per (robot slot, object slot) pair of one environment, in bytes:
# measured peak of ``MarineNavEnv.reset`` (float32, CPU) at 50-200 robot slots, rounded up.
PAIR_BYTES = 600
TRANSITION_BYTES = 400  # one stored robot transition (observation, action, next observation, ...)
# One robot-step of an on-policy rollout ([E, T, R]) while the rollout learner learns from it:
# its storage (286 B), values and advantages, the critic's pass over the whole rollout and a
# minibatch's activations; measured peak 4.4-5.4 kB (MAPPO / IPPO, float32, CPU), rounded up.
ROLLOUT_STEP_BYTES = 6_000


def evaluation_layout(cfg) -> tuple[int, int]:
    """``(episodes per stage, seed)`` of the run's fixed evaluation set: the named
    ``evaluation.set``, else ``curriculum.eval_episodes_per_stage`` and ``evaluation.seed``."""
    from marinenav.training.evaluation import EVALUATION_SETS

    name = cfg.evaluation.set
    if name is None:
        return int(cfg.curriculum.eval_episodes_per_stage), int(cfg.evaluation.seed)
    if name not in EVALUATION_SETS:
        raise ValueError(
            f"evaluation.set={name!r} is not a named set; choose one of "
            f"{', '.join(EVALUATION_SETS)} (or null)"
        )
    return EVALUATION_SETS[name]


def learner_memory(cfg) -> tuple[int, str]:
    """Bytes of the learner's data, roughly, and the keys that size it: the replay storage
    (``training.replay_capacity``), or an on-policy rollout of ``env.num_envs x
    agent.rollout_steps x env.robot_slots`` robot-steps while it is learned from."""
    scale = 2 if cfg.env.dtype == "float64" else 1
    if agent_class(cfg.agent.name).learning == "rollout":
        steps = cfg.env.num_envs * cfg.agent.rollout_steps * cfg.env.robot_slots
        return steps * ROLLOUT_STEP_BYTES * scale, f"agent.rollout_steps={cfg.agent.rollout_steps}"
    capacity = cfg.training.replay_capacity
    return capacity * TRANSITION_BYTES * scale, f"training.replay_capacity={capacity}"


def memory_estimate(cfg) -> int:
    """Bytes a run needs on its device, roughly: simulator pairwise working set of the training
    environments and of the evaluation set (all its episodes run as one batch), and the
    learner's data (:func:`learner_memory`: the replay, or the on-policy rollout)."""
    e, c = cfg.env, cfg.curriculum
    objects = e.robot_slots + e.obstacle_slots + e.core_slots
    scale = 2 if e.dtype == "float64" else 1
    environments = e.num_envs + evaluation_layout(cfg)[0] * len(c.timesteps)
    simulation = environments * e.robot_slots * objects * PAIR_BYTES * scale
    return simulation + learner_memory(cfg)[0]


def available_memory(device: str) -> int | None:
    """Free bytes on the run's device (CUDA: free device memory; CPU: the kernel's
    MemAvailable), or ``None`` where it cannot be told."""
    if device.startswith("cuda") or (device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            return None
        index = torch.device(device).index if device.startswith("cuda:") else None
        return torch.cuda.mem_get_info(index)[0]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_known_keys(cfg: DictConfig, prefix: str = "") -> None:
    """Every key of a schema-typed node is a field of its schema: ``+foo=1`` (which Hydra lets
    through struct mode) or ``+training.batchsize=3`` fail here."""
    schema = OmegaConf.get_type(cfg)
    if dataclasses.is_dataclass(schema):
        fields = {f.name for f in dataclasses.fields(schema)}
        for key in cfg.keys():
            if key not in fields:
                where = prefix.rstrip(".") or "the config"
                raise ConfigError(
                    f"unknown key {prefix}{key}: {where} has {', '.join(sorted(fields))}"
                )
    for key in cfg.keys():
        node = cfg._get_node(key)
        if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():
            check_known_keys(node, f"{prefix}{key}.")


def check_cudagraphs(cfg) -> None:
    """``cudagraphs=true`` needs a CUDA device and an agent whose update a graph can capture."""
    device = cfg.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() or not str(device).startswith("cuda"):
        found = f"device={device}" if torch.cuda.is_available() else "no CUDA device is available"
        raise ConfigError(
            f"cudagraphs=true needs a CUDA device, but {found}; run with cudagraphs=false "
            "(compile=true is the CPU accelerator)"
        )
    if not agent_class(cfg.agent.name).cudagraph_update:
        raise ConfigError(
            f"cudagraphs=true: agent {cfg.agent.name}'s update cannot be one CUDA graph (it "
            "draws from a random generator of its own, or branches on Python state); use "
            "compile=true alone"
        )


def check_budget(cfg) -> None:
    """``training.total_timesteps`` is a whole number of batched steps (``env.num_envs``
    timesteps each), at least one: the trainer steps every environment at once and stops at
    the first multiple of ``env.num_envs`` that reaches the budget."""
    total, num_envs = cfg.training.total_timesteps, cfg.env.num_envs
    if total < num_envs:
        raise ConfigError(
            f"training.total_timesteps={total} is less than one batched step of "
            f"env.num_envs={num_envs} timesteps; raise training.total_timesteps or lower "
            "env.num_envs"
        )
    if total % num_envs:
        below = total - total % num_envs
        raise ConfigError(
            f"training.total_timesteps={total} is not a whole number of batched steps of "
            f"env.num_envs={num_envs} timesteps; use {below} or {below + num_envs}"
        )


def auto_interval(cfg) -> int:
    """The interval a null ``evaluation.interval`` or ``checkpoint.interval`` takes: a tenth
    (:data:`AUTO_INTERVALS_PER_RUN`) of ``training.total_timesteps``, rounded up to whole batched
    steps of ``env.num_envs`` timesteps (the trainer only stops at those). Rounding up keeps
    the count at most 10 (the end of the run adds its own evaluation and checkpoint): 80,000 for
    the fast recipe's 800,000 timesteps of 16 environments, 5,008 for 50,000. So a short run
    still has a learning curve and checkpoints to resume from, whatever its budget."""
    total, num_envs = cfg.training.total_timesteps, cfg.env.num_envs
    return num_envs * math.ceil(total / (AUTO_INTERVALS_PER_RUN * num_envs))


def run_intervals(cfg) -> dict[str, int]:
    """The evaluation and checkpoint schedule a run uses: ``evaluation.interval``,
    ``evaluation.first`` and ``checkpoint.interval`` as set, a null interval replaced by
    :func:`auto_interval` and a null ``evaluation.first`` by the evaluation interval. A value
    the user (or the recipe) sets always wins; ``recipe=paper`` sets all three."""
    auto = auto_interval(cfg)
    evaluation = cfg.evaluation.interval if cfg.evaluation.interval is not None else auto
    first = cfg.evaluation.first if cfg.evaluation.first is not None else evaluation
    checkpoint = cfg.checkpoint.interval if cfg.checkpoint.interval is not None else auto
    return {
        "evaluation.interval": int(evaluation),
        "evaluation.first": int(first),
        "checkpoint.interval": int(checkpoint),
    }


def with_intervals(cfg):
    """A copy of ``cfg`` whose null intervals are filled in (:func:`run_intervals`), so that the
    trainer, its checkpoints and its logger record the schedule the run used; ``cfg`` itself is
    not changed."""
    filled = copy.deepcopy(cfg)
    values = run_intervals(cfg)
    filled.evaluation.interval = values["evaluation.interval"]
    filled.evaluation.first = values["evaluation.first"]
    filled.checkpoint.interval = values["checkpoint.interval"]
    return filled


def check_agent_options(cfg) -> None:
    """The agent's hyperparameters pass its config class's range checks (built here, as the
    trainer will build it, so that ``agent.gamma=1.5`` fails before the run starts); raises
    :class:`ConfigError` naming ``agent.<key>``."""
    values = dict(OmegaConf.to_container(cfg.agent, resolve=True))
    values.pop("name")
    try:
        agent_class(cfg.agent.name).config_class(**values)
    except ValueError as error:
        raise ConfigError(str(error)) from error


def validate(cfg) -> None:
    """Checks Hydra cannot make; raises :class:`ConfigError` naming the key, before any
    training."""
    try:
        _validate(cfg)
    except ConfigError:
        raise
    except ValueError as error:  # schedule checks of the simulator
        raise ConfigError(str(error)) from error


def _validate(cfg) -> None:
    if isinstance(cfg, DictConfig):
        check_known_keys(cfg)
    if cfg.agent.name not in AGENT_NAMES:
        raise ConfigError(f"unknown agent {cfg.agent.name!r}; choose one of {AGENT_NAMES}")
    # the replay keys (epsilon keys) are checked only for agents that learn from the replay
    # (explore epsilon-greedily): the others never read them (docs/training.md)
    cls = agent_class(cfg.agent.name)
    check_agent_options(cfg)
    replay = cls.learning == "replay"
    positive = {
        "env.num_envs": cfg.env.num_envs,
        "env.robot_slots": cfg.env.robot_slots,
        "env.max_episode_steps": cfg.env.max_episode_steps,
        "training.total_timesteps": cfg.training.total_timesteps,
        "training.target_update_interval": cfg.training.target_update_interval,
        "evaluation.max_steps": cfg.evaluation.max_steps,
        "logger.interval": cfg.logger.interval,
        "curriculum.eval_episodes_per_stage": cfg.curriculum.eval_episodes_per_stage,
    }
    intervals = {
        "evaluation.interval": cfg.evaluation.interval,
        "checkpoint.interval": cfg.checkpoint.interval,
    }
    positive.update({k: v for k, v in intervals.items() if v is not None})  # null: auto_interval
    if replay:
        positive["training.batch_size"] = cfg.training.batch_size
        positive["training.replay_capacity"] = cfg.training.replay_capacity
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{key} must be positive, got {value}")
    check_budget(cfg)
    non_negative = {
        "env.obstacle_slots": cfg.env.obstacle_slots,
        "env.core_slots": cfg.env.core_slots,
        "threads": cfg.threads,
    }
    if cfg.evaluation.first is not None:  # null: the evaluation interval
        non_negative["evaluation.first"] = cfg.evaluation.first
    if replay:
        non_negative["training.learning_starts"] = cfg.training.learning_starts
        non_negative["training.updates_per_timestep"] = cfg.training.updates_per_timestep
    for key, value in non_negative.items():
        if value < 0:
            raise ConfigError(f"{key} must not be negative, got {value}")
    tau = cfg.training.target_tau
    if replay and tau is not None and not 0.0 < tau <= 1.0:
        raise ConfigError(f"training.target_tau must be in (0, 1] or null, got {tau}")
    fraction = cfg.training.final_lr_fraction
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"training.final_lr_fraction must be in [0, 1], got {fraction}")
    epsilon_keys = ("initial_epsilon", "final_epsilon", "exploration_fraction")
    for key in epsilon_keys if cls.epsilon_greedy else ():
        value = getattr(cfg.training, key)
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"training.{key} must be in [0, 1], got {value}")
    if cfg.env.dtype != "float32":
        # the networks are float32; a float64 simulator is for marinenav.envs and evaluation
        raise ConfigError(
            f"env.dtype={cfg.env.dtype} cannot train: training runs the simulator in float32 "
            "(float64 simulation is available through marinenav.envs.MarineNavEnv)"
        )
    if cfg.cudagraphs:
        check_cudagraphs(cfg)
    if cfg.get("overwrite", False) and cfg.resume not in (None, False):
        raise ConfigError(
            f"overwrite=true replaces the run directory's checkpoint, resume={cfg.resume} "
            "continues it: choose one"
        )
    if cfg.logger.backend not in LOGGER_BACKENDS:
        raise ConfigError(f"logger.backend must be one of {', '.join(LOGGER_BACKENDS)}, "
                          f"got {cfg.logger.backend!r}")  # fmt: skip
    schedule = schedule_of(cfg)  # raises on malformed stages
    for stage, robots in enumerate(schedule.num_robots):
        if robots < 1:
            raise ConfigError(
                f"curriculum.num_robots[{stage}] must be at least 1 (every episode needs a "
                f"robot), got {robots}"
            )
    schedule.check_slots(cfg.env.robot_slots, cfg.env.obstacle_slots, cfg.env.core_slots)
    needed = cfg.env.num_envs * cfg.env.robot_slots * 4
    if replay and cfg.training.replay_capacity < needed:
        raise ConfigError(
            f"training.replay_capacity must hold at least {needed} transitions "
            f"(4 steps of every robot slot), got {cfg.training.replay_capacity}"
        )
    estimate, available = memory_estimate(cfg), available_memory(cfg.device)
    if available is not None and estimate > available // 2:
        raise ConfigError(
            f"env.num_envs={cfg.env.num_envs}, env.robot_slots={cfg.env.robot_slots} and "
            f"{learner_memory(cfg)[1]} need about "
            f"{estimate / 2**30:.1f} GiB, more than half of the {available / 2**30:.1f} GiB "
            "free on the device: lower them"
        )
