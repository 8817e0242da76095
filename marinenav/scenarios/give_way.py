"""The give-way rule as a reward term: crossing ahead of a vessel on the starboard side.

COLREGs rule 15: of two vessels crossing, the one that has the other on its starboard side
keeps out of the way and avoids crossing ahead of it; rule 14 (head-on) asks both to turn to
starboard, which puts the other on the port side. The paper's COLREGs term
(``sim/colregs.py``) weighs the turn inside zones that end 17 m from a vessel; it does not see
a vessel that crosses ahead anyway. :func:`cross_ahead_penalty` is that case, per step;
:func:`bow_crossing_penalty` is the event itself, once: the step on which a vessel crosses
another's course line ahead of it, from its port side to its starboard side;
:func:`passed_ahead_penalty` reads the pass as the COLREGs check does
(:mod:`marinenav.encounters`): at the closest approach, ahead of the other's beam with the
other on the starboard side; :func:`give_way_check_penalty` is the rule-15 check itself, its
verdict kept step by step (who gives way fixed at the episode's start, the pass read at the
closest approach so far); :func:`port_turn_penalty` charges the turn the rule-14 and rule-15
checks read first, a turn to port while such a vessel closes; :func:`give_way_speed_penalty`
charges the way a vessel makes while it still has to keep out of another's way (the slow
approach that lets the other pass ahead, rather than the race across its bow);
:func:`stand_on_turn_penalty` is the other vessel's side of rule 15 (rule 17): the vessel that
stands on may not turn to port for a vessel on its own port side that must keep out of its way;
:func:`head_on_clearance_penalty` is rule 14's outcome step by step: a head-on vessel kept well
to port of the own course line until it is passed (port to port, at a distance).

Frames: world x is North, y is East; headings clockwise from North (rad); bearings relative to
a vessel's bow, positive to starboard.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from marinenav.angles import wrap_to_pi
from marinenav.sim.approach import ClosestApproach
from marinenav.sim.constants import VesselRole
from marinenav.sim.rules import StepEvents
from marinenav.sim.scenario import Scenario
from marinenav.sim.situation import (
    ABAFT_BEAM,
    ENCOUNTER_RANGE,
    ENCOUNTERS,
    GIVE_WAY,
    HEAD_ON,
    HEAD_ON_BEARING,
    classify_pairs,
)

AGAINST = ("traffic", "any")  # which vessels the term protects
# where give_way_check_penalty fixes who gives way: at the episode's start (as the COLREGs
# checks do), or where the two vessels first come within the encounter range
GIVE_WAY_FROM = ("start", "in_range")
# m: a head-on vessel this far to port of the own course line is clear (two default hulls touch
# within 5.6 m centre to centre; the lost head-on passes of the waters recipe closed to 4.3-5.5 m)
HEAD_ON_CLEARANCE = 10.0


def _pairs(scenario: Scenario, events: StepEvents, against: str) -> Tensor:
    """``[E, i, j]`` bool: policy vessel ``i`` that acted on the step, judged against present
    vessel ``j`` (not deactivated; not a policy vessel when ``against="traffic"``), ``i != j``."""
    if against not in AGAINST:
        raise ValueError(f"against must be one of {AGAINST}, got {against!r}")
    own = events.acted & (scenario.robot_role == int(VesselRole.POLICY))
    other = scenario.robot_present & ~events.deactivated
    if against == "traffic":
        other = other & (scenario.robot_role != int(VesselRole.POLICY))
    pairs = own.unsqueeze(2) & other.unsqueeze(1)
    pairs.diagonal(dim1=1, dim2=2).zero_()  # never a vessel against itself
    return pairs


def _in_frame(bow_x: Tensor, bow_y: Tensor, offset: Tensor) -> tuple[Tensor, Tensor]:
    """Where ``offset [..., 2]`` (world, m) lies in the frame of a vessel whose bow points along
    ``(bow_x, bow_y)`` (broadcast against ``offset[..., 0]``): to its starboard (> 0) or port
    (< 0) of its course line, and ahead of (> 0) or abaft (< 0) its beam."""
    side = bow_x * offset[..., 1] - bow_y * offset[..., 0]  # cross(bow, r): > 0 East of North
    ahead = bow_x * offset[..., 0] + bow_y * offset[..., 1]
    return side, ahead


def _side_and_ahead(pos: Tensor, theta: Tensor) -> tuple[Tensor, Tensor]:
    """``[E, i, j]`` each, m: where vessel ``i`` lies in vessel ``j``'s frame: to ``j``'s
    starboard (> 0) or port (< 0) of its course line, and ahead of (> 0) or abaft (< 0) its beam.
    ``pos [E, R, 2]`` world (x North, y East), ``theta [E, R]`` clockwise from North."""
    r = pos.unsqueeze(2) - pos.unsqueeze(1)  # [E, i, j, 2]: from vessel j to vessel i
    return _in_frame(torch.cos(theta).unsqueeze(1), torch.sin(theta).unsqueeze(1), r)


def _range(pos: Tensor) -> Tensor:
    """``[E, i, j]``: the distance (m) between vessels ``i`` and ``j``; ``pos [E, R, 2]`` world."""
    return torch.linalg.vector_norm(pos.unsqueeze(1) - pos.unsqueeze(2), dim=-1)


def _range_and_direction(pos: Tensor) -> tuple[Tensor, Tensor]:
    """``[E, i, j]`` each: the distance (m) from vessel ``i`` to vessel ``j`` and its direction
    (rad, clockwise from North); ``pos [E, R, 2]`` world."""
    d = pos.unsqueeze(1) - pos.unsqueeze(2)  # [E, i, j, 2]: from vessel i to vessel j
    return torch.linalg.vector_norm(d, dim=-1), torch.atan2(d[..., 1], d[..., 0])


def _to_give_way(pos: Tensor, theta: Tensor) -> tuple[Tensor, Tensor]:
    """``[E, i, j]`` each: the distance (m) from vessel ``i`` to vessel ``j``, and whether ``i``
    has ``j`` on its starboard side (relative bearing in (0, ABAFT_BEAM] deg) while ``i`` is
    ahead of ``j``'s beam (its bearing from ``j``'s bow within 90 deg): ``i`` must keep out of
    ``j``'s way and has not yet passed astern of it. ``pos [E, R, 2]`` world, ``theta [E, R]``."""
    distance, direction = _range_and_direction(pos)  # [E, i, j]: from vessel i to vessel j
    seen_from_own = wrap_to_pi(direction - theta.unsqueeze(2))  # bearing of j from i's bow
    own_from_target = wrap_to_pi(direction + math.pi - theta.unsqueeze(1))  # of i from j's bow
    starboard = (seen_from_own > 0) & (seen_from_own <= math.radians(ABAFT_BEAM))
    return distance, starboard & (own_from_target.abs() < math.pi / 2)


