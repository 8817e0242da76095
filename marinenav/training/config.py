"""Typed configuration of a training run, registered in Hydra's ConfigStore.

``conf/config.yaml`` and the group files (``agent/``, ``env/``, ``curriculum/``, ``scenario/``,
``logger/``) start from these schemas, so a misspelt key or a wrong type fails when the run
starts. The run's values live in one place, the YAML files: the schemas here give each key its
type and meaning and no value (``MISSING``: a key no file sets fails when read). An agent's and
a scenario layout's options are the exception: their dataclasses (``<Agent>.config_class``,
``<Layout>.Config``) are used from Python directly and hold the defaults, and
their YAML files only select them (``tests/test_house.py`` checks that none repeats a default).
:mod:`marinenav.training.provenance` tells which file set each value (``--explain KEY``).
:func:`marinenav.training.validation.validate` adds the checks Hydra cannot make (sizes,
curriculum against slots).

Counting (docs/training.md, "Counting, and the defaults"): one *timestep* is one environment
step of one environment, the original's unit; a batched step of ``E`` environments is ``E``
timesteps. Schedules (learning start, target copies, epsilon decay, evaluation, curriculum
stages, total budget) are in timesteps, and the number of gradient updates per timestep
(``updates_per_timestep``) defaults to the original's one update every 4 steps. A timestep adds
one transition per active robot.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from marinenav.agents import AGENT_NAMES, agent_class
from marinenav.scenarios import LAYOUTS, ScenarioLayout, layout_class, make_layout
from marinenav.sim.curriculum import CurriculumSchedule
from marinenav.sim.scenario import Slots


@dataclass
class EnvConf:
    num_envs: int = MISSING  # environments simulated in parallel (E)
    robot_slots: int = MISSING  # padded robot slots per environment (R)
    obstacle_slots: int = MISSING  # padded obstacle slots per environment
    core_slots: int = MISSING  # padded vortex-core slots per environment
    max_episode_steps: int = MISSING  # the original's step limit (a truncation)
    dtype: str = MISSING  # simulation precision: float32 or float64


@dataclass
class CurriculumConf:
    timesteps: list[int] = MISSING  # stage starts, in timesteps (the first is 0)
    num_robots: list[int] = MISSING  # robots per episode, per stage
    num_cores: list[int] = MISSING  # vortex cores per episode, per stage
    num_obstacles: list[int] = MISSING  # static obstacles per episode, per stage
    min_start_goal_dis: list[float] = MISSING  # m between start and goal, per stage
    eval_episodes_per_stage: int = MISSING  # fixed evaluation episodes generated for each stage


@dataclass
class ConstraintConf:
    # a reward term priced by a Lagrange multiplier (marinenav.training.constraint): the term's
    # name (train/reward_<term> in the logs); null: off, every term at its configured weight
    term: Optional[str] = MISSING  # noqa: UP045 (OmegaConf needs Optional)
    target: float = MISSING  # allowed mean cost per episode: minus the term's sum, per robot
    lr: float = MISSING  # multiplier step per finished episode, per unit of cost above target
    initial: float = MISSING  # the multiplier at the start (1: the term's configured weight)
    max: float = MISSING  # the multiplier's ceiling
    # a mixed layout's part (scenario=mix) whose episodes alone step the multiplier; null: all
    part: Optional[str] = MISSING  # noqa: UP045 (OmegaConf needs Optional)


@dataclass
class TrainingConf:
    total_timesteps: int = MISSING  # budget in environment steps (summed over environments)
    learning_starts: int = MISSING  # timesteps collected before the first update
    updates_per_timestep: float = MISSING  # gradient updates per timestep (original: 1 per 4)
    batch_size: int = MISSING  # transitions per gradient update
    target_update_interval: int = MISSING  # timesteps between hard target copies
    # Polyak rate of the target networks per gradient update (null: the original's hard copies
    # every target_update_interval; FastTD3 0.1, PQL 0.05, TorchRL / BenchMARL 0.005)
    target_tau: Optional[float] = MISSING  # noqa: UP045 (OmegaConf needs Optional)
    # learning rates decay linearly over the budget to this fraction of agent.lr (1: constant)
    final_lr_fraction: float = MISSING
    # the planner is the acting network's weights averaged (SWA) from this fraction of the
    # budget on (null: the last network; marinenav.training.averaging)
    policy_average_start: Optional[float] = MISSING  # noqa: UP045
    policy_average_interval: int = MISSING  # timesteps between samples of that average
    initial_epsilon: float = MISSING  # exploration rate at the start
    final_epsilon: float = MISSING  # exploration rate after the decay
    exploration_fraction: float = MISSING  # fraction of the budget over which epsilon decays
    replay_capacity: int = MISSING  # robot transitions kept in the replay
    # one reward term as a constraint, its weight set by the run (off-policy agents only)
    constraint: ConstraintConf = MISSING


# Evaluations and checkpoints per run when their intervals are null (see auto_interval)
AUTO_INTERVALS_PER_RUN = 10


@dataclass
class EvaluationConf:
    # timesteps between evaluations (null: a tenth of the budget, auto_interval)
    interval: Optional[int] = MISSING  # noqa: UP045 (OmegaConf needs Optional)
    # timestep of the first evaluation (the original: at learning start; null: the interval)
    first: Optional[int] = MISSING  # noqa: UP045
    # seed of the fixed evaluation set and of its perception noise (the original's eval env seed)
    seed: int = MISSING
    max_steps: int = MISSING  # step cap of an evaluation episode
    # a named set (training.evaluation.SET_NAMES: paper = 10 per stage, seed 253; large = 100
    # per stage, seed 2026; of the random layout, the paper curriculum's) instead of
    # curriculum.eval_episodes_per_stage and seed above; its seed then seeds the noise
    set: Optional[str] = MISSING  # noqa: UP045 (OmegaConf needs Optional)


@dataclass
class LoggerConf:
    backend: str = MISSING  # one of training.loggers.LOGGER_BACKENDS (TorchRL loggers)
    interval: int = MISSING  # timesteps between metric read-backs (one host transfer each)
    progress_bar: bool = MISSING  # tqdm bar with steps/s, success rate and losses
    project: str = MISSING  # project / experiment name for wandb and mlflow


@dataclass
class CheckpointConf:
    # timesteps between checkpoints, also written at the end (null: a tenth of the budget)
    interval: Optional[int] = MISSING  # noqa: UP045 (OmegaConf needs Optional)
    save_replay: bool = MISSING  # include the replay buffer (exact resume, larger files)
    # also keep the agent of every evaluation in evaluated/<timestep>/ (policy snapshots: no
    # replay, not resumable; for evaluating the last checkpoints on another set). The agent of
    # the best evaluation is always kept in best/.
    keep_evaluated: bool = MISSING


@dataclass
class TrainConfig:
    # the agent group: ac_iqn | iqn | ddpg | dqn | sac | rainbow | td3 | mappo | ippo
    # (agent=<name>, a name of marinenav.agents.AGENT_NAMES; mappo and ippo learn on-policy
    # from rollouts)
    agent: Any = MISSING
    # the scenario layout group: random (the curriculum's, the default) | files | harbour
    # (scenario=<name>, a name of marinenav.scenarios.LAYOUTS; its options under scenario.*)
    scenario: Any = MISSING
    env: EnvConf = field(default_factory=EnvConf)
    curriculum: CurriculumConf = field(default_factory=CurriculumConf)
    logger: LoggerConf = field(default_factory=LoggerConf)
    training: TrainingConf = field(default_factory=TrainingConf)
    evaluation: EvaluationConf = field(default_factory=EvaluationConf)
    checkpoint: CheckpointConf = field(default_factory=CheckpointConf)
    # the recipe the run was composed with (set by conf/recipe/<name>.yaml; recipe=<name>)
    recipe: str = MISSING
    seed: int = MISSING  # run seed: environments, exploration; networks use seed + 100
    # several seeds in one job, one after another, in <run dir>/seed<N>; the job returns the mean
    # of their final success rates (a tuning trial scored on several seeds;
    # marinenav.training.seeds). null: one run of ``seed``
    seeds: Optional[list[int]] = MISSING  # noqa: UP045 (OmegaConf needs Optional)
    device: str = MISSING  # auto (CUDA when present), cpu, cuda or cuda:N
    threads: int = MISSING  # torch CPU threads (0: torch's default); see docs/benchmarks.md
    compile: bool = MISSING  # torch.compile the env step, the acting network and the update
    cudagraphs: bool = MISSING  # replay the env step and the update as CUDA graphs (CUDA only)
    resume: Any = MISSING  # null, true (this run directory), or a run directory / checkpoint path
    # a fresh run may replace the checkpoint (and outputs) of an earlier run in its directory
    overwrite: bool = MISSING


def named_schema(config_class: type, name: str) -> type:
    """``config_class`` (a dataclass of options) plus a ``name`` field defaulting to ``name``:
    the schema of a group file that selects ``name`` (an agent, a scenario layout)."""
    return dataclasses.make_dataclass(
        f"{config_class.__name__}Schema",
        [("name", str, field(default=name))],
        bases=(config_class,),
    )


def agent_schema(name: str) -> type:
    """A dataclass with the agent's hyperparameters plus its ``name``."""
    return named_schema(agent_class(name).config_class, name)


