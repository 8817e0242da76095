"""Scenario import and export in the original's episode / eval-config JSON layout
(docs/migrating.md, "Scenarios and evaluation sets").

A dict has an ``"env"`` part (map, reward constants, ``cores``, ``obstacles``) and a
``"robots"`` part where every key is a list indexed by robot. Loading reads every key the
original's ``reset_with_eval_config`` reads; histories are not read (the original does not read
them either). Exporting writes every key the original writes, so its loader accepts the file;
the histories hold the first trajectory row only (the state at reset).

Two optional keys of ours describe traffic that does not give way (docs/simulator.md,
"Traffic"): ``robots.role``, one of ``"policy"`` (the default), ``"hold"`` or ``"route"`` per
robot, and ``robots.route``, per robot a list of ``[x, y]`` waypoints (empty except for
``"route"`` vessels, at most ``MAX_WAYPOINTS``). They are written only where some vessel is not
the policy's, so the paper's scenarios export exactly the original's keys; ``env.layout_part``
(which part of a mixed layout made the episode) likewise only where it is not 0.

Bad input raises ``ValueError`` naming the key: missing keys, lists of mismatched lengths, more
robots / obstacles / cores than the slots, sub-step counts other than the simulator's, a
singular mass matrix, and placements no episode can start from (:func:`_check_placement`): an
obstacle of zero or negative radius, a start (or a goal the policy steers for) outside the map
``[0, width] x [0, height]``, a robot that starts within ``goal_dis`` of its goal, or in
collision (the collision test, ``distance - r_a - r_b <= 0``) with an obstacle or another robot.
A value that is not a number (a string such as ``"55"``, ``null``) is refused naming its key.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from marinenav.files import write_text
from marinenav.keys import MAX_SEED
from marinenav.sim.constants import (
    HYDRO_KEYS,
    MAX_OBJECTS,
    MAX_WAYPOINTS,
    ROBOT_DEFAULTS,
    ROLE_NAMES,
    VesselRole,
)
from marinenav.sim.current import current_velocity
from marinenav.sim.dynamics import mass_matrix_determinant
from marinenav.sim.scenario import (
    ENV_SCALAR_FIELDS,
    PERCEPTION_FIELDS,
    ROBOT_SCALAR_FIELDS,
    Scenario,
    Slots,
    default_scenario,
)

_ROBOT_STATE_KEYS = (
    "start", "goal", "init_theta", "init_velocity_r", "init_left_pos", "init_right_pos",
    "init_left_thrust", "init_right_thrust", "left_thrust_change", "right_thrust_change", "N",
)  # fmt: skip
ROBOT_KEYS = tuple(ROBOT_SCALAR_FIELDS.values()) + HYDRO_KEYS + _ROBOT_STATE_KEYS
ENV_KEYS = (
    *ENV_SCALAR_FIELDS.values(), "v_range", "obs_r_range", "num_robots", "cores", "obstacles",
)  # fmt: skip


def _require(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(mapping, Mapping):
        raise ValueError(f"scenario {where} must be a dict, got {type(mapping).__name__}")
    if key not in mapping:
        raise ValueError(f"scenario is missing key {where}.{key}")
    return mapping[key]


def _list_of_length(value: Any, length: int, name: str) -> list:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ValueError(f"scenario key {name} must be a list, got {type(value).__name__}")
    if len(value) != length:
        raise ValueError(f"scenario key {name} has {len(value)} entries, expected {length}")
    return list(value)


def _numbers(values: Any, name: str, finite: bool = False) -> Any:
    """``values`` (a number, or lists of them) if every entry is an int or a float (and, with
    ``finite``, neither NaN nor infinite nor an int past float64's range); else ``ValueError``
    naming the key and the entry (a string such as ``"55"``, ``null``, ``true``), where
    ``float()`` or torch would have read ``"55"`` silently or failed naming nothing. Checked in
    Python: a tensor per list made loading thousands of scenarios take seconds."""
    pending = [values]
    while pending:
        value = pending.pop()
        if isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"scenario key {name} must hold numbers, got {value!r}")
        elif finite and not (
            math.isfinite(value) if isinstance(value, float) else abs(value) <= _FLOAT64_MAX
        ):
            raise ValueError(f"scenario key {name} holds a non-finite number")
    return values


_FLOAT64_MAX = sys.float_info.max


def _finite(values: Any, name: str) -> Any:
    return _numbers(values, name, finite=True)


def _object_positions(
    env: Mapping[str, Any], group: str, present: torch.Tensor, noun: str
) -> tuple[Mapping[str, Any], list, int]:
    """``env[group]`` (``"cores"`` or ``"obstacles"``), its finite ``positions`` and their
    count, refused when the count exceeds the slots of ``present`` ``[n, slots]``."""
    node = _require(env, group, "env")
    positions = _require(node, "positions", f"env.{group}")
    count = len(positions)
    if count > present.shape[1]:
        slot = "core" if group == "cores" else "obstacle"
        raise ValueError(
            f"{count} {noun} but the simulator has {present.shape[1]} {slot} slots"
        )
    where = f"env.{group}.positions"
    return node, _finite(_list_of_length(positions, count, where), where), count


def slots_needed(dicts: Sequence[Mapping[str, Any]]) -> Slots:
    """The fewest slots that hold every scenario dict of ``dicts`` (at least one robot)."""
    return Slots(
        max(max(int(d["env"]["num_robots"]), 1) for d in dicts),
        max(len(d["env"]["obstacles"]["positions"]) for d in dicts),
        max(len(d["env"]["cores"]["positions"]) for d in dicts),
    )


def scenarios_from_dicts(
    dicts: Sequence[Mapping[str, Any]],
    slots: Slots | tuple[int, int, int],
    num_substeps: int = int(ROBOT_DEFAULTS["N"]),
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    where: str = "scenario",
) -> Scenario:
    """Parse scenario dicts (one environment each) into a padded :class:`Scenario`.

    Args:
        dicts: the original's episode dicts (``{"env": ..., "robots": ...}``).
        slots: padded slot counts (robots, obstacles, cores) of the simulator.
        num_substeps: the simulator's ``N``; every robot's ``N`` must equal it.
        dtype, device: of the floating tensors.
        where: what an error calls a dict, before its index (``"<file>: episode"`` for a file).

    Raises:
        ValueError: ``"<where> <index>: <key> ..."``, naming the dict and key at fault.
    """
    if len(dicts) == 0:
        raise ValueError("no scenarios given")
    robot_slots, obstacle_slots, core_slots = slots
    out = default_scenario(len(dicts), robot_slots, obstacle_slots, core_slots, torch.float64)
    for i, scenario in enumerate(dicts):
        try:
            _fill_one(out, i, scenario, num_substeps)
        except ValueError as error:
            raise ValueError(f"{where} {i}: {error}") from None
    det = mass_matrix_determinant(out.hydro)
    singular = out.robot_present & (det == 0)
    if singular.any():
        env = int(singular.any(dim=1).to(torch.int64).argmax())
        raise ValueError(f"{where} {env}: the mass matrix M_RB + M_A of a robot is singular")
    return out.to(device=device, dtype=dtype)


def _fill_one(out: Scenario, i: int, scenario: Mapping[str, Any], num_substeps: int) -> None:
    env = _require(scenario, "env", "")
    robots = _require(scenario, "robots", "")
    for name, key in ENV_SCALAR_FIELDS.items():
        getattr(out, name)[i] = float(_finite(_require(env, key, "env"), f"env.{key}"))
    for key in ("v_range", "obs_r_range"):
        pair = _list_of_length(_require(env, key, "env"), 2, f"env.{key}")
        getattr(out, key)[i] = torch.tensor(_numbers(pair, f"env.{key}"))
    seed = env.get("seed", 0) or 0
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"env.seed must be an integer in [0, 2**62], got {seed!r}")
    out.seed[i] = seed
    out.is_eval_env[i] = bool(env.get("is_eval_env", False))
    part = env.get("layout_part", 0)
    if isinstance(part, bool) or not isinstance(part, int) or part < 0:
        raise ValueError(f"env.layout_part must be a non-negative integer, got {part!r}")
    out.layout_part[i] = part

    cores, core_pos, n_cores = _object_positions(env, "cores", out.core_present, "vortex cores")
    clockwise = _list_of_length(
        _require(cores, "clockwise", "env.cores"), n_cores, "env.cores.clockwise"
    )
    gamma = _list_of_length(_require(cores, "Gamma", "env.cores"), n_cores, "env.cores.Gamma")
    if n_cores:
        out.core_pos[i, :n_cores] = torch.tensor(core_pos, dtype=torch.float64).view(n_cores, 2)
        out.core_clockwise[i, :n_cores] = torch.tensor([bool(c) for c in clockwise])
        out.core_gamma[i, :n_cores] = torch.tensor(
            _finite(gamma, "env.cores.Gamma"), dtype=torch.float64
        )
        out.core_present[i, :n_cores] = True

    obstacles, obs_pos, n_obs = _object_positions(
        env, "obstacles", out.obstacle_present, "obstacles"
    )
    obs_r = _list_of_length(_require(obstacles, "r", "env.obstacles"), n_obs, "env.obstacles.r")
    if n_obs:
        out.obstacle_pos[i, :n_obs] = torch.tensor(obs_pos, dtype=torch.float64).view(n_obs, 2)
        out.obstacle_radius[i, :n_obs] = torch.tensor(
            _finite(obs_r, "env.obstacles.r"), dtype=torch.float64
        )
        out.obstacle_present[i, :n_obs] = True

    n = _require(env, "num_robots", "env")
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"env.num_robots must be an integer, got {n!r}")
    if n < 1:
        raise ValueError(f"env.num_robots must be at least 1, got {n}")
    if n > out.robot_present.shape[1]:
        raise ValueError(
            f"{n} robots but the simulator has {out.robot_present.shape[1]} robot slots"
        )

    def robot_list(key: str, where: Mapping[str, Any] = robots, prefix: str = "robots") -> list:
        return _finite(
            _list_of_length(_require(where, key, prefix), n, f"{prefix}.{key}"), f"{prefix}.{key}"
        )

    def robot_tensor(key: str, where: Mapping[str, Any] = robots, prefix: str = "robots"):
        return torch.tensor(robot_list(key, where, prefix), dtype=torch.float64)

    for name, key in ROBOT_SCALAR_FIELDS.items():
        getattr(out, name)[i, :n] = robot_tensor(key)
    substeps = robot_list("N")
    if any(int(s) != num_substeps for s in substeps):
        raise ValueError(f"robots.N must be {num_substeps} for every robot, got {substeps}")
    if (out.dt[i, :n] <= 0).any():
        raise ValueError("robots.dt must be positive")
    for k, key in enumerate(HYDRO_KEYS):
        out.hydro[i, :n, k] = robot_tensor(key)
    for side, key in enumerate(("left_thrust_change", "right_thrust_change")):
        table = robot_tensor(key)
        if table.shape != (n, 5):
            raise ValueError(f"robots.{key} must hold 5 change rates per robot")
        out.thrust_change[i, :n, side] = table
    for key in ("start", "goal"):
        value = robot_tensor(key)
        if value.shape != (n, 2):
            raise ValueError(f"robots.{key} must hold an [x, y] pair per robot")
        getattr(out, key)[i, :n] = value
    out.init_theta[i, :n] = robot_tensor("init_theta")
    velocity = robot_tensor("init_velocity_r")
    if velocity.shape != (n, 3):
        raise ValueError("robots.init_velocity_r must hold 3 numbers per robot")
    out.init_velocity_r[i, :n] = velocity
    out.init_thruster_angle[i, :n] = torch.stack(
        (robot_tensor("init_left_pos"), robot_tensor("init_right_pos")), dim=-1
    )
    out.init_thrust[i, :n] = torch.stack(
        (robot_tensor("init_left_thrust"), robot_tensor("init_right_thrust")), dim=-1
    )
    perception = _require(robots, "perception", "robots")
    for name, key in PERCEPTION_FIELDS.items():
        getattr(out, name)[i, :n] = robot_tensor(key, perception, "robots.perception").to(
            getattr(out, name).dtype
        )
    if (out.max_obj_num[i, :n] > MAX_OBJECTS).any():
        raise ValueError(f"robots.perception.max_obj_num above {MAX_OBJECTS} is not supported")
    _fill_traffic(out, i, n, robots)
    _check_placement(out, i, n, n_obs)
    out.robot_present[i, :n] = True


def _fill_traffic(out: Scenario, i: int, n: int, robots: Mapping[str, Any]) -> None:
    """The optional ``robots.role`` and ``robots.route`` of environment ``i`` (``n`` robots)."""
    names = robots.get("role")
    if names is None:
        if "route" in robots:
            raise ValueError("robots.route is given without robots.role")
        return
    names = _list_of_length(names, n, "robots.role")
    routes = _list_of_length(robots.get("route", [[] for _ in range(n)]), n, "robots.route")
    for k, (name, route) in enumerate(zip(names, routes, strict=True)):
        if name not in ROLE_NAMES:
            raise ValueError(
                f"robots.role[{k}] must be one of {', '.join(ROLE_NAMES)}, got {name!r}"
            )
        role = ROLE_NAMES[name]
        where = f"robots.route[{k}]"
        if not isinstance(route, Sequence) or isinstance(route, str):
            raise ValueError(f"{where} must be a list of [x, y] waypoints")
        if role == VesselRole.ROUTE and not route:
            raise ValueError(f"{where} is empty: a 'route' vessel needs at least one waypoint")
        if role != VesselRole.ROUTE and route:
            raise ValueError(
                f"{where} is given for a {name!r} vessel: only 'route' vessels follow one"
            )
        if len(route) > MAX_WAYPOINTS:
            raise ValueError(f"{where} has {len(route)} waypoints; at most {MAX_WAYPOINTS}")
        points = torch.tensor(_finite(route, where), dtype=torch.float64) if route else None
        if points is not None and points.shape != (len(route), 2):
            raise ValueError(f"{where} must be a list of [x, y] waypoints")
        out.robot_role[i, k] = int(role)
        if points is not None:
            out.route[i, k, : len(route)] = points
            out.route_length[i, k] = len(route)
    if all(ROLE_NAMES[name] != VesselRole.POLICY for name in names):
        raise ValueError("robots.role names no 'policy' vessel: an episode needs one to steer")


def _first(mask: torch.Tensor) -> list[int] | None:
    """The indices of the first true entry of ``mask`` (row-major), or ``None``."""
    hits = mask.nonzero()
    return hits[0].tolist() if len(hits) else None  # host: load time


def _check_placement(out: Scenario, i: int, n: int, n_obs: int) -> None:
    """Refuse a start no episode can begin from, in environment ``i`` of ``out`` (float64, CPU,
    filled): a non-positive obstacle radius, a start within ``goal_dis`` of its goal (reached
    before the first step), a start in collision with an obstacle or another robot
    (``distance - r_a - r_b <= 0``, the collision test), a start or a steered robot's goal
    outside the map."""
    radius = out.obstacle_radius[i, :n_obs]  # [O'] m
    start, goal = out.start[i, :n], out.goal[i, :n]  # [n, 2] m
    robot_r, goal_dis = out.radius[i, :n], out.goal_dis[i, :n]  # [n] m
    if (hit := _first(~(radius > 0))) is not None:
        (j,) = hit
        raise ValueError(f"env.obstacles.r[{j}] must be positive, got {float(radius[j])}")
    to_goal = torch.linalg.vector_norm(goal - start, dim=-1)  # [n]
    steered = out.robot_role[i, :n] == VesselRole.POLICY  # traffic has no goal to reach
    if (hit := _first((to_goal <= goal_dis) & steered)) is not None:
        (k,) = hit
        raise ValueError(
            f"robots.goal[{k}] is {float(to_goal[k]):.3g} m from robots.start[{k}], within "
            f"robots.goal_dis[{k}] = {float(goal_dis[k]):g} m: the robot starts at its goal"
        )
    size = torch.stack((out.width[i], out.height[i]))  # [2] m, the map: [0, width] x [0, height]
    for key, points, kept in (("start", start, None), ("goal", goal, steered)):
        outside = ((points < 0) | (points > size)).any(-1)  # [n]
        if (hit := _first(outside if kept is None else outside & kept)) is not None:
            (k,) = hit
            x, y = points[k].tolist()  # host: load time
            raise ValueError(
                f"robots.{key}[{k}] = [{x:g}, {y:g}] lies outside the map, [0, {float(size[0]):g}]"
                f" x [0, {float(size[1]):g}] m (env.width, env.height)"
            )
    obstacle_pos = out.obstacle_pos[i, :n_obs]
    to_obstacle = torch.linalg.vector_norm(start[:, None] - obstacle_pos[None], dim=-1)  # [n, O']
    reach = robot_r[:, None] + radius[None]
    if (hit := _first(to_obstacle <= reach)) is not None:
        k, j = hit
        raise ValueError(
            f"robots.start[{k}] is {float(to_obstacle[k, j]):.3g} m from "
            f"env.obstacles.positions[{j}], within robots.r[{k}] + env.obstacles.r[{j}] = "
            f"{float(reach[k, j]):.3g} m: the robot starts in collision"
        )
    apart = torch.linalg.vector_norm(start[:, None] - start[None], dim=-1)  # [n, n]
    reach = robot_r[:, None] + robot_r[None]
    earlier = torch.ones(n, n, dtype=torch.bool).tril(-1)  # pairs (k, j) with j < k
    if (hit := _first((apart <= reach) & earlier)) is not None:
        k, j = hit
        raise ValueError(
            f"robots.start[{k}] is {float(apart[k, j]):.3g} m from robots.start[{j}], within "
            f"robots.r[{j}] + robots.r[{k}] = {float(reach[k, j]):.3g} m: the robots start in "
            "collision"
        )


def scenarios_to_dicts(
    scenario: Scenario, num_substeps: int = int(ROBOT_DEFAULTS["N"])
) -> list[dict]:
    """Export every environment of ``scenario`` as the original's episode dict.

    Reads the tensors back to the host once (not for hot paths). Only present robots,
    obstacles and cores are written, in slot order.
    """
    host = scenario.to(device="cpu", dtype=torch.float64)
    values = {name: tensor.tolist() for name, tensor in host.tensors().items()}  # host: export
    current = current_velocity(
        host.start,
        host.core_pos,
        host.core_clockwise,
        host.core_gamma,
        host.core_present,
        host.core_radius,
    )
    values["start_current"] = current.tolist()  # host: export
    return [_dict_of_env(values, e, num_substeps) for e in range(scenario.num_envs)]


def _dict_of_env(v: dict[str, list], e: int, num_substeps: int) -> dict:
    robots_idx = [k for k, present in enumerate(v["robot_present"][e]) if present]
    obs_idx = [k for k, present in enumerate(v["obstacle_present"][e]) if present]
    core_idx = [k for k, present in enumerate(v["core_present"][e]) if present]
    env: dict[str, Any] = {"seed": int(v["seed"][e]), "is_eval_env": bool(v["is_eval_env"][e])}
    if v["layout_part"][e]:
        env["layout_part"] = int(v["layout_part"][e])
    for name, key in ENV_SCALAR_FIELDS.items():
        env[key] = v[name][e]
    env["v_range"] = v["v_range"][e]
    env["obs_r_range"] = v["obs_r_range"][e]
    env["num_robots"] = len(robots_idx)
    env["cores"] = {
        "positions": [v["core_pos"][e][k] for k in core_idx],
        "clockwise": [int(v["core_clockwise"][e][k]) for k in core_idx],
        "Gamma": [v["core_gamma"][e][k] for k in core_idx],
    }
    env["obstacles"] = {
        "positions": [v["obstacle_pos"][e][k] for k in obs_idx],
        "r": [v["obstacle_radius"][e][k] for k in obs_idx],
    }

    def per_robot(name: str) -> list:
        return [v[name][e][k] for k in robots_idx]

    robots: dict[str, Any] = {}
    for name, key in ROBOT_SCALAR_FIELDS.items():
        robots[key] = per_robot(name)
    robots["N"] = [num_substeps] * len(robots_idx)
    robots["left_thrust_change"] = [row[0] for row in per_robot("thrust_change")]
    robots["right_thrust_change"] = [row[1] for row in per_robot("thrust_change")]
    for k, key in enumerate(HYDRO_KEYS):
        robots[key] = [row[k] for row in per_robot("hydro")]
    robots["start"] = per_robot("start")
    robots["goal"] = per_robot("goal")
    robots["init_theta"] = per_robot("init_theta")
    robots["init_velocity_r"] = per_robot("init_velocity_r")
    robots["init_left_pos"] = [a[0] for a in per_robot("init_thruster_angle")]
    robots["init_right_pos"] = [a[1] for a in per_robot("init_thruster_angle")]
    robots["init_left_thrust"] = [t[0] for t in per_robot("init_thrust")]
    robots["init_right_thrust"] = [t[1] for t in per_robot("init_thrust")]
    roles = [VesselRole(int(r)) for r in per_robot("robot_role")]
    if any(role != VesselRole.POLICY for role in roles):
        robots["role"] = [role.name.lower() for role in roles]
        robots["route"] = [
            route[: int(length)] for route, length in zip(
                per_robot("route"), per_robot("route_length"), strict=True
            )
        ]
    robots["perception"] = {key: per_robot(name) for name, key in PERCEPTION_FIELDS.items()}
    robots["perception"]["max_obj_num"] = [int(x) for x in robots["perception"]["max_obj_num"]]
    robots["observation_history"] = [[] for _ in robots_idx]
    robots["action_history"] = [[] for _ in robots_idx]
    # First trajectory row: x, y, theta, velocity_r, velocity, thruster angles, thrusts.
    robots["trajectory"] = [
        [[*start, theta, *vel, vel[0] + cur[0], vel[1] + cur[1], vel[2], *angle, *thrust]]
        for start, theta, vel, cur, angle, thrust in zip(
            robots["start"],
            robots["init_theta"],
            robots["init_velocity_r"],
            per_robot("start_current"),
            per_robot("init_thruster_angle"),
            per_robot("init_thrust"),
            strict=True,
        )
    ]
    return {"env": env, "robots": robots}


def load_scenario_file(path: str | Path) -> list[dict]:
    """Read a JSON file holding one episode dict or a list of them (an eval-config file).

    Every episode is parsed as :func:`scenarios_from_dicts` parses it (slots: the file's
    largest counts), so a bad file is refused here, whole, before anything runs.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file, the
    episode and the key (``<file>: episode <i>: <key> ...``) for a file that is not JSON, an
    episode without the keys every scenario needs (``env.num_robots``,
    ``env.obstacles.positions``, ``env.cores.positions``, ``robots``) or any error of
    :func:`scenarios_from_dicts` (bad values, impossible placements)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no scenario file at {path}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a JSON scenario file ({error})") from None
    if isinstance(data, Mapping) and "scenario" in data:  # a marinenav reference recording
        data = data["scenario"]
    episodes = [data] if isinstance(data, Mapping) else data
    if not isinstance(episodes, list) or not episodes:
        raise ValueError(f"{path}: expected an episode dict or a non-empty list of them")
    for i, episode in enumerate(episodes):
        where = f"{path}: episode {i}"
        if not isinstance(episode, Mapping):
            raise ValueError(f"{where} is a {type(episode).__name__}, not an episode dict")
        for part in ("env", "robots"):
            if not isinstance(episode.get(part), Mapping):
                raise ValueError(f"{where}: missing key {part} (a dict)")
        env = episode["env"]
        if "num_robots" not in env:
            raise ValueError(f"{where}: missing key env.num_robots")
        if not isinstance(env["num_robots"], int):
            count = env["num_robots"]
            raise ValueError(f"{where}: env.num_robots must be an integer, got {count!r}")
        for part in ("obstacles", "cores"):
            if not isinstance(env.get(part), Mapping) or "positions" not in env[part]:
                raise ValueError(f"{where}: missing key env.{part}.positions")
            if not isinstance(env[part]["positions"], list):
                raise ValueError(f"{where}: env.{part}.positions must be a list")
    scenarios_from_dicts(
        episodes,
        slots_needed(episodes),
        dtype=torch.float64,
        where=f"{path}: episode",
    )
    return list(episodes)


def save_scenario_file(dicts: list[dict], path: str | Path) -> None:
    """Write episode dicts as a JSON list, the original's ``eval_configs.json`` layout."""
    write_text(path, json.dumps(dicts, indent=1, allow_nan=False))


__all__ = [
    "scenarios_from_dicts",
    "slots_needed",
    "scenarios_to_dicts",
    "load_scenario_file",
    "save_scenario_file",
    "ENV_KEYS",
    "ROBOT_KEYS",
]
