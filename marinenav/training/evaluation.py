"""Evaluation on a fixed scenario set, all episodes at once in one batched environment
(docs/training.md, "Evaluation").

What an evaluation runs is one value, an :class:`EvaluationSet`: the scenarios (one episode
each), their stage layout (episodes per stage) and the layout whose rules apply, and the
conditions the perception noise depends on, the padded slots, the precision and the noise seed,
with the step cap of an episode. It is built once, by one of three constructors, and the
trainer, ``marinenav.evaluate`` and ``marinenav.viz`` all run it through :class:`Evaluator` (or
one of its episodes through ``marinenav.viz.record_episode``):

* :meth:`EvaluationSet.of_run`: a run's own set, what the trainer validates on and writes to
  ``eval_configs.json`` (``curriculum.eval_episodes_per_stage`` episodes per stage from
  ``evaluation.seed``, or the named ``evaluation.set``), or another named set of the run's
  layout, in the run's conditions (:func:`run_conditions`);
* :meth:`EvaluationSet.named`: a named set of a layout, by default in the original's conditions
  (the paper's slots, float64, noise seed 253, 1001 steps: how planners and baselines are
  evaluated);
* :meth:`EvaluationSet.of_files`: the episodes of scenario JSON files (no stages, the paper's
  rules).

Named sets (:data:`EVALUATION_SETS`, :data:`CURRENT_SETS`): ``paper``, the original's 60
episodes (10 per stage of the paper's curriculum, seed 253), and ``large``, 600 episodes (100 per
stage, seed 2026) whose Wilson 95% interval is about +-4 points instead of +-12, enough to tell
agents apart. A named set is one thing wherever it is asked for: of the random layout, the
random scenarios of the paper's curriculum whatever a run's own curriculum (the sets every agent
is compared on); of another layout, that layout's own set with the name's episodes per stage and
seed.

Finished work stops costing compute: at every host check (every step on the CPU, where reading
a value back is free; each :data:`EARLY_EXIT_EVERY` steps on CUDA) the evaluator selects the
robots still acting in episodes still running, and the policy runs on those rows only until the
next check (the simulator keeps stepping the whole batch, so the
perception-noise stream, and with it every result, is unchanged). For a policy whose action is a
function of each row alone (every deterministic agent and planner) the metrics equal those of
the uncompacted run; a policy that draws random numbers per row (IQN's quantile fractions, a
sampling SAC) gets different draws of the same distribution.

Per episode (original metrics): the discounted return averaged over robots, success (every
robot reached its goal; an episode ends at its first collision), travel time and thrust energy
averaged over robots (robots that never finished included). Aggregates: mean return over all
episodes, success rate, and mean time and energy over the successful episodes only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.encounters import encounter_records, own_and_targets
from marinenav.envs import MarineNavEnv
from marinenav.keys import (
    ACTION_KEY,
    ACTIVE_KEY,
    DONE,
    ENERGY_KEY,
    INFO_KEY,
    POLICY_IN_KEYS,
    REWARD_KEY,
    check_seed,
    dtype_named,
)
from marinenav.scenarios import RandomLayout, ScenarioLayout
from marinenav.sim import InfoState, load_scenario_file
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule
from marinenav.sim.scenario import Slots
from marinenav.sim.scenario_json import slots_needed
from marinenav.stats import wilson_interval
from marinenav.training.config import layout_of, slots_of

EARLY_EXIT_EVERY = 50  # evaluation steps between host checks on CUDA (early exit, compaction)
# On the CPU a "host check" costs no device synchronisation, so it happens at every step.
ORIGINAL_SEED = 253  # the original's evaluation seed: it draws the paper set and seeds the noise
ORIGINAL_MAX_STEPS = 1001  # the original's step cap of an evaluation episode (0.5 s steps)
# name -> (episodes per stage, seed) of the paper's 6-stage curriculum
EVALUATION_SETS: dict[str, tuple[int, int]] = {"paper": (10, ORIGINAL_SEED), "large": (100, 2026)}
# name -> (vortex cores per episode, episodes per stage, seed): the paper's six stages with
# currents, for the random scenarios only (docs/scenarios.md, "Currents")
CURRENT_SETS: dict[str, tuple[int, int, int]] = {
    "currents4": (4, 50, 2027),
    "currents8": (8, 50, 2028),
}
SET_NAMES = (*EVALUATION_SETS, *CURRENT_SETS)  # every name --set takes
PAPER_SLOTS = Slots(5, 4, 0)  # the paper's padding: 5 robots, 4 obstacles, no vortex cores


def _grown(slots: Slots | tuple[int, int, int], needed: Slots | tuple[int, int, int]) -> Slots:
    """``slots``, each count raised to the one ``needed`` where that is larger."""
    return Slots(*(max(have, need) for have, need in zip(slots, needed, strict=True)))


def evaluation_scenarios(
    schedule: CurriculumSchedule,
    episodes_per_stage: int,
    seed: int,
    slots: Slots | tuple[int, int, int],
) -> list[dict]:
    """The fixed evaluation set of the curriculum's random scenarios as scenario dicts (stage
    0's episodes first): :meth:`RandomLayout.evaluation_scenarios`."""
    return RandomLayout(schedule=schedule).evaluation_scenarios(episodes_per_stage, seed, slots)


