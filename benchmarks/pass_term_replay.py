"""Where the pass term charges a planner on the Imazu cases, beside what the COLREGs check
breaks (docs/results.md, "The term and the check disagree on who gives way").

``python benchmarks/pass_term_replay.py PLANNER [--no-boundaries] [--term give_way_check]`` runs
the 22 cases as ``marinenav.evaluate --scenario imazu`` runs them (the original's conditions,
noise seed 253), once under the Imazu layout's rules and once under a mixture of the Imazu part
alone with the pass term (``passed_ahead_penalty=5``, ``cross_ahead_of=traffic``,
``passed_ahead_at_boundaries`` on unless ``--no-boundaries``) or, with ``--term
give_way_check``, the give-way check term (``give_way_check_penalty=5``: charges and refunds);
the rules change no motion, so both runs have the same tracks (checked). It prints per case the
steps on which the term charged (``+`` where it paid back) the own ship and its sum, and the
checks (:mod:`marinenav.encounters`) broken with the step of their closest approach and the side
of the own ship the target lay on there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.encounters import bearing, encounter_records, own_and_targets  # noqa: E402
from marinenav.keys import REWARD_TERMS_KEY  # noqa: E402
from marinenav.planner import planner_policy  # noqa: E402
from marinenav.scenarios import make_layout  # noqa: E402
from marinenav.training.evaluation import EvaluationSet, Evaluator  # noqa: E402


def _side(tracks: dict, e: int, own: int, target: int, k: int) -> str:
    """Which side of the own ship's course line the target lies on at step ``k`` (its relative
    bearing as the checks read it: starboard in (0, 180) degrees)."""
    pos, theta = tracks["pos"][k, e], tracks["theta"][k, e, own]
    return "starboard" if 0.0 < float(bearing(pos[own], theta, pos[target])) < 180.0 else "port"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("planner", type=Path)
    parser.add_argument("--no-boundaries", action="store_true",
                        help="the pass term as by default (a step whose chord closes then opens)")
    parser.add_argument("--term", default="passed_ahead",
                        choices=["passed_ahead", "give_way_check"])
    args = parser.parse_args()  # fmt: skip
    torch.set_num_threads(1)
    mix = make_layout("mix", {
        "parts": {"imazu": {"layout": "imazu", "weight": 1.0}},
        f"{args.term}_penalty": 5.0, "cross_ahead_of": "traffic",
        "passed_ahead_at_boundaries": not args.no_boundaries,
    })  # fmt: skip
    term = mix.rules.term_names.index(args.term)
    cases = EvaluationSet.named("paper", make_layout("imazu"))
    policy = planner_policy(args.planner)
    policy.set_seed(cases.noise_seed)
    plain = Evaluator(cases, policy.action_kind, 0.99).run(policy, tracks=True)
    charges: list[torch.Tensor] = []  # [E] per step: the term's reward of the own ship

    def observe(td) -> None:
        if REWARD_TERMS_KEY in td.keys(True):
            charges.append(td[REWARD_TERMS_KEY][:, 0, term].clone())

    policy.set_seed(cases.noise_seed)
    mixed = Evaluator(cases.replace(layout=mix), policy.action_kind, 0.99)
    metrics = mixed.run(policy, tracks=True, observe=observe)
    steps_charged = torch.stack(charges[1:])  # [T, E]: step k + 1 in row k (the reset's first)
    if not torch.equal(plain["tracks"]["pos"], metrics["tracks"]["pos"]):
        raise SystemExit("the two runs' tracks differ: the replay is not the evaluation's")
    records = encounter_records(list(cases.scenarios), metrics["tracks"],
                                metrics["episodes"]["success"])  # fmt: skip
    form = ("the give-way check term" if args.term == "give_way_check" else
            f"pass term {'as by default' if args.no_boundaries else 'at step boundaries'}")
    print(f"{args.planner}: {form}")
    print("| case | steps | charged at steps | sum | checks broken (rule: reason, closest step, "
          "the target's side of the own ship there) |")
    print("| ---: | ---: | --- | ---: | --- |")
    for e, record in enumerate(records):
        if record is None:
            continue
        steps = int(metrics["tracks"]["steps"][e])
        paid = steps_charged[:steps, e]
        charged = [f"{k + 1}{'+' if paid[k] > 0 else ''}"
                   for k in paid.nonzero().squeeze(-1).tolist()]  # fmt: skip
        own, slots = own_and_targets(cases.scenarios[e])
        broken = [f"{t['rule']}: {', '.join(t['broken'])}, {t['closest_step']} "
                  f"(to {_side(metrics['tracks'], e, own, slot, t['closest_step'])})"
                  for t, slot in zip(record["targets"], slots, strict=True)
                  if t["passed"] is False]  # fmt: skip
        print(f"| {e + 1} | {steps} | {', '.join(charged) or '-'} | {float(paid.sum()):g} "
              f"| {'; '.join(broken) or '-'} |")  # fmt: skip


if __name__ == "__main__":
    main()
