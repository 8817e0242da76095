"""Evaluation on a fixed scenario set, all episodes at once in one batched environment
(docs/training.md, "Evaluation").

The set is generated once, deterministically from a seed, with ``episodes_per_stage`` episodes
for each curriculum stage (the original: 10 per stage, 60 in all, seed 253), and saved in the
original's ``eval_configs.json`` layout. Every evaluation restarts exactly these scenarios.

Named sets (:data:`EVALUATION_SETS`, :func:`named_scenarios`): ``paper``, the original's 60
episodes (10 per stage of the paper's curriculum, seed 253), and ``large``, 600 episodes (100 per
stage, seed 2026) whose Wilson 95% interval is about +-4 points instead of +-12, enough to tell
agents apart.

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

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.envs import MarineNavEnv
from marinenav.keys import (
    ACTION_KEY,
    ACTIVE_KEY,
    DONE,
    ENERGY_KEY,
    INFO_KEY,
    POLICY_IN_KEYS,
    REWARD_KEY,
    dtype_named,
)
from marinenav.scenarios import RandomLayout, ScenarioLayout
from marinenav.sim import InfoState
from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule
from marinenav.sim.scenario import Slots
from marinenav.sim.scenario_json import slots_needed
from marinenav.stats import wilson_interval

EARLY_EXIT_EVERY = 50  # evaluation steps between host checks on CUDA (early exit, compaction)
# On the CPU a "host check" costs no device synchronisation, so it happens at every step.
# name -> (episodes per stage, seed) of the paper's 6-stage curriculum
EVALUATION_SETS: dict[str, tuple[int, int]] = {"paper": (10, 253), "large": (100, 2026)}
# name -> (vortex cores per episode, episodes per stage, seed): the paper's six stages with
# currents, for the random scenarios only (docs/scenarios.md, "Currents")
CURRENT_SETS: dict[str, tuple[int, int, int]] = {
    "currents4": (4, 50, 2027),
    "currents8": (8, 50, 2028),
}
SET_NAMES = (*EVALUATION_SETS, *CURRENT_SETS)  # every name --set takes
PAPER_SLOTS = Slots(5, 4, 0)  # the paper's padding: 5 robots, 4 obstacles, no vortex cores


def evaluation_scenarios(
    schedule: CurriculumSchedule,
    episodes_per_stage: int,
    seed: int,
    slots: Slots | tuple[int, int, int],
) -> list[dict]:
    """The fixed evaluation set of the curriculum's random scenarios as scenario dicts (stage
    0's episodes first): :meth:`RandomLayout.evaluation_scenarios`."""
    return RandomLayout(schedule=schedule).evaluation_scenarios(episodes_per_stage, seed, slots)


def named_scenarios(
    name: str,
    schedule: CurriculumSchedule | None = None,
    slots: Slots | tuple[int, int, int] = PAPER_SLOTS,
    layout: ScenarioLayout | None = None,
) -> list[dict]:
    """The named evaluation set (:data:`EVALUATION_SETS`: episodes per stage and seed) of a
    layout (default: the random scenarios of ``schedule``, default the paper's curriculum), as
    scenario dicts, stage by stage. Slots grow to what the layout places. The sets of
    :data:`CURRENT_SETS` are the random scenarios of ``schedule`` with vortex cores in every
    stage (no other layout)."""
    if name not in SET_NAMES:
        raise ValueError(f"unknown evaluation set {name!r}; choose one of {', '.join(SET_NAMES)}")
    if layout is not None and schedule is not None:
        raise ValueError("give a schedule or a layout, not both")
    if name in CURRENT_SETS:
        if layout is not None and not isinstance(layout, RandomLayout):
            raise ValueError(
                f"evaluation set {name!r} is of the random scenarios, not of {layout.name!r}"
            )
        cores, per_stage, seed = CURRENT_SETS[name]
        base = layout.schedule if layout is not None else schedule or DEFAULT_TRAINING_SCHEDULE
        layout = RandomLayout(schedule=base.with_cores(cores))
    else:
        per_stage, seed = EVALUATION_SETS[name]
    if layout is None:
        layout = RandomLayout(schedule=schedule or DEFAULT_TRAINING_SCHEDULE)
    slots = Slots(*(max(have, need) for have, need in zip(slots, layout.slots, strict=True)))
    return layout.evaluation_scenarios(per_stage, seed, slots)