def _named_draw(name: str, layout: ScenarioLayout | None) -> tuple[ScenarioLayout, int, int, Slots]:
    """How the named set ``name`` of ``layout`` (default: the random scenarios) is drawn:
    ``(the layout that places it, episodes per stage, seed, slots of the generation)``. Of the
    random layout, whatever its curriculum, the set is the paper curriculum's; the sets of
    :data:`CURRENT_SETS` are of the random scenarios only. Generated in the paper's slots grown
    to what the layout places, so a set's episodes do not depend on who asks for them."""
    if name not in SET_NAMES:
        raise ValueError(f"unknown evaluation set {name!r}; choose one of {', '.join(SET_NAMES)}")
    random = layout is None or isinstance(layout, RandomLayout)
    if name in CURRENT_SETS:
        if not random:
            raise ValueError(
                f"evaluation set {name!r} is of the random scenarios, not of {layout.name!r}"
            )
        cores, per_stage, seed = CURRENT_SETS[name]
        layout = RandomLayout(schedule=DEFAULT_TRAINING_SCHEDULE.with_cores(cores))
    else:
        per_stage, seed = EVALUATION_SETS[name]
        if random:
            layout = RandomLayout(schedule=DEFAULT_TRAINING_SCHEDULE)
    return layout, per_stage, seed, _grown(PAPER_SLOTS, layout.slots)


def named_scenarios(name: str, layout: ScenarioLayout | None = None) -> list[dict]:
    """The scenario dicts of the named set ``name`` of ``layout`` (default: the random
    scenarios of the paper's curriculum), stage by stage: the scenarios of
    :meth:`EvaluationSet.named`."""
    layout, per_stage, seed, slots = _named_draw(name, layout)
    return layout.evaluation_scenarios(per_stage, seed, slots)


def _run_draw(config: Mapping[str, Any]) -> tuple[ScenarioLayout, int, int, Slots]:
    """How a run's own set is drawn, as :func:`_named_draw`: its named ``evaluation.set``, or
    ``curriculum.eval_episodes_per_stage`` episodes per stage of the run's layout from
    ``evaluation.seed``, generated in the run's slots."""
    layout = layout_of(config)
    name = config["evaluation"].get("set")
    if name is not None:
        if name not in SET_NAMES:
            raise ValueError(f"evaluation.set={name!r} is not a named set; choose one of "
                             f"{', '.join(SET_NAMES)} (or null)")  # fmt: skip
        return _named_draw(name, layout)
    per_stage = int(config["curriculum"]["eval_episodes_per_stage"])
    return layout, per_stage, int(config["evaluation"]["seed"]), slots_of(config["env"])


def run_conditions(config: Mapping[str, Any]) -> dict[str, Any]:
    """A run's evaluation conditions, the keyword arguments of :class:`EvaluationSet` beside
    the scenarios: the run's ``slots`` (``env.*_slots``; a set grows them to what its scenarios
    need), precision (``env.dtype``), step cap (``evaluation.max_steps``) and noise seed, the
    seed of the run's own set (``evaluation.seed``, or the named ``evaluation.set``'s). The
    perception noise depends on all of them, so any set evaluated in them reproduces what the
    run itself would have measured."""
    return {
        "slots": slots_of(config["env"]),
        "dtype": dtype_named(config["env"]["dtype"]),
        "noise_seed": _run_draw(config)[2],
        "max_steps": int(config["evaluation"]["max_steps"]),
    }


