"""A reward term priced by a Lagrange multiplier: constrained learning for off-policy agents.

A layout's rule term (``passed_ahead``, ``port_turn``, ...) has a fixed weight: too low and the
navigator breaks the rule, too high and it gives up the task to keep it. With
``training.constraint.term=<name>`` the weight becomes a price the run sets itself
(docs/training.md, "A term as a constraint: `training.constraint`"). The term's *cost* of an
episode is minus the term's sum over it, per robot (a penalty of 10 charged once costs 10), and
the run asks that the mean cost per episode stay at or below ``target``. The multiplier
``lambda`` (``initial`` at the start, 1 being the term's configured weight) follows projected
gradient ascent on that constraint, one step per finished episode,

``lambda <- clip(lambda + lr * (cost - target), 0, max)``,

so it rises while the term is paid more than the target allows and falls back when it is not.
With ``training.constraint.part=<part>`` (a mixed layout's part, ``scenario=mix``) only that
part's episodes step it: the cost asked of, say, the Imazu encounters alone, which a mean over
every part (most of them harbour and open water, where the term is seldom paid) can hide.
What the agents learn from is the reward with the term at ``lambda`` times its weight: the replay
keeps each transition's term apart (its n-step discounted sum, beside the reward), and every
sampled batch is priced at the multiplier of the moment,
``reward <- reward + (lambda - 1) * term``, so a changed multiplier re-prices old transitions too.
The environment's own reward, returns and logs keep the configured weight.

Everything here is device tensors updated in place: no host read (the multiplier is read back
with the other metrics at each log).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase

from marinenav.keys import PRICED_TERM, REWARD

# the key of a transition's priced term, beside ("next", "reward") [..., 1]
PRICED = PRICED_TERM


class PricedTerm:
    """The multiplier of one reward term and its update (see the module docstring).

    Args:
        term: the reward term's name, one of ``term_names``.
        term_names: the environment's reward terms, in the order of its ``reward_terms``.
        target: the allowed mean cost per episode (reward units per robot, >= 0).
        lr: the multiplier's step per finished episode per unit of cost above the target (> 0).
        initial: the multiplier at the start (>= 0; 1 is the term's configured weight).
        ceiling: the multiplier's largest value (>= initial).
        device: where the multiplier lives.
        part: the mixed layout's part whose episodes alone step the multiplier (``None``: every
            episode), one of ``part_names``.
        part_names: the run's mixture parts in their order (``env.layout_part`` indexes them);
            empty when the run's layout is not a mixture.
    """

    def __init__(
        self, term: str, term_names: tuple[str, ...] | list[str], target: float, lr: float,
        initial: float, ceiling: float, device: torch.device, part: str | None = None,
        part_names: tuple[str, ...] | list[str] = (),
    ) -> None:  # fmt: skip
        names = list(term_names)
        if term not in names:
            raise ValueError(f"training.constraint.term={term!r} is not a reward term of this "
                             f"run; its terms are {', '.join(names)}")  # fmt: skip
        parts = list(part_names)
        if part is not None and not parts:
            raise ValueError(f"training.constraint.part={part!r} needs a mixed layout "
                             "(scenario=mix); this run's layout has no parts")  # fmt: skip
        if part is not None and part not in parts:
            raise ValueError(f"training.constraint.part={part!r} is not a part of this run's "
                             f"mixture; its parts are {', '.join(parts)}")  # fmt: skip
        checks = (
            ("target", target, target >= 0.0, ">= 0"), ("lr", lr, lr > 0.0, "> 0"),
            ("initial", initial, initial >= 0.0, ">= 0"),
            ("max", ceiling, ceiling >= initial, f">= training.constraint.initial ({initial})"),
        )  # fmt: skip
        for key, value, ok, rule in checks:
            if not (ok and math.isfinite(value)):
                raise ValueError(f"training.constraint.{key} must be finite and {rule}, "
                                 f"got {value}")  # fmt: skip
        self.term = term
        self.index = names.index(term)
        self.part = part
        self.part_index = None if part is None else parts.index(part)
        self.target, self.lr, self.ceiling = float(target), float(lr), float(ceiling)
        self.multiplier = torch.tensor(float(initial), dtype=torch.float64, device=device)
        # the counted episodes' cost and number since the last log (train/cost_<term>)
        self.cost_sum = torch.zeros((), dtype=torch.float64, device=device)
        self.counted = torch.zeros((), dtype=torch.float64, device=device)

    def observe_episodes(
        self, term_per_robot: torch.Tensor, done: torch.Tensor,
        episode_part: torch.Tensor | None = None,
    ) -> None:  # fmt: skip
        """One multiplier step per finished episode (of the constraint's part, if it has one).

        Args:
            term_per_robot: ``[E]`` the term's sum over each environment's episode so far,
                divided by its robots (reward units; a penalty is negative).
            done: ``[E]`` bool, the environments whose episode ended in this step.
            episode_part: ``[E]`` int64, the mixture part of each environment's episode (the
                one that ended, not its successor); required when the constraint has a part.
        """
        if self.part_index is not None:
            if episode_part is None:
                raise ValueError(f"the constraint counts part {self.part!r}'s episodes only: "
                                 "pass each episode's part")  # fmt: skip
            done = done & (episode_part == self.part_index)
        cost = -term_per_robot.double()
        charged = torch.where(done, cost, 0.0).sum()
        finished = done.sum()
        self.cost_sum.add_(charged)
        self.counted.add_(finished)
        step = (charged - self.target * finished) * self.lr
        self.multiplier.copy_((self.multiplier + step).clamp(0.0, self.ceiling))

    def reprice(self, batch: TensorDictBase) -> TensorDictBase:
        """Price a sampled batch's term at the multiplier: ``("next", "reward")`` becomes
        ``reward + (lambda - 1) * ("next", PRICED)``, both ``[B, 1]``: a new tensor in the
        batch, so the replay's stored reward (which the batch might view) stays as written."""
        reward = batch.get(("next", REWARD))
        extra = (self.multiplier - 1.0).to(reward.dtype) * batch.get(("next", PRICED))
        batch.set(("next", REWARD), reward + extra)
        return batch

    def log_values(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The multiplier now, the counted episodes' summed cost and their number since the last
        :meth:`reset_log` (0-d device tensors, read back with the trainer's other metrics)."""
        return self.multiplier, self.cost_sum, self.counted

    def reset_log(self) -> None:
        self.cost_sum.zero_()
        self.counted.zero_()

    def state_dict(self) -> dict[str, Any]:
        return {"term": self.term, "part": self.part, "multiplier": self.multiplier.clone(),
                "cost_sum": self.cost_sum.clone(), "counted": self.counted.clone()}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = (state["term"], state.get("part"))
        if saved != (self.term, self.part):
            raise ValueError(f"the checkpoint prices term {saved[0]!r} over part {saved[1]!r}, "
                             f"this run term {self.term!r} over part {self.part!r}")  # fmt: skip
        self.multiplier.copy_(state["multiplier"])
        if "cost_sum" in state:  # checkpoints from before the cost was logged lack them
            self.cost_sum.copy_(state["cost_sum"])
            self.counted.copy_(state["counted"])


def make_priced_term(
    constraint, term_names: tuple[str, ...] | list[str], device: torch.device,
    part_names: tuple[str, ...] | list[str] = (),
) -> PricedTerm | None:  # fmt: skip
    """The run's :class:`PricedTerm` from ``training.constraint`` (``None`` when its ``term``
    is null or the key is absent); ``part_names``: the run's mixture parts, if any."""
    if constraint is None or constraint.get("term", None) is None:
        return None
    return PricedTerm(constraint.term, term_names, target=constraint.target, lr=constraint.lr,
                      initial=constraint.initial, ceiling=constraint.max, device=device,
                      part=constraint.get("part", None), part_names=part_names)  # fmt: skip
