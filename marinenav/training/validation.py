"""Start-up checks of a run config, the ones Hydra's typed schema cannot make: known keys,
positive sizes, ranges of the trainer's and the agent's options, the curriculum against the
slots, a budget of whole batched steps, the CUDA-graph preconditions, and whether the run's
memory fits the device. Each failure is a :class:`ConfigError` whose one-line message names
the key, the value and what is allowed; ``train.py`` prints it as ``error: ...`` and exits 2
before any run directory is written.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from omegaconf import DictConfig, OmegaConf

from marinenav.agents import AGENT_NAMES, agent_class
from marinenav.agents.base import cudagraph_refusal
from marinenav.keys import check_seed, device_named
from marinenav.scenarios import RandomLayout, check_slots
from marinenav.training.config import layout_of, schedule_of
from marinenav.training.evaluation import EvaluationSet
from marinenav.training.loggers import LOGGER_BACKENDS


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

GPU_ENVS = 256  # below this many environments a batched step leaves a GPU mostly idle


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
    e = cfg.env
    objects = e.robot_slots + e.obstacle_slots + e.core_slots
    scale = 2 if e.dtype == "float64" else 1
    environments = e.num_envs + EvaluationSet.size_of_run(cfg)
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
    """``cudagraphs=true`` needs a CUDA device and an agent whose update a graph can capture
    (:func:`marinenav.agents.base.cudagraph_refusal`)."""
    device = cfg.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        device = None
    refusal = cudagraph_refusal(agent_class(cfg.agent.name), device)
    if refusal is not None:
        raise ConfigError(refusal)


def nearest_divisor(total: int, start: int, step: int) -> int:
    """The first number of environments from ``start``, counting by ``step`` (+1 up, -1 down),
    that divides ``total`` timesteps into whole batched steps (1 and ``total`` always do)."""
    end = total + 1 if step > 0 else 0
    return next(n for n in range(start, end, step) if total % n == 0)


def check_budget(cfg) -> None:
    """``training.total_timesteps`` is a whole number of batched steps (``env.num_envs``
    timesteps each), at least one: the trainer steps every environment at once and stops at
    the first multiple of ``env.num_envs`` that reaches the budget. The refusal names the
    nearest budgets and the nearest numbers of environments that divide it."""
    total, num_envs = cfg.training.total_timesteps, cfg.env.num_envs
    if total < num_envs:
        raise ConfigError(
            f"training.total_timesteps={total} is less than one batched step of "
            f"env.num_envs={num_envs} timesteps; raise training.total_timesteps or lower "
            "env.num_envs"
        )
    if total % num_envs:
        below = total - total % num_envs
        fewer = nearest_divisor(total, num_envs - 1, -1)
        more = nearest_divisor(total, num_envs + 1, 1)
        raise ConfigError(
            f"training.total_timesteps={total} is not a whole number of batched steps of "
            f"env.num_envs={num_envs} timesteps; use {below} or {below + num_envs}, or "
            f"env.num_envs={fewer} or {more}"
        )


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


def expected_updates(cfg) -> int:
    """Gradient updates a run of a replay agent will take (the learner's arithmetic,
    ``marinenav.training.learners.ReplayLearner``): from the first batched step ``k0`` at which
    ``training.learning_starts`` timesteps are collected and the replay holds complete
    ``agent.n_step`` transitions, ``updates_per_timestep`` per timestep to the budget's end."""
    num_envs, training = cfg.env.num_envs, cfg.training
    steps = training.total_timesteps // num_envs
    first = max(math.ceil(training.learning_starts / num_envs), int(cfg.agent.get("n_step", 1)))
    if steps < first:
        return 0
    return math.floor((steps - first + 1) * num_envs * training.updates_per_timestep)


def no_update_warning(cfg) -> str | None:
    """A one-line warning when a replay agent's run would take no gradient update at all
    (a budget that ends before ``learning_starts``, say), or ``None``: such a run finishes
    with the untrained agent, which nothing else would tell. An explicit
    ``updates_per_timestep=0`` is not warned about."""
    if agent_class(cfg.agent.name).learning != "replay":
        return None
    if cfg.training.updates_per_timestep == 0 or expected_updates(cfg) > 0:
        return None
    return (
        f"warning: this run takes no gradient update: training.total_timesteps="
        f"{cfg.training.total_timesteps} ends before the first (updates start once "
        f"training.learning_starts={cfg.training.learning_starts} timesteps are collected and "
        f"the replay holds complete {cfg.agent.get('n_step', 1)}-step transitions, at "
        f"training.updates_per_timestep={cfg.training.updates_per_timestep}); the agent stays "
        "untrained"
    )