@dataclass(frozen=True)
class EvaluationSet:
    """What one evaluation runs: the episodes and every condition their results depend on.

    Built by :meth:`of_run`, :meth:`named` or :meth:`of_files` (or directly, from scenario
    dicts); the defaults of the conditions are the original's (the paper's slots, float64,
    noise seed 253, 1001 steps), in which planner files and baselines are evaluated.

    Attributes:
        scenarios: scenario dicts in the original's ``eval_configs.json`` layout, one episode
            each (stage 0's first).
        label: what the set is, in words (``evaluate`` prints it; default ``N episodes``).
        episodes_per_stage: consecutive episodes of one stage (per-stage success rates), or
            None for a set without stages.
        layout: the layout that made the set, whose rules (reward terms, end conditions)
            apply; None: the paper's rules.
        slots: padded slot counts (robots, obstacles, cores) of the batched environment, grown
            to what the scenarios need.
        dtype: the simulation's precision.
        noise_seed: the perception-noise stream (and a planner's random stream) restarts from
            it at every evaluation, so an evaluation is a function of the policy alone (the
            original re-seeds its evaluation environment for every episode).
        max_steps: step cap of an episode (the original: 1001 steps of 0.5 s).
    """

    scenarios: tuple[dict, ...]
    label: str = ""
    episodes_per_stage: int | None = None
    layout: ScenarioLayout | None = None
    slots: Slots = PAPER_SLOTS
    dtype: torch.dtype = torch.float64
    noise_seed: int = ORIGINAL_SEED
    max_steps: int = ORIGINAL_MAX_STEPS

    def __post_init__(self) -> None:
        scenarios = tuple(self.scenarios)
        if not scenarios:
            raise ValueError("no scenarios to evaluate")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        check_seed(self.noise_seed, "the noise seed")
        object.__setattr__(self, "scenarios", scenarios)
        object.__setattr__(self, "label", self.label or f"{len(scenarios)} episodes")
        object.__setattr__(self, "slots", _grown(self.slots, slots_needed(scenarios)))

    def __len__(self) -> int:
        return len(self.scenarios)

    @classmethod
    def of_run(
        cls,
        config: Mapping[str, Any],
        name: str | None = None,
        *,
        scenarios: Sequence[Mapping[str, Any]] | None = None,
    ) -> EvaluationSet:
        """A run's evaluation set, in the run's conditions (:func:`run_conditions`).

        Args:
            config: the run's config (a Hydra config, or a checkpoint's plain dict of it).
            name: None for the run's own set (what the trainer validates on); a name of
                :data:`SET_NAMES` for that named set of the run's layout
                (:meth:`named`). A run that validated on a named set gets the same set, episode
                for episode and seed for seed, either way.
            scenarios: the run's own set as it recorded it (its ``eval_configs.json``) instead
                of drawing it again; own set only.
        """
        conditions = run_conditions(config)
        if name is not None:
            if scenarios is not None:
                raise ValueError("give a named set or the recorded scenarios, not both")
            layout = layout_of(config)
            whose = None if isinstance(layout, RandomLayout) else f"the run's layout, {layout.name}"
            return cls.named(name, layout, whose=whose, **conditions)
        layout, per_stage, seed, slots = _run_draw(config)
        if scenarios is None:
            scenarios = layout.evaluation_scenarios(per_stage, seed, slots)
        return cls(
            tuple(scenarios),
            f"the run's own evaluation set ({layout.name}, {len(scenarios)} episodes)",
            len(scenarios) // layout.num_stages, layout, **conditions,
        )  # fmt: skip

    @classmethod
    def named(
        cls,
        name: str,
        layout: ScenarioLayout | None = None,
        *,
        whose: str | None = None,
        **conditions: Any,
    ) -> EvaluationSet:
        """The named set ``name`` (:data:`SET_NAMES`) of ``layout`` (default: the random
        scenarios of the paper's curriculum; see the module docstring), under the rules of the
        layout that places it, in the given conditions (``slots``, ``dtype``, ``noise_seed``,
        ``max_steps``; default the original's). ``whose`` is how the label calls the layout
        (default ``the <name> layout``). A layout whose set is fixed (the Imazu cases) keeps
        its own size and says so in the label."""
        layout, per_stage, seed, slots = _named_draw(name, layout)
        scenarios = layout.evaluation_scenarios(per_stage, seed, slots)
        stage_size = len(scenarios) // layout.num_stages
        if EVALUATION_SETS.get(name, (None,))[0] not in (None, stage_size):
            label = (f"{layout.name}'s fixed evaluation set ({len(scenarios)} episodes; the named "
                     f"set {name!r} does not apply to it)")  # fmt: skip
        else:
            label = f"the {name} set of {whose or f'the {layout.name} layout'} " \
                    f"({len(scenarios)} episodes)"  # fmt: skip
        return cls(tuple(scenarios), label, stage_size, layout, **conditions)

    @classmethod
    def of_files(cls, paths: Sequence[str | Path], **conditions: Any) -> EvaluationSet:
        """The episodes of scenario JSON files in the original's layout (each a dict or a
        list of them, read and checked by :func:`marinenav.sim.load_scenario_file`), in order,
        without stages and under the paper's rules, in the given conditions (default the
        original's)."""
        scenarios = tuple(s for path in paths for s in load_scenario_file(path))
        return cls(scenarios, f"{len(scenarios)} episodes of scenario files", **conditions)

    @staticmethod
    def size_of_run(config: Mapping[str, Any]) -> int:
        """Episodes in a run's own set, from its config without drawing them (the episodes
        per stage times the stages of the layout that draws it)."""
        layout, per_stage, _, _ = _run_draw(config)
        return per_stage * layout.num_stages

    def replace(self, **changes: Any) -> EvaluationSet:
        """A copy with some fields changed (``max_steps=...``, ``noise_seed=...``)."""
        return dataclasses.replace(self, **changes)

    def episode(self, index: int) -> EvaluationSet:
        """Episode ``index`` (negative from the end) alone, in this set's conditions and rules
        (its slots, not the episode's own: the noise depends on them)."""
        if not -len(self) <= index < len(self):
            raise ValueError(f"episode {index} out of range: the set has {len(self)}")
        index %= len(self)
        return self.replace(scenarios=(self.scenarios[index],),
                            label=f"episode {index} of {self.label}", episodes_per_stage=None)

    def episode_labels(self) -> list[str]:
        """What a report calls each episode (the layout's names, e.g. the Imazu cases)."""
        if self.layout is None:
            return [f"episode {k}" for k in range(len(self))]
        return self.layout.episode_labels(list(self.scenarios))

    def environment(self, action_kind: str, device: torch.device | str = "cpu") -> MarineNavEnv:
        """The batched environment of the set: one environment per episode, in the set's
        slots and precision, ending an episode at its first collision or after
        :attr:`max_steps` steps, under the set's rules, noise seeded with
        :attr:`noise_seed`, without value checks (a hot loop)."""
        env = MarineNavEnv.from_scenarios(
            list(self.scenarios), action_kind=action_kind, end_on_collision=True,
            robot_slots=self.slots.robots, obstacle_slots=self.slots.obstacles,
            core_slots=self.slots.cores, device=device, dtype=self.dtype, validate=False,
            max_episode_steps=self.max_steps - 1, layout=self.layout,
        )  # fmt: skip
        env.set_seed(self.noise_seed)
        return env