def layout_schema(name: str) -> type:
    """A dataclass with the scenario layout's options plus its ``name``."""
    return named_schema(layout_class(name).Config, name)


def register_configs() -> None:
    """Register the schemas with Hydra's ConfigStore, once per process (a later call finds
    them there and returns: storing them again took 0.2-0.3 s, paid by every composed config of
    the tests and every forked ``train.py``). They live in a ``schema/`` group of their own, so
    they are never offered as choices (``agent=<name>_schema``); the yaml files start from them
    with ``/schema/<group>/<name>@_here_``."""
    store = ConfigStore.instance()
    if "train_schema.yaml" in store.repo:  # stored last: every schema is there
        return
    for name in AGENT_NAMES:
        store.store(group="schema/agent", name=name, node=agent_schema(name))
    for name in LAYOUTS:
        store.store(group="schema/scenario", name=name, node=layout_schema(name))
    store.store(group="schema/env", name="env", node=EnvConf)
    store.store(group="schema/curriculum", name="curriculum", node=CurriculumConf)
    store.store(group="schema/logger", name="logger", node=LoggerConf)
    store.store(name="train_schema", node=TrainConfig)


def schedule_of(cfg) -> CurriculumSchedule:
    """The curriculum schedule of a run config."""
    c = cfg.curriculum
    return CurriculumSchedule(
        timesteps=list(c.timesteps), num_robots=list(c.num_robots), num_cores=list(c.num_cores),
        num_obstacles=list(c.num_obstacles), min_start_goal_dis=list(c.min_start_goal_dis),
    )  # fmt: skip


