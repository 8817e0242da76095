"""``scenario=harbour``: a channel with moored boats along both banks and two-way traffic.

Written as a user would write a layout (docs/extending.md, "Add a scenario layout"): one class,
one config dataclass, one YAML file (``conf/scenario/harbour.yaml``).

The channel runs along the map's x axis ("North") through its middle. Moored boats (static
obstacles of radius ``boat_radius``) lie in a row along each bank, ``channel_width`` apart, at
x from 10 m to ``width - 10`` m, one boat in each of ``boats_per_bank`` equal stretches at a
random place in its middle half. Vessels keep to starboard: ``northbound`` ones start near
x = 3 m in the lane on the +y side of the centre line and head for the far end of the same
lane, ``southbound`` ones the other way in the -y lane; ``crossing`` ones start at the -y edge
of the traffic lanes, mid-channel, and cross to the +y edge, through both lanes. Vessels of one
direction start 6.5 m apart along the channel, so no two start in contact (two hulls touch
within 5.6 m); initial headings point at the goal, give or take 30 degrees; speeds and thrusts
start at zero. Lanes span from 3 m off the centre line to 0.5 m short of touching a boat.

All draws come from the generator handed to :meth:`HarbourLayout.generate`, one call per kind:
``[n, vessels, 5]`` uniforms, then ``[n, 2 * boats_per_bank]``. One stage.

Options beyond the paper (all off by default, so the harbour keeps the paper's rules):
``traffic`` lane vessels (the last northbound and southbound ones, alternately) do not give way:
they follow their lane to its far end at ``traffic_speed`` (a route of one waypoint, their goal)
and then hold their course. The layout's own rules (docs/extending.md, "Give a layout rules of
its own"): ``close_quarters`` weighs a penalty for every metre a vessel's hull comes within
:data:`CLOSE_QUARTERS` of another vessel's; ``stay_in_channel`` ends the episode of a vessel whose
hull crosses a row of moored boats, as running aground on the quay would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest

import torch
from torch import Tensor

from marinenav.scenarios.base import DeviceConstant, ScenarioLayout, register_layout
from marinenav.sim.constants import ROBOT_DEFAULTS, VesselRole
from marinenav.sim.rules import LayoutRules, StepEvents
from marinenav.sim.scenario import Scenario, Slots
from marinenav.sim.traffic import under_way

VESSEL_SPACING = 6.5  # m between the starts of vessels of one direction (hulls touch at 5.6)
END_MARGIN = 3.0  # m from the map's ends to the first start and the last goal
BOAT_SPAN_MARGIN = 10.0  # m from the map's ends to the first and last boat stretch
LANE_INNER = 3.0  # m from the centre line to a lane's inner edge
LANE_CLEARANCE = 0.5  # m between a lane's outer edge and contact with a moored boat
HEADING_SPREAD = math.pi / 6  # rad, initial heading within this of the goal's bearing
CROSSING_GOAL_SPREAD = 3.0  # m, crossing goal's x within this of its start's
_VESSEL_RADIUS = float(ROBOT_DEFAULTS["r"])  # m, collision radius of the default vessel
CLOSE_QUARTERS = 3.0  # m of clear water between two hulls below which the penalty grows


@dataclass
class HarbourConfig:
    channel_width: float = 24.0  # m between the two rows of moored boats (centres)
    boats_per_bank: int = 3  # moored boats in each row
    boat_radius: float = 1.5  # m
    northbound: int = 2  # vessels heading +x in the +y lane (at most 3)
    southbound: int = 2  # vessels heading -x in the -y lane (at most 3)
    crossing: int = 1  # vessels crossing the channel from -y to +y (at most 2)
    traffic: int = 0  # lane vessels that do not give way (follow their lane; at most 4)
    traffic_speed: float = 1.5  # m/s, the traffic's speed along its lane
    close_quarters: float = 0.0  # penalty per step and metre inside CLOSE_QUARTERS of a vessel
    stay_in_channel: bool = False  # a hull crossing a row of moored boats ends its episode


@register_layout
class HarbourLayout(ScenarioLayout):
    """A harbour channel (module docstring). Options are checked here, in one line each."""

    name = "harbour"
    Config = HarbourConfig

    def __init__(self, config: HarbourConfig | None = None) -> None:
        c = config or HarbourConfig()
        for key, most in (("northbound", 3), ("southbound", 3), ("crossing", 2)):
            value = getattr(c, key)
            if not isinstance(value, int) or not 0 <= value <= most:
                raise ValueError(f"scenario.{key} must be an integer in [0, {most}], got {value}")
        if c.northbound + c.southbound + c.crossing < 1:
            raise ValueError("the harbour needs at least one vessel")
        if not isinstance(c.boats_per_bank, int) or not 0 <= c.boats_per_bank <= 6:
            raise ValueError(f"scenario.boats_per_bank must be in [0, 6], got {c.boats_per_bank}")
        if not 0 < c.boat_radius <= 3:
            raise ValueError(f"scenario.boat_radius must be in (0, 3] m, got {c.boat_radius}")
        lane_outer = c.channel_width / 2 - c.boat_radius - _VESSEL_RADIUS - LANE_CLEARANCE
        if lane_outer < LANE_INNER + 1.0:
            least = 2 * (LANE_INNER + 1.0 + c.boat_radius + _VESSEL_RADIUS + LANE_CLEARANCE)
            raise ValueError(
                f"scenario.channel_width={c.channel_width} m leaves no traffic lanes; it must "
                f"be at least {least:.1f} m with boat_radius={c.boat_radius} m"
            )
        lanes = c.northbound + c.southbound
        if not isinstance(c.traffic, int) or not 0 <= c.traffic <= min(lanes, 4):
            raise ValueError(
                f"scenario.traffic must be an integer in [0, {min(lanes, 4)}] (lane vessels), "
                f"got {c.traffic}"
            )
        if c.traffic and c.traffic == lanes and c.crossing == 0:
            raise ValueError("scenario.traffic leaves no vessel for the policy to steer")
        if not 0.5 <= c.traffic_speed <= 3.0:
            raise ValueError(
                f"scenario.traffic_speed must be in [0.5, 3] m/s, got {c.traffic_speed}"
            )
        if not c.close_quarters >= 0:
            raise ValueError(f"scenario.close_quarters must be >= 0, got {c.close_quarters}")
        if c.channel_width / 2 + c.boat_radius >= 27.5:
            raise ValueError(
                f"scenario.channel_width={c.channel_width} m puts the boats off the 55 m map"
            )
        self.config = c
        self.lane_outer = lane_outer  # m from the centre line to a lane's outer edge
        # the traffic's slots: the last northbound and southbound vessels, alternately
        north = list(range(c.northbound))[::-1]
        south = list(range(c.northbound, c.northbound + c.southbound))[::-1]
        alternate = [k for pair in zip_longest(north, south) for k in pair if k is not None]
        self.traffic_slots = sorted(alternate[: c.traffic])
        self._traffic_index = DeviceConstant(torch.tensor(self.traffic_slots, dtype=torch.int64))

    @property
    def rules(self) -> LayoutRules:
        """The paper's rules, plus the options' close-quarters term and channel bounds."""
        c = self.config
        terms, ends = {}, {}
        if c.close_quarters > 0:
            terms["close_quarters"] = partial(close_quarters_penalty, weight=c.close_quarters)
        if c.stay_in_channel:
            ends["aground"] = partial(out_of_channel, half_width=c.channel_width / 2)
        return LayoutRules(reward_terms=terms, end_conditions=ends)

    @property
    def slots(self) -> Slots:
        c = self.config
        return Slots(c.northbound + c.southbound + c.crossing, 2 * c.boats_per_bank, 0)

    def generate(self, base: Scenario, step: Tensor, generator: torch.Generator) -> Scenario:
        c, n = self.config, base.num_envs
        dtype, device = base.start.dtype, base.start.device
        vessels, boats = self.slots.robots, self.slots.obstacles
        length = base.width.unsqueeze(-1)  # [n, 1] m, the channel's length (x)
        centre = base.height.unsqueeze(-1) / 2  # [n, 1] m, the centre line's y
        inner, outer = LANE_INNER, self.lane_outer

        u = torch.rand((n, vessels, 5), generator=generator, dtype=dtype, device=device)
        i_n = torch.arange(c.northbound, dtype=dtype, device=device)
        i_s = torch.arange(c.southbound, dtype=dtype, device=device)
        i_c = torch.arange(c.crossing, dtype=dtype, device=device)
        un, us, uc = u.split((c.northbound, c.southbound, c.crossing), dim=1)
        near = END_MARGIN + VESSEL_SPACING * i_n  # [N] m from the south end
        lane = outer - inner  # m, a lane's width
        north_start = (near + 0.5 * un[..., 0], centre + inner + lane * un[..., 1])
        north_goal = (length - near - 0.5 * un[..., 2], centre + inner + lane * un[..., 3])
        near = END_MARGIN + VESSEL_SPACING * i_s
        south_start = (length - near - 0.5 * us[..., 0], centre - inner - lane * us[..., 1])
        south_goal = (near + 0.5 * us[..., 2], centre - inner - lane * us[..., 3])
        mid = length / 2 + VESSEL_SPACING * (i_c - (c.crossing - 1) / 2)  # [n, C'] m
        cross_x = mid + 0.5 * (uc[..., 0] - 0.5)
        cross_start = (cross_x, (centre - outer).expand_as(cross_x))
        cross_goal = (
            cross_x + CROSSING_GOAL_SPREAD * (2 * uc[..., 2] - 1),
            (centre + outer).expand_as(cross_x),
        )
        start = _points(north_start, south_start, cross_start)  # [n, V, 2] m
        goal = _points(north_goal, south_goal, cross_goal)
        to_goal = goal - start
        bearing = torch.atan2(to_goal[..., 1], to_goal[..., 0])
        theta = torch.remainder(bearing + HEADING_SPREAD * (2 * u[..., 4] - 1), 2 * math.pi)

        out = {name: value.clone() for name, value in base.tensors().items()}
        R = base.slots.robots
        out["robot_present"] = torch.arange(R, device=device).expand(n, R) < vessels
        pad = (0, 0, 0, R - vessels)
        out["start"] = torch.nn.functional.pad(start, pad)
        out["goal"] = torch.nn.functional.pad(goal, pad)
        out["init_theta"] = torch.nn.functional.pad(theta, (0, R - vessels))
        for name in ("init_velocity_r", "init_thrust", "init_thruster_angle"):
            out[name].zero_()
        if self.traffic_slots:  # lane vessels that follow their lane, under way from the start
            k = self._traffic_index.on(device)  # [T]
            heading = bearing[:, k]  # [n, T] rad, straight at the goal
            speed = torch.full_like(heading, c.traffic_speed)
            out["robot_role"][:, k] = int(VesselRole.ROUTE)
            out["route"][:, k, 0] = goal[:, k]
            out["route_length"][:, k] = 1
            theta, velocity, thrust = under_way(heading, speed)
            out["init_theta"][:, k] = theta
            out["init_velocity_r"][:, k] = velocity
            out["init_thrust"][:, k] = thrust

        O = base.slots.obstacles
        ub = torch.rand((n, boats), generator=generator, dtype=dtype, device=device)
        stretch = (length - 2 * BOAT_SPAN_MARGIN) / max(c.boats_per_bank, 1)  # [n, 1] m
        j = torch.arange(c.boats_per_bank, dtype=dtype, device=device).repeat(2)  # [2B]
        boat_x = BOAT_SPAN_MARGIN + (j + 0.25 + 0.5 * ub) * stretch  # [n, 2B]
        row = torch.arange(2 * c.boats_per_bank, device=device)  # [2B] the +y bank's first
        side = torch.where(row < c.boats_per_bank, 1.0, -1.0).to(dtype)  # [2B]
        boat_y = centre + side * (c.channel_width / 2)
        out["obstacle_pos"] = torch.nn.functional.pad(
            torch.stack((boat_x, boat_y.expand_as(boat_x)), -1), (0, 0, 0, O - boats)
        )
        out["obstacle_radius"] = torch.nn.functional.pad(
            torch.full((n, boats), c.boat_radius, dtype=dtype, device=device), (0, O - boats)
        )
        out["obstacle_present"] = torch.arange(O, device=device).expand(n, O) < boats
        out["core_present"].zero_()
        return Scenario(**out)


def close_quarters_penalty(scenario: Scenario, events: StepEvents, weight: float) -> Tensor:
    """``[E, R]``: ``-weight`` per metre that each other vessel's hull is within
    :data:`CLOSE_QUARTERS` of this one's (true positions after the step; vessels that moved in
    it, traffic included), summed over the other vessels."""
    pos, r = events.pos, scenario.radius  # [E, R, 2] m, [E, R] m
    gap = torch.cdist(pos, pos) - r.unsqueeze(-1) - r.unsqueeze(-2)  # [E, R, R] m of water
    other = events.acted.unsqueeze(-2) & ~torch.eye(r.shape[-1], dtype=torch.bool,
                                                     device=r.device)  # fmt: skip
    intrusion = torch.where(other, (CLOSE_QUARTERS - gap).clamp(min=0.0), 0.0)
    return -weight * intrusion.sum(dim=-1)


def out_of_channel(scenario: Scenario, events: StepEvents, half_width: float) -> Tensor:
    """``[E, R]`` bool: the hull reaches past the line of moored boats on either bank
    (``half_width`` m from the centre line, the map's middle)."""
    offset = (events.pos[..., 1] - (scenario.height / 2).unsqueeze(-1)).abs()
    return offset + scenario.radius > half_width


def _points(*groups: tuple[Tensor, Tensor]) -> Tensor:
    """``[n, V, 2]`` points from groups of ``(x [n, k], y [n, k])``, concatenated in order."""
    xs, ys = zip(*groups, strict=True)
    return torch.stack((torch.cat(xs, dim=1), torch.cat(ys, dim=1)), dim=-1)