class Evaluator:
    """Runs a policy deterministically on every episode of an :class:`EvaluationSet` at once.

    Args:
        evaluation_set: what to run (episodes, stage layout, rules, slots, precision, noise
            seed, step cap).
        action_kind: of the policy.
        gamma: discount of the reported return.
        device: of the batched environment.
    """

    def __init__(
        self,
        evaluation_set: EvaluationSet,
        action_kind: str,
        gamma: float,
        device: torch.device | str = "cpu",
    ) -> None:
        self.evaluation_set = evaluation_set
        self.env = evaluation_set.environment(action_kind, device)
        self.gamma = gamma
        # episodes of one own ship among traffic (the Imazu cases, alone or in a mixture)
        self.encounter_episodes = sum(
            own_and_targets(scenario) is not None for scenario in evaluation_set.scenarios
        )

    def run_with_encounters(
        self, policy: TensorDictModuleBase, compact: bool = True
    ) -> dict[str, Any]:
        """:meth:`run`, and for a set with encounter episodes their COLREGs checks
        (:mod:`marinenav.encounters`, from the episodes' tracks): ``metrics["encounters"]``,
        per episode its targets' checks (``None`` for the other episodes), and
        ``metrics["colregs"]``, ``{"episodes": n, "kept": k, "kept_sighted": k2}``: how many of
        the n encounter episodes kept the COLREGs, the turns read from the start and from
        sighting (:mod:`marinenav.encounters`). A set without encounters: :meth:`run` alone."""
        if not self.encounter_episodes:
            return self.run(policy, compact=compact)
        metrics = self.run(policy, compact=compact, tracks=True)
        successes = metrics["episodes"]["success"]
        scenarios = list(self.evaluation_set.scenarios)
        records = encounter_records(scenarios, metrics.pop("tracks"), successes)
        metrics["encounters"] = records
        encounters = [record for record in records if record is not None]
        metrics["colregs"] = {
            "episodes": len(encounters),
            "kept": sum(record["colregs_kept"] for record in encounters),
            "kept_sighted": sum(record["colregs_kept_sighted"] for record in encounters),
        }
        return metrics

    @staticmethod
    def _act_on_rows(
        policy: TensorDictModuleBase,
        td: TensorDictBase,
        rows: torch.Tensor,
        full_action: torch.Tensor,
        flat_action: torch.Tensor,
    ) -> torch.Tensor:
        """The policy's actions for the flat ``rows`` of the ``[E, R]`` batch, scattered into
        ``full_action`` (zeros elsewhere: ignored for robots that no longer act)."""
        n = rows.shape[0]
        sub = TensorDict(
            {key: td.get(key).flatten(0, 1)[rows] for key in POLICY_IN_KEYS},
            batch_size=[n], device=td.device,
        )  # fmt: skip
        flat_action.zero_()
        if n:
            flat_action[rows] = policy(sub).get(ACTION_KEY).to(flat_action.dtype)
        return full_action.clone()

    def run(
        self,
        policy: TensorDictModuleBase,
        compact: bool = True,
        tracks: bool = False,
        observe: Callable[[TensorDictBase], None] | None = None,
    ) -> dict[str, Any]:
        """Evaluate ``policy`` (deterministic mode); returns host-side metrics and per-episode
        lists. Reads back once per host check (see the module docstring) and once at the end.

        Args:
            policy: reads ``("agents", self_state | objects | objects_mask)``
                (:data:`~marinenav.keys.POLICY_IN_KEYS`), writes ``("agents", "action")``
                (:data:`~marinenav.keys.ACTION_KEY`).
            compact: run the policy only on the rows still acting (see the module docstring);
                ``False`` runs it on every slot of every environment at every step.
            tracks: also return every vessel's track, ``metrics["tracks"]``: ``pos [T, E, R,
                2]`` m and ``theta [T, E, R]`` rad (world frame, step 0 the start, CPU float64)
                and ``steps [E]``, the steps each episode lasted (what encounter checks read,
                :mod:`marinenav.encounters`).
            observe: called with the reset's tensordict and then with each step's ``"next"``
                tensordict, the simulator (``self.env.sim``) in the state that step left; what
                it reads is its own business (``marinenav.viz.record_episodes`` copies some
                episodes' rows). Episodes go on being stepped after they end (until every one
                has), so an observer cuts each episode at its first ``done`` itself.
        """
        env, sim = self.env, self.env.sim
        max_steps = self.evaluation_set.max_steps
        E, R = env.num_envs, env.num_robots
        device = env.device
        step_time = (sim.scenario.dt * sim.num_substeps).to(torch.float64)  # [E, R] s
        returns = torch.zeros(E, R, dtype=torch.float64, device=device)
        travel_time = torch.zeros_like(returns)
        energy = torch.zeros_like(returns)
        discount = torch.ones(E, 1, dtype=torch.float64, device=device)
        finished = torch.zeros(E, dtype=torch.bool, device=device)
        reached = torch.zeros(E, R, dtype=torch.bool, device=device)
        env.set_seed(self.evaluation_set.noise_seed)
        td = env.reset()
        if observe is not None:
            observe(td)
        action_spec = env.full_action_spec[ACTION_KEY]
        full_action = torch.zeros(action_spec.shape, dtype=action_spec.dtype, device=device)
        flat_action = full_action.view(E * R, *action_spec.shape[2:])
        rows = torch.arange(E * R, device=device)
        check_every = 1 if device.type == "cpu" else EARLY_EXIT_EVERY
        if tracks:  # every vessel's pose at every step, written on the device
            poses = torch.zeros(max_steps + 1, E, R, 3, dtype=torch.float64, device=device)
            poses[0] = torch.cat((sim.state.pos, sim.state.theta.unsqueeze(-1)), -1)
            lasted = torch.zeros(E, dtype=torch.int64, device=device)
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            for step in range(max_steps):
                if step % check_every == 0 and step > 0:
                    if bool(finished.all()):  # host: early exit
                        break
                if compact and step % check_every == 0:
                    live = td[ACTIVE_KEY] & ~finished.unsqueeze(-1)
                    rows = live.reshape(-1).nonzero().squeeze(-1)  # host: compaction
                if compact:
                    action = self._act_on_rows(policy, td, rows, full_action, flat_action)
                    td.set(ACTION_KEY, action)
                else:
                    td = policy(td)
                out: TensorDictBase = env.step(td)["next"]
                acting = td[ACTIVE_KEY] & ~finished.unsqueeze(-1)
                reward = out[REWARD_KEY].squeeze(-1).to(torch.float64)
                returns += torch.where(acting, discount * reward, 0.0)
                travel_time += torch.where(acting, step_time, 0.0)
                energy += torch.where(acting, out[ENERGY_KEY].squeeze(-1).double(), 0.0)
                reached |= acting & (out[INFO_KEY] == InfoState.REACH_GOAL)
                discount = discount * self.gamma
                if tracks:
                    poses[step + 1] = torch.cat((sim.state.pos, sim.state.theta.unsqueeze(-1)), -1)
                    lasted += (~finished).to(torch.int64)
                finished |= out[DONE].squeeze(-1)
                if observe is not None:
                    observe(out)
                td = out
        present = sim.steered  # the policy's robots: traffic neither earns nor counts
        count = present.sum(-1).clamp(min=1).double()
        success = (reached | ~present).all(-1)
        per_episode = torch.stack(
            (
                (returns * present).sum(-1) / count,
                success.double(),
                (travel_time * present).sum(-1) / count,
                (energy * present).sum(-1) / count,
            )
        ).cpu()  # host: one transfer per evaluation
        rewards, successes, times, energies = per_episode.tolist()  # host: metrics for people
        successful = [i for i, s in enumerate(successes) if s > 0.5]
        metrics: dict[str, Any] = {
            "eval/return": sum(rewards) / E,
            "eval/success_rate": len(successful) / E,
            "eval/travel_time": (
                sum(times[i] for i in successful) / len(successful) if successful else None
            ),
            "eval/energy": (
                sum(energies[i] for i in successful) / len(successful) if successful else None
            ),
            "episodes": {"return": rewards, "success": [s > 0.5 for s in successes],
                         "time": times, "energy": energies},
        }  # fmt: skip
        if tracks:
            last = int(lasted.max())  # host: the tracks are read back once, for people
            track = poses[: last + 1].cpu()  # host: once per evaluation, after the episodes
            steps = lasted.cpu()  # host: once per evaluation, after the episodes
            metrics["tracks"] = {"pos": track[..., :2], "theta": track[..., 2], "steps": steps}
        # Wilson 95% intervals of the success rates (not under "eval/": those are logged scalars)
        metrics["ci95"] = {"success_rate": wilson_interval(len(successful), E)}
        if self.evaluation_set.episodes_per_stage:
            k = self.evaluation_set.episodes_per_stage
            for stage in range(E // k):
                count = round(sum(successes[stage * k : (stage + 1) * k]))
                metrics[f"eval/success_rate_stage{stage}"] = count / k
                metrics["ci95"][f"success_rate_stage{stage}"] = wilson_interval(count, k)
        return metrics
