"""The closest approach so far of every pair of vessels in an episode, and the encounter the
two met in.

The COLREGs checks (:mod:`marinenav.encounters`) read a finished track: the closest approach of
two ships is the least distance among their positions at the start and after every step (the
first of equal ones), and a check reads the bearings at which each ship saw the other there. The
simulator keeps exactly that while the episode runs (:class:`ClosestApproach`, started with the
episode, updated after every step), so that a rule can read the checks' verdict step by step
(``StepEvents.closest_before`` and ``StepEvents.closest``; the give-way check as a reward term,
:func:`marinenav.scenarios.give_way.give_way_check_penalty`).

The checks classify an encounter once, at the episode's start, where the Imazu cases begin
theirs. Where vessels start anywhere (the random layouts), the encounter begins where the two
can first see each other: :class:`ClosestApproach` also keeps the encounter
(:func:`marinenav.sim.situation.classify_pairs`, with the speeds through the water then) as it was
on the first step the two were within :data:`~marinenav.sim.situation.ENCOUNTER_RANGE`.

Frames: world x is North, y is East; headings clockwise from North (rad); bearings relative to
a vessel's bow (deg in [0, 360), clockwise). Shapes: ``E`` environments, ``R`` vessel slots;
pair ``[E, i, j]`` is vessel ``j`` as seen from vessel ``i``. Absent slots get values like any
other (their pairs mean nothing; rules mask them).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from marinenav.angles import bearing
from marinenav.sim.situation import ENCOUNTER_RANGE, classify_pairs

NOT_MET = -1  # ClosestApproach.encounter of a pair never yet within ENCOUNTER_RANGE


class ClosestApproach(NamedTuple):
    """The closest approach so far of every pair of vessels, ``[E, i, j]`` each."""

    distance: torch.Tensor  # m, between the two centres
    bearing: torch.Tensor  # deg in [0, 360): vessel j seen from vessel i's bow, there and then
    # int64: the encounter (situation.ENCOUNTERS index) of target j with own vessel i as it was
    # when the two first came within ENCOUNTER_RANGE; NOT_MET before
    encounter: torch.Tensor


def approach_now(pos: torch.Tensor, theta: torch.Tensor, speed: torch.Tensor) -> ClosestApproach:
    """Every pair's distance, bearings and encounter where the vessels are: ``pos [E, R, 2]`` m
    world, ``theta [E, R]`` rad clockwise from North, ``speed [E, R]`` m/s through the water
    (the encounter :data:`NOT_MET` where the two are farther apart than the range)."""
    own, other = pos.unsqueeze(-2), pos.unsqueeze(-3)  # [E, i, 1, 2], [E, 1, j, 2]
    distance = torch.linalg.vector_norm(other - own, dim=-1)
    met = distance <= ENCOUNTER_RANGE
    encounter = torch.where(met, classify_pairs(pos, theta, speed), NOT_MET)
    return ClosestApproach(distance, bearing(own, theta.unsqueeze(-1), other), encounter)


def closer(kept: ClosestApproach, now: ClosestApproach) -> ClosestApproach:
    """``kept`` where it is at least as close as ``now`` (the earlier of equal approaches, as
    the checks' first least distance), ``now`` where it is closer; the encounter ``kept``'s
    once met, ``now``'s until then."""
    nearer = now.distance < kept.distance
    return ClosestApproach(
        torch.where(nearer, now.distance, kept.distance),
        torch.where(nearer, now.bearing, kept.bearing),
        torch.where(kept.encounter == NOT_MET, now.encounter, kept.encounter),
    )


__all__ = ["NOT_MET", "ClosestApproach", "approach_now", "closer"]