def _charge_port_turn(events: StepEvents, watched: Tensor, weight: float) -> Tensor:
    """``[E, R]``: ``-weight`` per radian each vessel turned to port on the step (its heading's
    change, wrapped; 0 for a turn to starboard) where ``watched [E, R]``, 0 elsewhere."""
    to_port = (-wrap_to_pi(events.theta - events.theta_before)).clamp_min(0.0)  # rad
    return torch.where(watched, to_port * -weight, torch.zeros_like(to_port))


def bow_crossing_penalty(
    scenario: Scenario,
    events: StepEvents,
    weight: float,
    against: str = "any",
    within: float = ENCOUNTER_RANGE,
) -> Tensor:
    """``[E, R]``: ``-weight`` for a policy vessel on the step on which it crosses another
    vessel's course line ahead of that vessel's beam, from its port side to its starboard side,
    less than ``within`` metres from it after the step (default
    :data:`~marinenav.sim.situation.ENCOUNTER_RANGE`, the perception range): it crossed the bow of
    a vessel that had it on its port side, i.e. of one it had to keep out of the way of (rule
    15; in a head-on meeting, a turn to port across the other's bow). Once per crossing (the
    step of the sign change), summed over the vessels crossed; 0 elsewhere. Passing astern,
    crossing a stand-on vessel's bow the other way, or farther than ``within`` costs nothing.

    ``against`` as in :func:`cross_ahead_penalty`. ``within`` may exceed the perception range:
    a ship that outruns a give-way target sees it while it closes and crosses its course line
    later, farther off. Needs ``events.pos_before`` and ``events.theta_before`` (the simulator
    gives them).
    """
    if events.pos_before is None or events.theta_before is None:
        raise ValueError("bow_crossing_penalty needs events.pos_before and events.theta_before")
    if not within > 0:
        raise ValueError(f"bow_crossing_penalty's range must be > 0 m, got {within!r}")
    pairs = _pairs(scenario, events, against)
    side_before, _ = _side_and_ahead(events.pos_before, events.theta_before)
    side, ahead = _side_and_ahead(events.pos, events.theta)
    distance = torch.hypot(side, ahead)  # the two components of the same offset, m
    crossed = (side_before < 0) & (side >= 0) & (ahead > 0) & (distance < within)
    count = (crossed & pairs).sum(dim=2)  # [E, R]
    return count.to(events.theta.dtype) * -weight


