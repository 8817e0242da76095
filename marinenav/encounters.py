"""Encounters between an own ship and target ships, and the COLREGs checks of an episode
(docs/scenarios.md, "COLREGs checks").

An encounter is one of :mod:`marinenav.sim.situation`'s situations (head-on, crossing give way
or stand on, overtaking, overtaken), classified once, from the geometry at the episode's start;
the checks read the tracks the ships sailed. Angles are in degrees, clockwise (to starboard) from
the ship's bow or from North (the world frame's x axis; y is East); positions in metres.

Checks (one line each, as docs/scenarios.md states them):

* **turned to starboard** (rules 14, 15): the first time before the closest approach that the own
  ship's heading differs from its initial heading by more than :data:`TURN_THRESHOLD`, the
  difference is to starboard; read a second way, **from sighting**: the first time from the
  step the target first came within :data:`ENCOUNTER_RANGE` (the perception range) to the
  closest approach that the heading differs from the heading at that step by more than the
  threshold, or, when it never does, the alteration from the initial heading that the own ship
  held at that step (an alteration made and undone before the own ship could perceive the
  target is no answer to it; one made and held is its standing answer);
* **passed port to port** (rule 14): at the closest approach the target bears on the own ship's
  port side (bearing in (180, 360));
* **passed astern** (rule 15): at the closest approach the own ship is abaft the target's beam
  (its bearing from the target's bow in (90, 270));
* **kept clear** (rule 13): the own ship never came within the two hulls' contact distance plus
  :data:`CLEAR_MARGIN` of the target.

A head-on encounter passes when the own ship turned to starboard and passed port to port, a
give-way crossing when it turned to starboard and passed astern, an overtaking when it kept
clear; a stand-on encounter has no check here (rule 17's duties are not checked), nor has a
target that never came within :data:`ENCOUNTER_RANGE` of the own ship (it was never met: the
own ship kept out of its way before it could even perceive it). Every check records both readings
of the turn: ``passed`` and ``broken`` read the first (the one docs/results.md counts),
``passed_sighted`` and ``broken_sighted`` the second.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from marinenav.angles import bearing, wrap_to_180
from marinenav.sim.colregs import PASSING_MARGIN
from marinenav.sim.situation import (
    ABAFT_BEAM,
    ENCOUNTER_RANGE,
    ENCOUNTERS,
    GIVE_WAY,
    HEAD_ON,
    HEAD_ON_BEARING,
    HEAD_ON_COURSE,
    OVERTAKEN,
    OVERTAKING,
    RULES,
    STAND_ON,
    classify_pairs,
)

TURN_THRESHOLD = 10.0  # deg: a course alteration, not a wobble
CLEAR_MARGIN = PASSING_MARGIN  # m beyond contact (the COLREGs penalty's passing margin)


def classify(
    own_pos: torch.Tensor,
    own_heading: torch.Tensor,
    own_speed: torch.Tensor,
    target_pos: torch.Tensor,
    target_heading: torch.Tensor,
    target_speed: torch.Tensor,
) -> str:
    """The encounter (:mod:`marinenav.sim.situation`) of one target with the own ship: positions
    ``[2]`` m, headings ``[]`` rad, speeds ``[]`` m/s; :func:`classify_pairs` in float64."""
    f64 = torch.float64
    pos = torch.stack([own_pos, target_pos]).to(f64)
    heading = torch.stack([torch.as_tensor(own_heading), torch.as_tensor(target_heading)])
    speed = torch.stack([torch.as_tensor(own_speed), torch.as_tensor(target_speed)])
    code = classify_pairs(pos, heading.to(f64), speed.to(f64))[0, 1]
    return ENCOUNTERS[int(code)]


@dataclass
class TargetCheck:
    """One target of an episode: its encounter, closest approach and the rule's checks (``None``
    where a check does not apply)."""

    encounter: str
    closest: float  # m, the least distance between the two ships' centres
    closest_step: int  # the step of the closest approach
    met: bool  # the target came within ENCOUNTER_RANGE
    turned_starboard: bool | None
    port_to_port: bool | None
    astern: bool | None
    kept_clear: bool | None
    # deg, to starboard > 0: the own ship's first course alteration (more than TURN_THRESHOLD
    # from its initial heading) before the closest approach; None when it held its course
    first_alteration: float | None = None
    # the same read from sighting (sighted_step: the first step the target was within
    # ENCOUNTER_RANGE; None for a target never met): the first alteration from the heading at
    # that step before the closest approach, else the one from the initial heading held there
    sighted_step: int | None = None
    turned_starboard_sighted: bool | None = None
    first_alteration_sighted: float | None = None

    def _kept(self, turned_starboard: bool | None) -> bool | None:
        if not self.met:
            return None
        if self.encounter == HEAD_ON:
            return bool(turned_starboard and self.port_to_port)
        if self.encounter == GIVE_WAY:
            return bool(turned_starboard and self.astern)
        if self.encounter == OVERTAKING:
            return bool(self.kept_clear)
        return None

    @property
    def passed(self) -> bool | None:
        """Whether the encounter's rule was kept, the turn read from the start; ``None`` for a
        stand-on encounter or a target never met."""
        return self._kept(self.turned_starboard)

    @property
    def passed_sighted(self) -> bool | None:
        """:attr:`passed` with the turn read from sighting."""
        return self._kept(self.turned_starboard_sighted)

    @property
    def broken(self) -> list[str]:
        """What broke the rule, in words (empty when it was kept or does not apply): ``held
        course`` or ``turned to port`` (the first alteration), ``passed starboard to starboard``
        (rule 14), ``passed ahead`` (rule 15), ``came too close`` (rule 13)."""
        return self._broken(self.passed, self.turned_starboard, self.first_alteration)

    @property
    def broken_sighted(self) -> list[str]:
        """:attr:`broken` with the turn read from sighting."""
        return self._broken(
            self.passed_sighted, self.turned_starboard_sighted, self.first_alteration_sighted
        )

    def _broken(
        self, passed: bool | None, turned_starboard: bool | None, first_alteration: float | None
    ) -> list[str]:
        if passed is not False:
            return []
        out = []
        if turned_starboard is False:
            out.append("held course" if first_alteration is None else "turned to port")
        if self.port_to_port is False:
            out.append("passed starboard to starboard")
        if self.astern is False:
            out.append("passed ahead")
        if self.kept_clear is False:
            out.append("came too close")
        return out


def first_alteration_at(heading: torch.Tensor) -> tuple[int, float] | None:
    """The first course alteration along headings ``[n]`` rad (clockwise): ``(index, degrees)``
    of the first change from ``heading[0]`` of more than :data:`TURN_THRESHOLD` (to starboard >
    0); ``None`` when the heading never changed that much."""
    turn = wrap_to_180(torch.rad2deg(heading - heading[0]))  # [n]
    altered = (turn.abs() > TURN_THRESHOLD).nonzero()
    if not len(altered):
        return None
    k = int(altered[0, 0])
    return k, float(turn[k])


def first_alteration(heading: torch.Tensor) -> float | None:
    """The angle (deg) of :func:`first_alteration_at`; ``None`` when there is none."""
    found = first_alteration_at(heading)
    return None if found is None else found[1]


def check_target(
    own_pos: torch.Tensor,
    own_heading: torch.Tensor,
    target_pos: torch.Tensor,
    target_heading: torch.Tensor,
    contact: float,
    encounter: str,
) -> TargetCheck:
    """The checks of one target along tracks of ``T`` steps: positions ``[T, 2]`` m and
    headings ``[T]`` rad of both ships (step 0 the start), ``contact`` the distance at which the
    hulls touch (m), ``encounter`` from :func:`classify`."""
    distance = torch.linalg.vector_norm(target_pos - own_pos, dim=-1)  # [T]
    k = int(distance.argmin())
    met = float(distance[k]) <= ENCOUNTER_RANGE
    first = first_alteration(own_heading[: k + 1])
    # the first step within range (met: at the latest the closest approach)
    sighted = int((distance <= ENCOUNTER_RANGE).nonzero()[0, 0]) if met else None
    first_sighted = None
    if met:
        first_sighted = first_alteration(own_heading[sighted : k + 1])
        if first_sighted is None:  # no answer in sight: the alteration held at sighting, if any
            first_sighted = first_alteration(own_heading[[0, sighted]])
    beta = float(bearing(own_pos[k], own_heading[k], target_pos[k]))
    alpha = float(bearing(target_pos[k], target_heading[k], own_pos[k]))
    rule_14_15 = encounter in (HEAD_ON, GIVE_WAY)
    return TargetCheck(
        encounter=encounter,
        closest=float(distance[k]),
        closest_step=k,
        met=met,
        turned_starboard=(first is not None and first > 0) if rule_14_15 else None,
        port_to_port=(180.0 < beta < 360.0) if encounter == HEAD_ON else None,
        astern=(90.0 < alpha < 270.0) if encounter == GIVE_WAY else None,
        kept_clear=(
            float(distance.min()) >= contact + CLEAR_MARGIN if encounter == OVERTAKING else None
        ),
        first_alteration=first if rule_14_15 else None,
        sighted_step=sighted,
        turned_starboard_sighted=(
            (first_sighted is not None and first_sighted > 0) if rule_14_15 and met else None
        ),
        first_alteration_sighted=first_sighted if rule_14_15 else None,
    )


def check_episode(
    pos: torch.Tensor,
    heading: torch.Tensor,
    speed: torch.Tensor,
    radius: torch.Tensor,
    own: int = 0,
    targets: list[int] | None = None,
) -> list[TargetCheck]:
    """Classify and check every target of one episode's tracks.

    Args:
        pos: ``[T, R, 2]`` m, world frame, every ship at every step (step 0 the start).
        heading: ``[T, R]`` rad, clockwise from North.
        speed: ``[R]`` m/s at the start (classification).
        radius: ``[R]`` m, collision radii (contact at their sum).
        own: the own ship's slot.
        targets: the targets' slots (default every other slot).
    """
    slots = range(pos.shape[1]) if targets is None else targets
    out = []
    for t in slots:
        if t == own:
            continue
        encounter = classify(
            pos[0, own], heading[0, own], speed[own], pos[0, t], heading[0, t], speed[t]
        )
        out.append(
            check_target(
                pos[:, own], heading[:, own], pos[:, t], heading[:, t],
                float(radius[own] + radius[t]), encounter,
            )  # fmt: skip
        )
    return out


def own_and_targets(scenario: dict) -> tuple[int, list[int]] | None:
    """``(own ship's slot, traffic slots)`` of a scenario dict with exactly one vessel the
    policy steers and some traffic (``robots.role``), else ``None``: an encounter set."""
    roles = scenario["robots"].get("role")
    if not roles:
        return None
    own = [k for k, role in enumerate(roles) if role == "policy"]
    targets = [k for k, role in enumerate(roles) if role != "policy"]
    return (own[0], targets) if len(own) == 1 and targets else None


def episode_encounters(
    scenario: dict, pos: torch.Tensor, theta: torch.Tensor, steps: int
) -> list[TargetCheck]:
    """The checks of every target of one episode of an encounter set (:func:`own_and_targets`)
    from its tracks: ``pos [T, R, 2]`` m and ``theta [T, R]`` rad (step 0 the start), of which
    the first ``steps + 1`` rows are the episode (the rest came after it ended)."""
    own, targets = own_and_targets(scenario)
    robots = scenario["robots"]
    velocity = torch.tensor(robots["init_velocity_r"], dtype=torch.float64)[:, :2]
    speed = torch.linalg.vector_norm(velocity, dim=-1)
    radius = torch.tensor(robots["r"], dtype=torch.float64)
    count = len(robots["r"])
    return check_episode(
        pos[: steps + 1, :count], theta[: steps + 1, :count], speed, radius, own, targets
    )


def colregs_kept(checks: list[TargetCheck], success: bool, sighted: bool = False) -> bool:
    """An episode keeps the COLREGs when it succeeded and every checked encounter passed (an
    episode with stand-on encounters only: when it succeeded); ``sighted``: the turns read from
    sighting (:attr:`TargetCheck.passed_sighted`)."""
    return success and all((c.passed_sighted if sighted else c.passed) is not False for c in checks)


def encounter_records(
    scenarios: list[dict], tracks: dict[str, torch.Tensor], successes: list[bool]
) -> list[dict | None]:
    """Per episode of an evaluation with tracks (``Evaluator.run(..., tracks=True)``): for an
    encounter episode its targets' checks and whether it kept the COLREGs, as plain data;
    ``None`` for the other episodes."""
    out: list[dict | None] = []
    for e, scenario in enumerate(scenarios):
        if own_and_targets(scenario) is None:
            out.append(None)
            continue
        checks = episode_encounters(
            scenario, tracks["pos"][:, e], tracks["theta"][:, e], int(tracks["steps"][e])
        )
        out.append({
            "targets": [{**vars(c), "rule": RULES[c.encounter], "passed": c.passed,
                         "broken": c.broken, "passed_sighted": c.passed_sighted,
                         "broken_sighted": c.broken_sighted} for c in checks],
            "colregs_kept": colregs_kept(checks, successes[e]),
            "colregs_kept_sighted": colregs_kept(checks, successes[e], sighted=True),
        })  # fmt: skip
    return out


def format_encounters(records: list[dict | None], successes: list[bool], labels: list[str]) -> str:
    """A Markdown table, one row per encounter episode: its label, success, each target's
    encounter, rule, closest approach (m) and check (with what broke it, e.g. ``no (turned to
    port)``), and whether it kept the COLREGs, with the turns read from the start and from
    sighting (``-`` for a record without the second reading)."""

    def mark(value: bool | None, broken: list[str] | None = None) -> str:
        if value is None:
            return "n/a"
        return "yes" if value else ("no (" + "; ".join(broken) + ")" if broken else "no")

    rows = ["| case | success | targets: encounter (rule), closest (m), rule kept | COLREGs kept "
            "| COLREGs kept, turns from sighting |", "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for record, success, label in zip(records, successes, labels, strict=True):
        if record is None:
            continue
        targets = "; ".join(
            f"{t['encounter']} ({t['rule']}), {t['closest']:.1f}, "
            f"{mark(t['passed'], t.get('broken'))}"
            for t in record["targets"]
        )
        sighted = record.get("colregs_kept_sighted")
        rows.append(f"| {label} | {mark(success)} | {targets} | {mark(record['colregs_kept'])} "
                    f"| {'-' if sighted is None else mark(sighted)} |")  # fmt: skip
    return "\n".join(rows)


__all__ = [
    "ABAFT_BEAM",
    "CLEAR_MARGIN",
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
    "TURN_THRESHOLD",
    "TargetCheck",
    "bearing",
    "check_episode",
    "check_target",
    "classify",
    "classify_pairs",
    "colregs_kept",
    "encounter_records",
    "episode_encounters",
    "first_alteration",
    "first_alteration_at",
    "format_encounters",
    "own_and_targets",
]
