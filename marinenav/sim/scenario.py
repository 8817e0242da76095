"""``Scenario``: the padded initial conditions and constants of a batch of environments.

A scenario is everything the original's ``episode_data()`` / eval-config JSON holds
except the histories: per-environment constants (map, reward constants), obstacles, vortex
cores, and per-robot constants and initial state. Every field has the environment batch as its
leading dimension ``n``; robots, obstacles and cores are padded to fixed slot counts ``R``, ``O``
and ``C`` with a ``*_present`` mask, so shapes never change between curriculum stages.

Frames: positions are world frame (x "North", y "East"), metres. Angles in radians.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch

from marinenav.sim.constants import (
    ENV_DEFAULTS,
    HYDRO_KEYS,
    MAX_WAYPOINTS,
    PERCEPTION_DEFAULTS,
    ROBOT_DEFAULTS,
)

# Names of Scenario fields that are per-environment scalars taken verbatim from ENV_DEFAULTS,
# mapped to their JSON key.
ENV_SCALAR_FIELDS: dict[str, str] = {
    "width": "width",
    "height": "height",
    "core_radius": "r",
    "v_rel_max": "v_rel_max",
    "p": "p",
    "clear_r": "clear_r",
    "timestep_penalty": "timestep_penalty",
    "colregs_penalty": "COLREGs_penalty",
    "collision_penalty": "collision_penalty",
    "goal_reward": "goal_reward",
    "angular_speed_max": "angular_speed_max",
    "angular_speed_penalty": "angular_speed_penalty",
}
# Per-robot scalar fields mapped to their JSON key (in ``robots``).
ROBOT_SCALAR_FIELDS: dict[str, str] = {
    "dt": "dt",
    "length": "length",
    "width_hull": "width",
    "detect_r": "detect_r",
    "radius": "r",
    "goal_dis": "goal_dis",
    "power_coefficient": "power_coefficient",
    "min_thrust": "min_thrust",
    "max_thrust": "max_thrust",
}
# Per-robot perception fields mapped to their JSON key (in ``robots.perception``).
PERCEPTION_FIELDS: dict[str, str] = {
    "perception_range": "range",
    "perception_angle": "angle",
    "max_obj_num": "max_obj_num",
    "pos_std": "pos_std",
    "vel_std": "vel_std",
    "r_kappa": "r_kappa",
    "r_mean_ratio": "r_mean_ratio",
}


class Slots(NamedTuple):
    """Padded slot counts of a scenario batch: robots ``R``, static obstacles ``O``, vortex
    cores ``C``. Equal to the plain tuple ``(R, O, C)``."""

    robots: int
    obstacles: int
    cores: int

    def covers(self, needed: Slots | tuple[int, int, int]) -> bool:
        """Whether every count here is at least the one ``needed``."""
        return all(have >= need for have, need in zip(self, needed, strict=True))


@dataclass
class Scenario:
    """Initial conditions and constants of ``n`` environments (shapes in field comments).

    Shapes use ``n`` environments, ``R`` robot slots, ``O`` obstacle slots, ``C`` core slots.
    Floating fields share one dtype (float32 or float64); masks are bool; counts are int64.
    """

    # --- environment constants [n] ---
    width: torch.Tensor  # [n] map x-extent (m)
    height: torch.Tensor  # [n] map y-extent (m)
    core_radius: torch.Tensor  # [n] vortex core radius (m)
    v_rel_max: torch.Tensor  # [n] m/s
    p: torch.Tensor  # [n]
    v_range: torch.Tensor  # [n, 2] m/s
    obs_r_range: torch.Tensor  # [n, 2] m
    clear_r: torch.Tensor  # [n] m
    timestep_penalty: torch.Tensor  # [n]
    colregs_penalty: torch.Tensor  # [n] per radian of turn angle
    collision_penalty: torch.Tensor  # [n]
    goal_reward: torch.Tensor  # [n]
    angular_speed_max: torch.Tensor  # [n] unused by the dynamics, kept for JSON
    angular_speed_penalty: torch.Tensor  # [n] unused by the dynamics, kept for JSON
    seed: torch.Tensor  # [n] int64, informational (the original's env seed)
    is_eval_env: torch.Tensor  # [n] bool, informational
    layout_part: torch.Tensor  # [n] int64, the part of a mixed layout that made the episode
    # --- static obstacles ---
    obstacle_pos: torch.Tensor  # [n, O, 2] world frame (m)
    obstacle_radius: torch.Tensor  # [n, O] m
    obstacle_present: torch.Tensor  # [n, O] bool
    # --- vortex cores ---
    core_pos: torch.Tensor  # [n, C, 2] world frame (m)
    core_clockwise: torch.Tensor  # [n, C] bool
    core_gamma: torch.Tensor  # [n, C] circulation (m^2/s)
    core_present: torch.Tensor  # [n, C] bool
    # --- robots: presence and initial state ---
    robot_present: torch.Tensor  # [n, R] bool
    start: torch.Tensor  # [n, R, 2] world frame (m)
    goal: torch.Tensor  # [n, R, 2] world frame (m)
    init_theta: torch.Tensor  # [n, R] heading in [0, 2pi)
    init_velocity_r: torch.Tensor  # [n, R, 3] world-frame velocity relative to water, yaw rate
    init_thruster_angle: torch.Tensor  # [n, R, 2] (left, right) rad
    init_thrust: torch.Tensor  # [n, R, 2] (left, right) N
    # --- robots: who steers (sim.constants.VesselRole; docs/simulator.md, "Traffic") ---
    robot_role: torch.Tensor  # [n, R] int64 VesselRole, POLICY for the paper's vessels
    route: torch.Tensor  # [n, R, W, 2] world frame (m), a ROUTE vessel's waypoints in order
    route_length: torch.Tensor  # [n, R] int64, waypoints of the route (0 elsewhere)
    # --- robots: vessel constants ---
    dt: torch.Tensor  # [n, R] sub-step (s)
    length: torch.Tensor  # [n, R] hull length (m), visual only
    width_hull: torch.Tensor  # [n, R] hull width (m), used in the yaw moment arm
    detect_r: torch.Tensor  # [n, R] m
    radius: torch.Tensor  # [n, R] collision radius (m)
    goal_dis: torch.Tensor  # [n, R] m
    power_coefficient: torch.Tensor  # [n, R]
    min_thrust: torch.Tensor  # [n, R] N
    max_thrust: torch.Tensor  # [n, R] N
    thrust_change: torch.Tensor  # [n, R, 2, 5] discrete change rates (N/s), (left, right) tables
    hydro: torch.Tensor  # [n, R, 21] mass and hydrodynamic derivatives in HYDRO_KEYS order
    # --- robots: perception constants ---
    perception_range: torch.Tensor  # [n, R] m
    perception_angle: torch.Tensor  # [n, R] rad
    max_obj_num: torch.Tensor  # [n, R] int64
    pos_std: torch.Tensor  # [n, R] m
    vel_std: torch.Tensor  # [n, R] m/s
    r_kappa: torch.Tensor  # [n, R]
    r_mean_ratio: torch.Tensor  # [n, R]

    @property
    def num_envs(self) -> int:
        return self.robot_present.shape[0]

    @property
    def init_speed(self) -> torch.Tensor:
        """``[n, R]`` m/s: every robot's speed through the water at the start (what the COLREGs
        encounters are classified with, :func:`marinenav.sim.situation.classify_pairs`)."""
        return torch.linalg.vector_norm(self.init_velocity_r[..., :2], dim=-1)

    @property
    def slots(self) -> Slots:
        """``(R, O, C)``: robot, obstacle and core slot counts."""
        return Slots(
            self.robot_present.shape[1],
            self.obstacle_present.shape[1],
            self.core_present.shape[1],
        )

    def tensors(self) -> dict[str, torch.Tensor]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        """Copy to a device and/or floating dtype (masks and counts keep theirs)."""
        out = {}
        for name, value in self.tensors().items():
            target = dtype if (dtype is not None and value.is_floating_point()) else value.dtype
            out[name] = value.to(device=device, dtype=target)
        return Scenario(**out)

    def select(self, mask: torch.Tensor, other: Scenario) -> Scenario:
        """Per environment: ``self`` where ``mask`` [n] is true, else ``other``. No host sync."""
        out = {}
        for name, value in self.tensors().items():
            env_mask = mask.view(mask.shape + (1,) * (value.dim() - 1))
            out[name] = torch.where(env_mask, value, getattr(other, name))
        return Scenario(**out)

    def assign_(self, mask: torch.Tensor, other: Scenario) -> None:
        """In place: take ``other``'s values where ``mask`` [n] is true. Buffers are reused."""
        for name, value in self.tensors().items():
            env_mask = mask.view(mask.shape + (1,) * (value.dim() - 1))
            torch.where(env_mask, getattr(other, name), value, out=value)

    def put_(self, env_ids: torch.Tensor, other: Scenario) -> None:
        """In place: write ``other`` (``len(env_ids)`` environments) into ``env_ids``."""
        for name, value in self.tensors().items():
            value.index_copy_(0, env_ids, getattr(other, name))

    def index(self, env_ids: torch.Tensor | slice | int) -> Scenario:
        """The scenarios of the given environments (advanced indexing; not for hot paths)."""
        if isinstance(env_ids, int):
            env_ids = slice(env_ids, env_ids + 1)
        return Scenario(**{name: value[env_ids] for name, value in self.tensors().items()})