def passed_ahead_penalty(
    scenario: Scenario,
    events: StepEvents,
    weight: float,
    against: str = "any",
    within: float = ENCOUNTER_RANGE,
    at_boundaries: bool = False,
) -> Tensor:
    """``[E, R]``: ``-weight`` for a policy vessel on the step in which it passes its closest
    approach to another vessel, if at that closest approach it is ahead of the other's beam
    (its bearing from the other's bow within 90 deg) with the other on its own starboard side,
    less than ``within`` metres apart (default the perception range, as the checks' "met"):
    it passed ahead of a vessel it had to keep out of the way of, which the rule-15 check
    (:mod:`marinenav.encounters`, "passed astern") reads as broken. Summed over the vessels so
    passed; 0 elsewhere. (Two ships on reciprocal or parallel courses are abeam at their closest
    approach: neither ahead of the beam nor abaft it; the term leaves them alone.) Who gives way
    is read at the closest approach, where the check fixes it once from the encounter's start: a
    vessel that crosses ahead of the other and turns away, the other on its port side by then,
    is not charged though the check reads a pass ahead (docs/results.md, "The term and the check
    disagree on who gives way").

    The closest approach falls in a step when the step's relative motion (straight between the
    positions before and after it) first closes and then opens the distance: ``r0 . d < 0 <=
    r1 . d`` with ``r0, r1`` the offsets before and after and ``d = r1 - r0``; it is at ``r0 -
    (r0 . d / |d|^2) d``, judged with the headings after the step. ``against`` as in
    :func:`cross_ahead_penalty`; needs ``events.pos_before``.

    By default three closest approaches are no step's and go uncharged, though the check reads
    them: one on the boundary between two steps (the first closes the distance to its end, the
    next opens it from its start, as when a ship gathering way leaves a target on a
    near-parallel course behind), one at the episode's start and one at its end (a ship that
    reaches its goal ahead of a give-way target still coming on). With ``at_boundaries=True``
    the closest approach falls in a step when the distance closes at its start and opens at its
    end as the vessels' velocities say (``events.velocity_before``, ``events.velocity``: a
    boundary is read once, by the step it ends), judged at the closest point of the step's
    straight motion (a boundary's at the boundary itself); on an episode's first step
    (``events.first_step``) a distance that does not close at the start but opens over the step
    has it at the start, judged there with the start headings (``events.theta_before``); and a
    vessel whose episode ends on the step (goal, collision or the step limit) while the distance
    still closes has it at its last place, as the check reads a track that ends closing.
    """
    if events.pos_before is None:
        raise ValueError("passed_ahead_penalty needs events.pos_before")
    if not within > 0:
        raise ValueError(f"passed_ahead_penalty's range must be > 0 m, got {within!r}")
    boundary_fields = ("velocity", "velocity_before", "first_step", "theta_before")
    if at_boundaries and any(getattr(events, name) is None for name in boundary_fields):
        raise ValueError(
            "passed_ahead_penalty(at_boundaries=True) needs events."
            + ", events.".join(boundary_fields)
        )
    pairs = _pairs(scenario, events, against)
    # offsets [E, i, j, 2] from vessel j to vessel i, before and after the step
    r0 = events.pos_before.unsqueeze(2) - events.pos_before.unsqueeze(1)
    r1 = events.pos.unsqueeze(2) - events.pos.unsqueeze(1)
    d = r1 - r0
    closing, opening = (r0 * d).sum(-1), (r1 * d).sum(-1)
    at_closest = (closing < 0) & (opening >= 0)
    share = closing / (d * d).sum(-1).clamp_min(torch.finfo(d.dtype).tiny)
    theta = events.theta
    # the bows that judge each pair: vessel i's ([E, i, 1]) and vessel j's ([E, 1, j])
    bow_x, bow_y = torch.cos(theta), torch.sin(theta)
    bow_i_x, bow_i_y = bow_x.unsqueeze(2), bow_y.unsqueeze(2)
    bow_j_x, bow_j_y = bow_x.unsqueeze(1), bow_y.unsqueeze(1)
    if at_boundaries:
        v0 = events.velocity_before.unsqueeze(2) - events.velocity_before.unsqueeze(1)
        v1 = events.velocity.unsqueeze(2) - events.velocity.unsqueeze(1)
        closes_at_start = (r0 * v0).sum(-1) < 0
        closes_at_end = (r1 * v1).sum(-1) < 0
        at_closest = closes_at_start & ~closes_at_end
        share = share.clamp(-1.0, 0.0)  # within the step; at its start where the chord opens
        start = events.first_step.view(-1, 1, 1) & ~closes_at_start & (closing >= 0) & (opening > 0)
        # vessel i's episode ends on the step with the distance still closing: its last place
        ends = events.reach_goal | events.collision | events.timeout.unsqueeze(1)  # [E, R]
        end = ends.unsqueeze(2) & closes_at_end
        at_closest = at_closest | start | end
        share = torch.where(end, -torch.ones_like(share), share)
        x0, y0 = torch.cos(events.theta_before), torch.sin(events.theta_before)
        bow_i_x = torch.where(start, x0.unsqueeze(2), bow_i_x)
        bow_i_y = torch.where(start, y0.unsqueeze(2), bow_i_y)
        bow_j_x = torch.where(start, x0.unsqueeze(1), bow_j_x)
        bow_j_y = torch.where(start, y0.unsqueeze(1), bow_j_y)
        share = torch.where(start, torch.zeros_like(share), share)
    r = r0 - share.unsqueeze(-1) * d  # [E, i, j, 2]: j to i at the closest approach
    _, i_ahead_of_j = _in_frame(bow_j_x, bow_j_y, r)  # in j's frame
    j_side_of_i, _ = _in_frame(bow_i_x, bow_i_y, -r)  # in i's frame
    ahead_of_beam = i_ahead_of_j > 0
    j_to_starboard = j_side_of_i > 0
    near = torch.linalg.vector_norm(r, dim=-1) < within
    passed = at_closest & ahead_of_beam & j_to_starboard & near & pairs
    return passed.sum(dim=2).to(theta.dtype) * -weight