def evaluation_setup(config: Mapping[str, Any], scenarios: Sequence[Mapping]) -> dict[str, Any]:
    """A run's evaluation layout for ``scenarios``, as keyword arguments of :class:`Evaluator`
    and ``marinenav.viz.record_episode``: the run's ``slots`` (more where a scenario needs
    them), precision and noise seed. The perception noise depends on all of them, so these
    reproduce the run's own evaluations."""
    env = config["env"]
    run = (env["robot_slots"], env["obstacle_slots"], env["core_slots"])
    needed = slots_needed(scenarios)
    return {
        "slots": Slots(*(max(have, need) for have, need in zip(run, needed, strict=True))),
        "dtype": dtype_named(env["dtype"]),
        "seed": config["evaluation"]["seed"],
    }


class Evaluator:
    """Runs a policy deterministically on every scenario of the set at once.

    Args:
        scenarios: scenario dicts (one episode each).
        action_kind: of the policy.
        gamma: discount of the reported return.
        max_steps: step cap of an episode (the original: 1001).
        slots: padded slot counts (robots, obstacles, cores) of the batched environment.
        device, dtype: of the batched environment.
        seed: the perception-noise stream restarts from it at every evaluation, so an
            evaluation is a function of the policy alone (the original re-seeds its evaluation
            environment for every episode).
        episodes_per_stage: consecutive episodes of one stage (per-stage success rates), or
            None for a set without stages.
        layout: the layout whose rules (reward terms, end conditions) apply, the one that made
            the set; ``None``: the paper's rules.
    """

    def __init__(
        self,
        scenarios: list[dict],
        action_kind: str,
        gamma: float,
        max_steps: int,
        slots: Slots | tuple[int, int, int],
        device: torch.device | str,
        dtype: torch.dtype,
        seed: int = 253,
        episodes_per_stage: int | None = None,
        layout: ScenarioLayout | None = None,
    ) -> None:
        self.seed = seed
        slots = Slots(*slots)
        self.env = MarineNavEnv.from_scenarios(
            scenarios, action_kind=action_kind, end_on_collision=True, robot_slots=slots.robots,
            obstacle_slots=slots.obstacles, core_slots=slots.cores, device=device, dtype=dtype,
            validate=False, max_episode_steps=max_steps - 1, layout=layout,
        )  # fmt: skip
        self.gamma = gamma
        self.max_steps = max_steps
        self.episodes_per_stage = episodes_per_stage

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
        self, policy: TensorDictModuleBase, compact: bool = True, tracks: bool = False
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
        """
        env, sim = self.env, self.env.sim
        E, R = env.num_envs, env.num_robots
        device = env.device
        step_time = (sim.scenario.dt * sim.num_substeps).to(torch.float64)  # [E, R] s
        returns = torch.zeros(E, R, dtype=torch.float64, device=device)
        travel_time = torch.zeros_like(returns)
        energy = torch.zeros_like(returns)
        discount = torch.ones(E, 1, dtype=torch.float64, device=device)
        finished = torch.zeros(E, dtype=torch.bool, device=device)
        reached = torch.zeros(E, R, dtype=torch.bool, device=device)
        env.set_seed(self.seed)
        td = env.reset()
        action_spec = env.full_action_spec[ACTION_KEY]
        full_action = torch.zeros(action_spec.shape, dtype=action_spec.dtype, device=device)
        flat_action = full_action.view(E * R, *action_spec.shape[2:])
        rows = torch.arange(E * R, device=device)
        check_every = 1 if device.type == "cpu" else EARLY_EXIT_EVERY
        if tracks:  # every vessel's pose at every step, written on the device
            poses = torch.zeros(self.max_steps + 1, E, R, 3, dtype=torch.float64, device=device)
            poses[0] = torch.cat((sim.state.pos, sim.state.theta.unsqueeze(-1)), -1)
            lasted = torch.zeros(E, dtype=torch.int64, device=device)
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            for step in range(self.max_steps):
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
            metrics["tracks"] = {"pos": poses[: last + 1, ..., :2].cpu(),
                                 "theta": poses[: last + 1, ..., 2].cpu(), "steps": lasted.cpu()}
        # Wilson 95% intervals of the success rates (not under "eval/": those are logged scalars)
        metrics["ci95"] = {"success_rate": wilson_interval(len(successful), E)}
        if self.episodes_per_stage:
            k = self.episodes_per_stage
            for stage in range(E // k):
                count = round(sum(successes[stage * k : (stage + 1) * k]))
                metrics[f"eval/success_rate_stage{stage}"] = count / k
                metrics["ci95"][f"success_rate_stage{stage}"] = wilson_interval(count, k)
        return metrics