def default_scenario(
    num_envs: int,
    robot_slots: int,
    obstacle_slots: int,
    core_slots: int,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Scenario:
    """An empty scenario batch (no robots, obstacles or cores present) with default constants.

    Every constant is taken from ``ENV_DEFAULTS``, ``ROBOT_DEFAULTS`` and
    ``PERCEPTION_DEFAULTS``; positions and initial states are zero.
    """
    n, R, O, C = num_envs, robot_slots, obstacle_slots, core_slots

    def env_full(value: float, *shape: int) -> torch.Tensor:
        return torch.full((n, *shape), float(value), dtype=dtype, device=device)

    def robot_full(value: float) -> torch.Tensor:
        return torch.full((n, R), float(value), dtype=dtype, device=device)

    def zeros(*shape: int, kind: torch.dtype = dtype) -> torch.Tensor:
        return torch.zeros((n, *shape), dtype=kind, device=device)

    fields: dict[str, torch.Tensor] = {
        name: env_full(ENV_DEFAULTS[key]) for name, key in ENV_SCALAR_FIELDS.items()
    }
    fields["v_range"] = (
        torch.tensor(ENV_DEFAULTS["v_range"], dtype=dtype, device=device).expand(n, 2).clone()
    )
    fields["obs_r_range"] = (
        torch.tensor(ENV_DEFAULTS["obs_r_range"], dtype=dtype, device=device).expand(n, 2).clone()
    )
    fields["seed"] = zeros(kind=torch.int64)
    fields["is_eval_env"] = zeros(kind=torch.bool)
    fields["layout_part"] = zeros(kind=torch.int64)
    fields.update(
        obstacle_pos=zeros(O, 2),
        obstacle_radius=zeros(O),
        obstacle_present=zeros(O, kind=torch.bool),
        core_pos=zeros(C, 2),
        core_clockwise=zeros(C, kind=torch.bool),
        core_gamma=zeros(C),
        core_present=zeros(C, kind=torch.bool),
        robot_present=zeros(R, kind=torch.bool),
        start=zeros(R, 2),
        goal=zeros(R, 2),
        init_theta=zeros(R),
        init_velocity_r=zeros(R, 3),
        init_thruster_angle=zeros(R, 2),
        init_thrust=zeros(R, 2),
        robot_role=zeros(R, kind=torch.int64),
        route=zeros(R, MAX_WAYPOINTS, 2),
        route_length=zeros(R, kind=torch.int64),
    )
    for name, key in ROBOT_SCALAR_FIELDS.items():
        fields[name] = robot_full(ROBOT_DEFAULTS[key])
    change = torch.tensor(
        [ROBOT_DEFAULTS["left_thrust_change"], ROBOT_DEFAULTS["right_thrust_change"]],
        dtype=dtype,
        device=device,
    )
    fields["thrust_change"] = change.expand(n, R, 2, 5).clone()
    hydro = torch.tensor([ROBOT_DEFAULTS[k] for k in HYDRO_KEYS], dtype=dtype, device=device)
    fields["hydro"] = hydro.expand(n, R, len(HYDRO_KEYS)).clone()
    for name, key in PERCEPTION_FIELDS.items():
        fields[name] = robot_full(PERCEPTION_DEFAULTS[key])
    fields["max_obj_num"] = fields["max_obj_num"].to(torch.int64)
    return Scenario(**fields)