def gpu_advice(cfg, device: torch.device) -> str | None:
    """A one-line hint when a run on a CUDA device takes the slow path, or ``None`` (a CPU run,
    or neither holds): updates replayed eagerly where CUDA graphs could capture them (an eager
    AC-IQN update on an H100, about 12 ms of small kernel launches, is no faster than one CPU
    core's), or few environments (each batched step then leaves the GPU idle). The default
    recipe with ``cudagraphs=true env.num_envs=320`` trains in 4-5 minutes on an H200
    (docs/training.md, "Accelerators")."""
    if device.type != "cuda":
        return None
    tips = []
    if not cfg.cudagraphs and cudagraph_refusal(agent_class(cfg.agent.name), device) is None:
        tips.append("cudagraphs=true (eager updates are no faster than one CPU core's)")
    total = cfg.training.total_timesteps
    if cfg.env.num_envs < GPU_ENVS <= total:
        tips.append(
            f"env.num_envs of a few hundred instead of {cfg.env.num_envs} (a divisor of "
            f"training.total_timesteps={total}, e.g. {nearest_divisor(total, GPU_ENVS, 1)})"
        )
    if not tips:
        return None
    where = 'docs/training.md, "Accelerators"'
    return f"hint: this GPU run takes the slow path; add {' and '.join(tips)} ({where})"


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
    if replay and not math.isfinite(cfg.training.updates_per_timestep):  # nan passes "< 0"
        raise ConfigError(f"training.updates_per_timestep must be finite, got "
                          f"{cfg.training.updates_per_timestep}")  # fmt: skip
    for key, value in (("seed", cfg.seed), ("evaluation.seed", cfg.evaluation.seed)):
        check_seed(value, key)
    tau = cfg.training.target_tau
    if replay and tau is not None and not 0.0 < tau <= 1.0:
        raise ConfigError(f"training.target_tau must be in (0, 1] or null, got {tau}")
    fraction = cfg.training.final_lr_fraction
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"training.final_lr_fraction must be in [0, 1], got {fraction}")
    average_start = cfg.training.policy_average_start
    if average_start is not None and not 0.0 <= average_start < 1.0:
        raise ConfigError(f"training.policy_average_start must be in [0, 1) or null, "
                          f"got {average_start}")  # fmt: skip
    if cfg.training.policy_average_interval <= 0:
        raise ConfigError(f"training.policy_average_interval must be positive, "
                          f"got {cfg.training.policy_average_interval}")  # fmt: skip
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
    if cfg.device != "auto":  # one line naming device=, before anything is built on it
        device_named(cfg.device, f"device={cfg.device}")
    if cfg.get("overwrite", False) and cfg.resume not in (None, False):
        raise ConfigError(
            f"overwrite=true replaces the run directory's checkpoint, resume={cfg.resume} "
            "continues it: choose one"
        )
    if cfg.logger.backend not in LOGGER_BACKENDS:
        raise ConfigError(f"logger.backend must be one of {', '.join(LOGGER_BACKENDS)}, "
                          f"got {cfg.logger.backend!r}")  # fmt: skip
    slots = (cfg.env.robot_slots, cfg.env.obstacle_slots, cfg.env.core_slots)
    layout = layout_of(cfg)  # raises on bad options
    if isinstance(layout, RandomLayout):  # the curriculum is the layout's: check its stages
        schedule = schedule_of(cfg)  # raises on malformed stages
        for stage, robots in enumerate(schedule.num_robots):
            if robots < 1:
                raise ConfigError(
                    f"curriculum.num_robots[{stage}] must be at least 1 (every episode needs a "
                    f"robot), got {robots}"
                )
        schedule.check_slots(slots)
    try:
        check_slots(layout, slots)  # a files layout reads and checks its files here
    except FileNotFoundError as error:
        raise ConfigError(f"scenario.paths: {error}") from error
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
