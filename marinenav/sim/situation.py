"""The encounter situation of every pair of vessels, classified from their geometry (COLREGs
part B; docs/scenarios.md, "COLREGs checks").

Angles are in degrees, clockwise (to starboard) from the ship's bow or from North (the world
frame's x axis; y is East); positions in metres. The situation of a target as seen from the own
ship:

* ``overtaking`` (rule 13): the own ship comes up on the target from more than 22.5 degrees abaft
  its beam (the own ship's bearing from the target's bow between 112.5 and 247.5) and is faster;
* ``overtaken``: the same with the roles swapped (the own ship stands on);
* ``head-on`` (rule 14): the target within :data:`HEAD_ON_BEARING` of dead ahead on a course
  within :data:`HEAD_ON_COURSE` of the reciprocal;
* ``crossing, give way`` (rule 15): the target on the own ship's starboard side (bearing in
  (0, 112.5]), not head-on;
* ``crossing, stand on`` (rule 17): the target on the port side (bearing in [247.5, 360)).

The simulator classifies every pair where the two first come within :data:`ENCOUNTER_RANGE`
(:mod:`marinenav.sim.approach`); the COLREGs checks of a finished episode
(:mod:`marinenav.encounters`) classify at the episode's start.
"""

from __future__ import annotations

import torch

from marinenav.angles import bearing, wrap_to_180
from marinenav.sim.constants import PERCEPTION_DEFAULTS

HEAD_ON_BEARING = 10.0  # deg either side of dead ahead
HEAD_ON_COURSE = 10.0  # deg either side of the reciprocal course
ABAFT_BEAM = 112.5  # deg: more than 22.5 degrees abaft the beam
# m, the vessels' perception range: a target never this close was not met
ENCOUNTER_RANGE = PERCEPTION_DEFAULTS["range"]

HEAD_ON, GIVE_WAY, STAND_ON, OVERTAKING, OVERTAKEN = (
    "head-on", "crossing, give way", "crossing, stand on", "overtaking", "overtaken",
)  # fmt: skip
RULES = {HEAD_ON: "14", GIVE_WAY: "15", STAND_ON: "17", OVERTAKING: "13", OVERTAKEN: "13"}

ENCOUNTERS = (HEAD_ON, GIVE_WAY, STAND_ON, OVERTAKING, OVERTAKEN)  # classify_pairs' codes


def classify_pairs(pos: torch.Tensor, heading: torch.Tensor, speed: torch.Tensor) -> torch.Tensor:
    """The situation (module docstring) of every pair of ships, batched: ``[..., i, j]`` int64,
    an index into :data:`ENCOUNTERS`, of ship ``j`` as a target of ship ``i`` as the own ship
    (the diagonal is meaningless). ``pos [..., R, 2]`` m world, ``heading [..., R]`` rad
    clockwise from North, ``speed [..., R]`` m/s; any float dtype and device, no host sync."""
    own_pos, target_pos = pos.unsqueeze(-2), pos.unsqueeze(-3)  # [..., i, 1, 2], [..., 1, j, 2]
    own_heading, target_heading = heading.unsqueeze(-1), heading.unsqueeze(-2)
    own_speed, target_speed = speed.unsqueeze(-1), speed.unsqueeze(-2)
    beta = bearing(own_pos, own_heading, target_pos)  # the target seen from the own ship
    alpha = bearing(target_pos, target_heading, own_pos)  # the own ship seen from the target
    course = wrap_to_180(torch.rad2deg(target_heading - own_heading))
    abaft = 360.0 - ABAFT_BEAM
    overtaking = (alpha > ABAFT_BEAM) & (alpha < abaft) & (own_speed > target_speed)
    overtaken = (beta > ABAFT_BEAM) & (beta < abaft) & (target_speed > own_speed)
    ahead = torch.minimum(beta, 360.0 - beta) <= HEAD_ON_BEARING
    head_on = ahead & (course.abs() >= 180.0 - HEAD_ON_COURSE)
    code = torch.where(beta < 180.0, ENCOUNTERS.index(GIVE_WAY), ENCOUNTERS.index(STAND_ON))
    code = torch.where(head_on, ENCOUNTERS.index(HEAD_ON), code)
    code = torch.where(overtaken, ENCOUNTERS.index(OVERTAKEN), code)
    return torch.where(overtaking, ENCOUNTERS.index(OVERTAKING), code)


__all__ = [
    "ABAFT_BEAM",
    "ENCOUNTERS",
    "ENCOUNTER_RANGE",
    "GIVE_WAY",
    "HEAD_ON",
    "HEAD_ON_BEARING",
    "HEAD_ON_COURSE",
    "OVERTAKEN",
    "OVERTAKING",
    "RULES",
    "STAND_ON",
    "classify_pairs",
]
