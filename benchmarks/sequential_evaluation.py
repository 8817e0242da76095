"""The original's way to evaluate: one episode at a time, one robot at a time.

An independent implementation of the evaluation metrics (docs/training.md, "Evaluation") in
the shape of the original's loop: for each scenario a single environment (re-seeded with the
evaluation seed, as the original re-seeds its evaluation environment for every episode), and at
every step one batch-1 planner call per active robot, in robot order, with the C++ planner's
float64 tuple.
It shares the simulator with :class:`marinenav.training.evaluation.Evaluator` and nothing
else: no batching, no compaction, metrics summed in plain Python.

Used (1) as the slow reference that recorded ``tests/data/planner_metrics.json`` (with the
perception noise switched off, so the comparison is exact) and (2) as the one-robot-at-a-time
baseline of ``benchmarks/eval_speed.py``.

``python benchmarks/sequential_evaluation.py --record tests/data/planner_metrics.json``
re-records the test's values.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.envs import MarineNavEnv  # noqa: E402
from marinenav.files import write_text  # noqa: E402
from marinenav.sim import InfoState  # noqa: E402
from marinenav.training.evaluation import named_scenarios  # noqa: E402

GAMMA = 0.99
PLANNERS = ("AC_IQN", "DDPG", "DQN", "IQN", "SAC")
EXPORT_NUM_TAU = 32


def without_noise(scenario: dict) -> dict:
    """A copy of ``scenario`` with the perception noise off: zero position and velocity noise,
    radius factor 1."""
    scenario = copy.deepcopy(scenario)
    perception = scenario["robots"]["perception"]
    n = len(perception["pos_std"])
    perception["pos_std"] = [0.0] * n
    perception["vel_std"] = [0.0] * n
    perception["r_mean_ratio"] = [1.0] * n
    return scenario


def planner_decision(module, agent: str, state, *, sac_action: str, iqn_taus: str, generator):
    """One batch-1 planner call and its action rule (the C++ planner's)."""
    if agent == "IQN":
        if iqn_taus == "midpoints":
            taus = ((torch.arange(EXPORT_NUM_TAU, dtype=torch.float64) + 0.5) / EXPORT_NUM_TAU)
            taus = taus.unsqueeze(0)
        else:
            taus = torch.rand(1, EXPORT_NUM_TAU, generator=generator, dtype=torch.float64)
        return int(module(state, taus)[0].mean(0).argmax())
    out = module(state)
    if agent == "DQN":
        return int(out[0].argmax())
    if agent == "SAC":
        mu, log_sigma = out
        if sac_action == "sample":
            mu = mu + log_sigma.exp() * torch.randn(1, 2, generator=generator, dtype=torch.float64)
        return ((2 / math.pi) * torch.atan(mu))[0]
    return out[0]


def evaluate_sequentially(
    path: str | Path,
    agent: str,
    scenarios: list[dict],
    *,
    sac_action: str = "mean",
    iqn_taus: str = "midpoints",
    seed: int = 253,
    max_steps: int = 1001,
) -> list[dict]:
    """Per-episode metrics (return, success, time, energy) of a planner file, one episode and
    one robot at a time."""
    module = torch.jit.load(str(path), map_location="cpu").eval()
    kind = "continuous" if agent in ("AC_IQN", "DDPG", "SAC") else "discrete"
    generator = torch.Generator().manual_seed(seed)
    results = []
    for scenario in scenarios:
        env = MarineNavEnv.from_scenarios(
            [scenario], action_kind=kind, end_on_collision=True, robot_slots=5,
            obstacle_slots=4, core_slots=0, dtype=torch.float64, validate=False,
            max_episode_steps=max_steps - 1,
        )  # fmt: skip
        env.set_seed(seed)
        td = env.reset()
        present = env.sim.scenario.robot_present[0].tolist()
        R = len(present)
        ret, time_, energy = [0.0] * R, [0.0] * R, [0.0] * R
        reached = [False] * R
        dt = (env.sim.scenario.dt[0] * env.sim.num_substeps).tolist()
        with torch.no_grad():
            for step in range(max_steps):
                active = td["agents", "active"][0].tolist()
                obs = td["agents"]
                if kind == "continuous":
                    action = torch.zeros(1, R, 2, dtype=torch.float64)
                else:
                    action = torch.zeros(1, R, dtype=torch.int64)
                for r in range(R):
                    if not active[r]:
                        continue
                    state = (obs["self_state"][0, r : r + 1].double(),
                             obs["objects"][0, r : r + 1].double(),
                             obs["objects_mask"][0, r : r + 1].double())  # fmt: skip
                    action[0, r] = torch.as_tensor(planner_decision(
                        module, agent, state, sac_action=sac_action, iqn_taus=iqn_taus,
                        generator=generator,
                    ))  # fmt: skip
                td.set(("agents", "action"), action)
                out = env.step(td)["next"]
                reward = out["agents", "reward"][0, :, 0].tolist()
                spent = out["agents", "energy"][0, :, 0].tolist()
                info = out["agents", "info"][0].tolist()
                for r in range(R):
                    if active[r]:
                        ret[r] += GAMMA**step * reward[r]
                        time_[r] += dt[r]
                        energy[r] += spent[r]
                        reached[r] |= info[r] == int(InfoState.REACH_GOAL)
                td = out
                if bool(out["done"][0]):
                    break
        robots = [r for r in range(R) if present[r]]
        results.append({
            "return": sum(ret[r] for r in robots) / len(robots),
            "success": all(reached[r] for r in robots),
            "time": sum(time_[r] for r in robots) / len(robots),
            "energy": sum(energy[r] for r in robots) / len(robots),
        })  # fmt: skip
    return results


def record(out: Path, pretrained: Path, episodes_per_stage: int) -> None:
    """Record the test's reference values: the paper set's first ``episodes_per_stage``
    episodes of every stage, noise off, SAC's mean, IQN's midpoint taus."""
    full = named_scenarios("paper")
    per_stage = 10
    chosen = [full[s * per_stage + k] for s in range(6) for k in range(episodes_per_stage)]
    scenarios = [without_noise(s) for s in chosen]
    values = {"episodes_per_stage": episodes_per_stage, "set": "paper", "noise": "off",
              "sac_action": "mean", "iqn_taus": "midpoints", "planners": {}}  # fmt: skip
    for agent in PLANNERS:
        path = pretrained / f"traced_{agent}_model.pt"
        values["planners"][agent] = evaluate_sequentially(path, agent, scenarios)
        print(agent, sum(e["success"] for e in values["planners"][agent]), "successes")
    write_text(out, json.dumps(values, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--pretrained", type=Path, default=ROOT / "tests/data/pretrained")
    parser.add_argument("--episodes-per-stage", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    record(args.record, args.pretrained, args.episodes_per_stage)