def give_way_check_penalty(
    scenario: Scenario,
    events: StepEvents,
    weight: float,
    against: str = "any",
    give_way_from: str = "start",
) -> Tensor:
    """``[E, R]``: the rule-15 check (:mod:`marinenav.encounters`, "passed astern") as a reward:
    over an episode a policy vessel earns ``-weight`` for every vessel the check finds it passed
    ahead of, and nothing else, whatever it steered.

    The check fixes who gives way once, at the episode's start
    (:func:`~marinenav.sim.situation.classify_pairs` on the scenario's start positions, headings and
    speeds: the other vessel on the own starboard side, not head-on, no overtaking), and reads
    the pass at the closest approach of the whole track: a give-way encounter is broken when
    there, within :data:`~marinenav.sim.situation.ENCOUNTER_RANGE`, the own vessel is not abaft the
    other's beam (its bearing from the other's bow not in (90, 270) deg). The simulator keeps
    every pair's closest approach so far (:mod:`marinenav.sim.approach`), so the verdict so far
    is known after every step; the term pays its change: ``-weight`` on the step on which the
    closest approach so far becomes such a pass ahead (on the first step, also one that the
    start already is), ``+weight`` back on the step on which a closer approach abaft the beam
    overturns it. The steps' payments sum to ``-weight`` times the broken encounters at the
    episode's end, as the check counts them from the track.

    Unlike :func:`passed_ahead_penalty`, a vessel that crosses ahead of a give-way target and
    turns away (the target on its port side at the closest approach) is charged, a stand-on or
    head-on target passed ahead of its beam is not, and an approach that a later, closer one
    supersedes (a ship circling back) costs nothing in the end.

    ``give_way_from="in_range"`` fixes who gives way where the two vessels first came within
    the range instead (``events.closest.encounter``, :mod:`marinenav.sim.approach`): where
    vessels start anywhere, the start's geometry says little about the meeting, and the policy
    sees a vessel only within that range. In an encounter set whose ships hold their courses
    until then it is the check's reading. ``against`` as in :func:`cross_ahead_penalty`; needs
    ``events.closest_before``, ``events.closest`` and ``events.first_step`` (the simulator gives
    the first two to layouts whose rules say ``LayoutRules(closest_approach=True)``, as the
    mix's do with this term on).
    """
    if give_way_from not in GIVE_WAY_FROM:
        raise ValueError(
            f"give_way_check_penalty's give_way_from must be one of {GIVE_WAY_FROM}, "
            f"got {give_way_from!r}"
        )
    if events.closest_before is None or events.closest is None or events.first_step is None:
        raise ValueError(
            "give_way_check_penalty needs events.closest_before, events.closest and "
            "events.first_step (a layout using it gives LayoutRules(closest_approach=True))"
        )
    pairs = _pairs(scenario, events, against)
    if give_way_from == "start":
        encounter = classify_pairs(scenario.start, scenario.init_theta, scenario.init_speed)
    else:  # fixed once met, and no pair is judged before it meets: one mask for both sides
        encounter = events.closest.encounter
    gives_way = (encounter == ENCOUNTERS.index(GIVE_WAY)) & pairs

    def broken(closest: ClosestApproach) -> Tensor:
        """``[E, i, j]``: vessel ``i`` passed ahead of give-way target ``j`` so far."""
        seen_from_target = closest.bearing.transpose(1, 2)  # vessel i from vessel j's bow, deg
        astern = (seen_from_target > 90.0) & (seen_from_target < 270.0)
        met = closest.distance <= ENCOUNTER_RANGE
        return gives_way & met & ~astern

    before = broken(events.closest_before) & ~events.first_step.view(-1, 1, 1)
    change = broken(events.closest).sum(dim=2) - before.sum(dim=2)  # [E, R]
    return change.to(events.theta.dtype) * -weight