def layout_of(cfg) -> ScenarioLayout:
    """The scenario layout of a run config (``scenario.name`` and its options). A config
    without a ``scenario`` node (a checkpoint of an earlier version) gets the random layout of
    its curriculum."""
    from omegaconf import OmegaConf

    node = cfg.get("scenario", None) if hasattr(cfg, "get") else None
    if node is None:
        return make_layout("random", _curriculum_options(cfg))
    if isinstance(node, dict):  # a checkpoint's config
        options = dict(node)
    else:
        options = OmegaConf.to_container(node, resolve=True)
    return make_layout(options.pop("name"), options)


def slots_of(env: Mapping[str, Any]) -> Slots:
    """The padded slot counts of a run's ``env`` config node (or plain dict)."""
    return Slots(int(env["robot_slots"]), int(env["obstacle_slots"]), int(env["core_slots"]))


def _curriculum_options(cfg) -> dict:
    keys = ("timesteps", "num_robots", "num_cores", "num_obstacles", "min_start_goal_dis")
    return {key: list(cfg["curriculum"][key]) for key in keys}


def crossed(before: int, after: int, interval: int, first: int = 0) -> bool:
    """Whether a multiple of ``interval`` (from ``first`` on) lies in ``(before, after]``: a
    schedule's event is due in a batched step from timestep ``before`` to ``after`` (the
    trainer's evaluations, checkpoints, logs, target copies and weight-average samples)."""
    if after < first:
        return False
    if before < first:
        return True
    return (after - first) // interval > (before - first) // interval


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


