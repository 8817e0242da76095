"""Safe speed (COLREGs rule 6): a reward term that charges a policy vessel for the speed it
makes above a safe speed (docs/scenarios.md, "Mixed waters").

Rule 6 asks every vessel to proceed at all times at a speed at which it can take proper and
effective action to avoid collision. Our vessels perceive others only within 20 m; a navigator
that races at 3 m/s across a crossing target's track has crossed it before it could answer the
target. The term charges the race itself, in every water, whatever vessel is or is not in
sight. Measured at 0.2 in the waters recipe (two seeds, docs/results.md, "A safe speed"), it
slowed the navigators and they broke more give-way checks, not fewer; the mix keeps it off by
default.
"""

from __future__ import annotations

from torch import Tensor

from marinenav.sim.rules import StepEvents
from marinenav.sim.scenario import Scenario


def overspeed_penalty(
    scenario: Scenario, events: StepEvents, weight: float, safe_speed: float = 2.0
) -> Tensor:
    """``[E, R]``: ``-weight`` per m/s by which a vessel's speed over the ground after the step
    (``events.velocity``, world frame) exceeds ``safe_speed`` (m/s), 0 at or below it. The
    reward's callers zero it for traffic and for vessels that did not act; needs
    ``events.velocity``."""
    del scenario  # the rule reads the vessel's own motion only
    if events.velocity is None:
        raise ValueError("overspeed_penalty needs events.velocity")
    speed = events.velocity.norm(dim=-1)  # [E, R] m/s
    return (speed - safe_speed).clamp_min(0.0) * -weight


__all__ = ["overspeed_penalty"]