def port_turn_penalty(
    scenario: Scenario, events: StepEvents, weight: float, against: str = "any"
) -> Tensor:
    """``[E, R]``: ``-weight`` per radian that a policy vessel turned to port on the step
    (its heading's change, wrapped; 0 for a turn to starboard), if another vessel within
    :data:`~marinenav.sim.situation.ENCOUNTER_RANGE` after the step bears from its bow between
    :data:`~marinenav.sim.situation.HEAD_ON_BEARING` to port and
    :data:`~marinenav.sim.situation.ABAFT_BEAM` to starboard (head-on, or to starboard as a ship
    to give way to) and the step brought the two closer: the alteration rules 14 and 15 ask to
    be to starboard, and which their checks read first (:mod:`marinenav.encounters`). 0
    elsewhere. ``against`` as in :func:`cross_ahead_penalty`; needs ``events.pos_before`` and
    ``events.theta_before``.
    """
    if events.pos_before is None or events.theta_before is None:
        raise ValueError("port_turn_penalty needs events.pos_before and events.theta_before")
    pairs = _pairs(scenario, events, against)
    theta = events.theta
    distance, direction = _range_and_direction(events.pos)  # [E, i, j]: i to j
    closing = distance < _range(events.pos_before)
    seen = wrap_to_pi(direction - theta.unsqueeze(2))  # bearing of j from i's bow
    ahead_or_starboard = (seen >= -math.radians(HEAD_ON_BEARING)) & (
        seen <= math.radians(ABAFT_BEAM)
    )
    watched = (ahead_or_starboard & closing & (distance < ENCOUNTER_RANGE) & pairs).any(dim=2)
    return _charge_port_turn(events, watched, weight)


def give_way_speed_penalty(
    scenario: Scenario, events: StepEvents, weight: float, against: str = "any"
) -> Tensor:
    """``[E, R]``: ``-weight`` per metre that a policy vessel made good on the step (straight
    from where it was before the step to where it is after), if after the step another vessel
    within :data:`~marinenav.sim.situation.ENCOUNTER_RANGE` is on its starboard side with the
    policy vessel still ahead of that vessel's beam (as :func:`cross_ahead_penalty`: one it
    must keep out of the way of and has not passed astern of) and the step brought the two
    closer. 0 elsewhere. A ship that races across the give-way target's bow pays for every
    metre of the race; one that slows and lets the target pass ahead pays little, and nothing
    once it is astern of it or the distance opens. ``against`` as in
    :func:`cross_ahead_penalty`; needs ``events.pos_before``.
    """
    if events.pos_before is None:
        raise ValueError("give_way_speed_penalty needs events.pos_before")
    pairs = _pairs(scenario, events, against)
    distance, give_way = _to_give_way(events.pos, events.theta)
    closing = distance < _range(events.pos_before)
    watched = (give_way & closing & (distance < ENCOUNTER_RANGE) & pairs).any(dim=2)
    made_good = torch.linalg.vector_norm(events.pos - events.pos_before, dim=-1)  # [E, R] m
    return torch.where(watched, made_good * -weight, torch.zeros_like(made_good))


def stand_on_turn_penalty(
    scenario: Scenario, events: StepEvents, weight: float, against: str = "any"
) -> Tensor:
    """``[E, R]``: ``-weight`` per radian that a policy vessel turned to port on the step (its
    heading's change, wrapped; 0 for a turn to starboard), if after the step another vessel
    within :data:`~marinenav.sim.situation.ENCOUNTER_RANGE` must keep out of its way (has it on its
    starboard side and is still ahead of its beam, as :func:`give_way_speed_penalty` reads it
    from the other side) and the step brought the two closer. 0 elsewhere. COLREGs rule 17: the
    stand-on vessel keeps its course and speed, and if it must act, does not turn to port for a
    vessel on its own port side; a turn to port there runs toward the stern the give-way vessel
    is steering for. ``against`` as in :func:`cross_ahead_penalty`; needs
    ``events.pos_before`` and ``events.theta_before``.
    """
    if events.pos_before is None or events.theta_before is None:
        raise ValueError("stand_on_turn_penalty needs events.pos_before and events.theta_before")
    pairs = _pairs(scenario, events, against)
    distance, give_way = _to_give_way(events.pos, events.theta)  # [E, i, j]: i gives way to j
    stand_on = give_way.transpose(1, 2)  # [E, i, j]: j gives way to i
    closing = distance < _range(events.pos_before)
    watched = (stand_on & closing & (distance < ENCOUNTER_RANGE) & pairs).any(dim=2)
    return _charge_port_turn(events, watched, weight)


def cross_ahead_penalty(
    scenario: Scenario, events: StepEvents, weight: float, against: str = "traffic"
) -> Tensor:
    """``[E, R]``: ``-weight`` for a policy vessel on a step after which another vessel lies on
    its starboard side (relative bearing in (0, 112.5] deg, as a give-way crossing or a head-on
    target just to starboard) within :data:`~marinenav.sim.situation.ENCOUNTER_RANGE`, while the
    policy vessel is ahead of that vessel's beam (bearing from its bow within 90 deg): crossing
    ahead of a ship it must keep out of the way of. Passing astern, or turning so that the
    other vessel is to port, ends it. 0 elsewhere (traffic, absent slots, no such vessel).

    ``against="traffic"``: only vessels that do not give way (``robot_role`` not ``POLICY``)
    count; ``"any"``: every other present vessel, policy-steered ones included (the
    observation does not tell a vessel that gives way from one that does not, so the rule is
    the same whoever the other is).
    """
    if against not in AGAINST:
        raise ValueError(f"against must be one of {AGAINST}, got {against!r}")
    pos, theta = events.pos, events.theta  # [E, R, 2] m, [E, R] rad (clockwise from North)
    own = scenario.robot_present & (scenario.robot_role == int(VesselRole.POLICY))
    other = scenario.robot_present
    if against == "traffic":
        other = other & (scenario.robot_role != int(VesselRole.POLICY))
    distance, give_way = _to_give_way(pos, theta)
    crossing = give_way & (distance < ENCOUNTER_RANGE)
    crossing = crossing & own.unsqueeze(2) & other.unsqueeze(1)
    crossing.diagonal(dim1=1, dim2=2).zero_()  # never a vessel against itself (0 m away)
    penalty = torch.full_like(theta, -weight)
    return torch.where(crossing.any(dim=2), penalty, torch.zeros_like(penalty))


def head_on_clearance_penalty(
    scenario: Scenario,
    events: StepEvents,
    weight: float,
    against: str = "any",
    clearance: float = HEAD_ON_CLEARANCE,
) -> Tensor:
    """``[E, R]``: rule 14 step by step. A policy vessel pays, on each step after which a
    head-on vessel still closes ahead of its beam, ``weight`` times how short that vessel lies
    of ``clearance`` m to port of the own course line: ``-weight * clamp(1 + side / clearance,
    0, 1)``, ``side`` the other vessel's offset from the own course line (m, > 0 to starboard).
    So ``-weight`` while it is dead ahead or to starboard (the pass starboard to starboard that
    rule 14 forbids), nothing once it lies ``clearance`` m or more to port, and nothing after it
    is passed (abaft the own beam) or opens. Of several head-on vessels, the least clear counts.

    Head-on is the encounter as the two vessels first came within
    :data:`~marinenav.sim.situation.ENCOUNTER_RANGE` (``events.closest.encounter``,
    :mod:`marinenav.sim.approach`: the other within 10 deg of dead ahead on a course within 10
    deg of the reciprocal), fixed from then on, so that the own ship's alteration, which takes the
    other off its bow, does not end the encounter. What it teaches is the alteration that
    :func:`port_turn_penalty` (only its direction) and the paper's COLREGs term (a turn inside
    zones ending 17 m off) leave to chance: large and early enough to pass port to port at a
    distance. ``against`` as in :func:`cross_ahead_penalty`; needs ``events.closest`` (a layout
    using it gives ``LayoutRules(closest_approach=True)``) and ``events.pos_before``.
    """
    if events.closest is None or events.pos_before is None:
        raise ValueError(
            "head_on_clearance_penalty needs events.closest and events.pos_before (a layout "
            "using it gives LayoutRules(closest_approach=True))"
        )
    pairs = _pairs(scenario, events, against)
    head_on = (events.closest.encounter == ENCOUNTERS.index(HEAD_ON)) & pairs  # [E, i, j]
    pos = events.pos
    closing = _range(pos) < _range(events.pos_before)
    # where vessel j lies in vessel i's frame (the helper gives i in j's frame)
    side, ahead = (t.transpose(1, 2) for t in _side_and_ahead(pos, events.theta))
    short = (1.0 + side / clearance).clamp(0.0, 1.0)  # 1 dead ahead or to starboard
    charged = head_on & closing & (ahead > 0)
    shortfall = torch.where(charged, short, torch.zeros_like(short)).amax(dim=2)  # [E, R]
    return shortfall * -weight


__all__ = [
    "AGAINST",
    "GIVE_WAY_FROM",
    "HEAD_ON_CLEARANCE",
    "bow_crossing_penalty",
    "cross_ahead_penalty",
    "give_way_check_penalty",
    "give_way_speed_penalty",
    "head_on_clearance_penalty",
    "passed_ahead_penalty",
    "port_turn_penalty",
    "stand_on_turn_penalty",
]
