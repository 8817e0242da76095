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
singular mass matrix, and placements no episode can start from (:func:`_placement_faults`): an
obstacle of zero or negative radius, a start (or a goal the policy steers for) outside the map
``[0, width] x [0, height]``, a robot that starts within ``goal_dis`` of its goal, or in
collision (the collision test, ``distance - r_a - r_b <= 0``) with an obstacle or another robot.
A value that is not a number (a string such as ``"55"``, ``null``), an entry of the wrong shape
(a list where one number belongs, a position that is not an ``[x, y]`` pair, a change-rate table
not of 5) and a perceived-object count outside ``[0, MAX_OBJECTS]`` are refused naming the key.

Loading is not a hot path, but a file of thousands of episodes waits for it: each dict is checked
in Python and its values gathered per field, then each field is made one tensor for the whole
batch and the placements of all dicts are checked at once (docs/benchmarks.md, "Loading scenario
dicts"). An error still names the first dict at fault and, in it, the first key read.
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


_FLOAT64_MAX = sys.float_info.max


def _number(value: Any, name: str, finite: bool = True) -> int | float:
    """``value`` if it is an int or a float (and, with ``finite``, neither NaN nor infinite nor an
    int past float64's range); else ``ValueError`` naming the key and the entry (a string such
    as ``"55"``, ``null``, ``true``), where ``float()`` or torch would have read ``"55"``
    silently or failed naming nothing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"scenario key {name} must hold numbers, got {value!r}")
    if finite and not (
        math.isfinite(value) if isinstance(value, float) else abs(value) <= _FLOAT64_MAX
    ):
        raise ValueError(f"scenario key {name} holds a non-finite number")
    return value


def _rows(values: Any, count: int, name: str, width: int, refusal: str) -> list:
    """``values``: a list of ``count`` entries, each one finite number (``width`` 0) or a list of
    ``width`` of them; else ``ValueError``: ``"<name> <refusal>"`` for an entry of another shape
    (``refusal``, e.g. ``"must hold an [x, y] pair per robot"``), or naming the entry that is not
    a number."""
    entries = _list_of_length(values, count, name)
    if width == 0:
        for entry in entries:
            if isinstance(entry, (list, tuple)):
                raise ValueError(f"{name} {refusal}, got {entry!r}")
            _number(entry, name)
        return entries
    for entry in entries:
        if isinstance(entry, (list, tuple)):
            for number in entry:
                _number(number, name)
        else:
            _number(entry, name)  # a string or null is named as such
        if not isinstance(entry, (list, tuple)) or len(entry) != width:
            raise ValueError(f"{name} {refusal}")
    return entries


def _positions(env: Mapping[str, Any], group: str, slots: int, noun: str) -> tuple[Any, list]:
    """``env[group]`` (``"cores"`` or ``"obstacles"``) and its ``positions``, refused when
    there are more than ``slots`` or a position is not an ``[x, y]`` pair of finite numbers."""
    node = _require(env, group, "env")
    positions = _listed_positions(node, group)
    count = len(positions)
    slot = "core" if group == "cores" else "obstacle"
    if count > slots:
        raise ValueError(f"{count} {noun} but the simulator has {slots} {slot} slots")
    where = f"env.{group}.positions"
    return node, _rows(positions, count, where, 2, f"must hold an [x, y] pair per {slot}")


def _listed_positions(node: Mapping[str, Any], group: str) -> Sequence:
    """``node["positions"]`` of ``env[group]``, refused unless there and a list."""
    positions = _require(node, "positions", f"env.{group}")
    if not isinstance(positions, Sequence) or isinstance(positions, str):
        raise ValueError(
            f"scenario key env.{group}.positions must be a list, got {type(positions).__name__}"
        )
    return positions


def slots_needed(dicts: Sequence[Mapping[str, Any]], where: str = "scenario") -> Slots:
    """The fewest slots that hold every scenario dict of ``dicts`` (at least one robot).

    The counts are checked as they are read, naming the first dict at fault (``"<where>
    <index>: ..."``): one that is not a dict, has no ``env`` or ``robots`` dict, no integer
    ``env.num_robots``, or no list ``env.obstacles.positions`` / ``env.cores.positions``. The
    rest of each dict is :func:`scenarios_from_dicts`' to check."""
    if len(dicts) == 0:
        raise ValueError("no scenarios given")
    counts = []
    for i, scenario in enumerate(dicts):
        try:
            counts.append(_counts(scenario))
        except ValueError as error:
            raise ValueError(f"{where} {i}: {error}") from None
    return Slots(*(max(column) for column in zip(*counts, strict=True)))


def _robot_count(n: Any) -> int:
    """``env.num_robots``, refused unless an integer (not a bool, not ``2.0`` or ``"2"``)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"env.num_robots must be an integer, got {n!r}")
    return n


def _counts(scenario: Any) -> tuple[int, int, int]:
    """The robots (at least one), obstacles and cores of one scenario dict, checked."""
    if not isinstance(scenario, Mapping):
        raise ValueError(f"not an episode dict, got {type(scenario).__name__}")
    for part in ("env", "robots"):
        if not isinstance(scenario.get(part), Mapping):
            raise ValueError(f"missing key {part} (a dict)")
    env = scenario["env"]
    if "num_robots" not in env:
        raise ValueError("missing key env.num_robots")
    n = _robot_count(env["num_robots"])
    listed = []
    for group in ("obstacles", "cores"):
        node = env.get(group)
        if not isinstance(node, Mapping) or "positions" not in node:
            raise ValueError(f"missing key env.{group}.positions")
        listed.append(len(_listed_positions(node, group)))
    return max(n, 1), *listed


def scenarios_from_dicts(
    dicts: Sequence[Mapping[str, Any]],
    slots: Slots | tuple[int, int, int],
    num_substeps: int = int(ROBOT_DEFAULTS["N"]),
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    where: str = "scenario",
) -> Scenario:
    """Parse scenario dicts (one environment each) into a padded :class:`Scenario`.

    Every dict is checked in Python and its values gathered per field (:class:`_Gathered`);
    then one tensor is made per field for the whole batch, and the placements of every
    environment are checked at once (:func:`_placement_faults`). An error names the first dict at
    fault and its first bad key, in the order the keys are read.

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
    gathered = _Gathered(Slots(*slots), num_substeps)
    malformed: tuple[int, ValueError] | None = None
    for i, scenario in enumerate(dicts):
        try:
            gathered.add(scenario)
        except ValueError as error:
            malformed = (i, error)  # the dicts before it are still checked for placement
            break
    out = default_scenario(len(dicts), *slots, dtype=torch.float64)
    gathered.fill(out)
    _refuse_misplaced(out, gathered.num_envs, where)
    if malformed is not None:
        raise ValueError(f"{where} {malformed[0]}: {malformed[1]}") from None
    det = mass_matrix_determinant(out.hydro)
    singular = out.robot_present & (det == 0)
    if singular.any():
        env = int(singular.any(dim=1).to(torch.int64).argmax())
        raise ValueError(f"{where} {env}: the mass matrix M_RB + M_A of a robot is singular")
    return out.to(device=device, dtype=dtype)


# per robot: (Scenario field, its JSON key or keys, numbers per key and robot (0: one), what an
# entry of another shape is told)
_ONE = "must hold one number per robot"
_ROBOT_VECTORS = (
    ("hydro", HYDRO_KEYS, 0, _ONE),
    ("thrust_change", ("left_thrust_change", "right_thrust_change"), 5,
     "must hold 5 change rates per robot"),
    ("start", ("start",), 2, "must hold an [x, y] pair per robot"),
    ("goal", ("goal",), 2, "must hold an [x, y] pair per robot"),
    ("init_theta", ("init_theta",), 0, _ONE),
    ("init_velocity_r", ("init_velocity_r",), 3, "must hold 3 numbers per robot"),
    ("init_thruster_angle", ("init_left_pos", "init_right_pos"), 0, _ONE),
    ("init_thrust", ("init_left_thrust", "init_right_thrust"), 0, _ONE),
)  # fmt: skip


class _Gathered:
    """The values of scenario dicts, checked and gathered per :class:`Scenario` field as Python
    lists, so that each field becomes one tensor for the whole batch (:meth:`fill`) instead of
    one small tensor per key and dict. Robots are gathered in order (environment, slot):
    ``robots[e]`` of them for environment ``e``; obstacles, cores and route waypoints alike."""

    def __init__(self, slots: Slots, num_substeps: int) -> None:
        self.slots = slots
        self.num_substeps = num_substeps
        self.robots: list[int] = []  # [environments] robots per environment
        self.obstacles: list[int] = []
        self.cores: list[int] = []
        self.env: dict[str, list] = {}  # Scenario field -> one value per environment
        self.robot: dict[str, list] = {}  # Scenario field -> one value per robot
        self.obstacle: dict[str, list] = {"obstacle_pos": [], "obstacle_radius": []}
        self.core: dict[str, list] = {"core_pos": [], "core_clockwise": [], "core_gamma": []}
        self.waypoints: list[tuple[int, int, int]] = []  # (environment, robot, waypoint)
        self.points: list = []  # [x, y] of each of self.waypoints

    @property
    def num_envs(self) -> int:
        """How many dicts were gathered whole."""
        return len(self.robots)

    def add(self, scenario: Mapping[str, Any]) -> None:
        """Check one dict and gather its values; nothing of it is kept if it is refused."""
        env = _require(scenario, "env", "")
        robots = _require(scenario, "robots", "")
        values: dict[str, Any] = {}
        for name, key in ENV_SCALAR_FIELDS.items():
            value = _require(env, key, "env")
            if isinstance(value, (list, tuple)):
                raise ValueError(f"env.{key} must be one number, got {value!r}")
            values[name] = _number(value, f"env.{key}")
        for key in ("v_range", "obs_r_range"):
            pair = _list_of_length(_require(env, key, "env"), 2, f"env.{key}")
            values[key] = [_number(x, f"env.{key}", finite=False) for x in pair]
        seed = env.get("seed", 0) or 0
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"env.seed must be an integer in [0, 2**62], got {seed!r}")
        values["seed"] = seed
        values["is_eval_env"] = bool(env.get("is_eval_env", False))
        part = env.get("layout_part", 0)
        if isinstance(part, bool) or not isinstance(part, int) or part < 0:
            raise ValueError(f"env.layout_part must be a non-negative integer, got {part!r}")
        values["layout_part"] = part

        cores, core_pos = _positions(env, "cores", self.slots.cores, "vortex cores")
        n_cores = len(core_pos)
        clockwise = _list_of_length(
            _require(cores, "clockwise", "env.cores"), n_cores, "env.cores.clockwise"
        )
        gamma = _rows(_require(cores, "Gamma", "env.cores"), n_cores, "env.cores.Gamma", 0,
                      "must hold one number per core")  # fmt: skip
        obstacles, obstacle_pos = _positions(env, "obstacles", self.slots.obstacles, "obstacles")
        n_obs = len(obstacle_pos)
        radius = _rows(_require(obstacles, "r", "env.obstacles"), n_obs, "env.obstacles.r", 0,
                       "must hold one number per obstacle")  # fmt: skip

        n = _robot_count(_require(env, "num_robots", "env"))
        if n < 1:
            raise ValueError(f"env.num_robots must be at least 1, got {n}")
        if n > self.slots.robots:
            raise ValueError(f"{n} robots but the simulator has {self.slots.robots} robot slots")

        def per_robot(
            key: str,
            width: int = 0,
            refusal: str = _ONE,
            node: Any = robots,
            prefix: str = "robots",
        ) -> list:
            return _rows(_require(node, key, prefix), n, f"{prefix}.{key}", width, refusal)

        robot: dict[str, list] = {}
        for name, key in ROBOT_SCALAR_FIELDS.items():
            robot[name] = per_robot(key)
        substeps = per_robot("N")
        if any(int(s) != self.num_substeps for s in substeps):
            raise ValueError(
                f"robots.N must be {self.num_substeps} for every robot, got {substeps}"
            )
        if any(dt <= 0 for dt in robot["dt"]):
            raise ValueError("robots.dt must be positive")
        columns = {key: per_robot(key, width, refusal) for _, keys, width, refusal in _ROBOT_VECTORS
                   for key in keys}  # fmt: skip
        for name, keys, _, _ in _ROBOT_VECTORS:
            robot[name] = (
                columns[keys[0]] if len(keys) == 1 else [list(row) for row in zip(
                    *(columns[key] for key in keys), strict=True)]
            )  # fmt: skip
        perception = _require(robots, "perception", "robots")
        for name, key in PERCEPTION_FIELDS.items():
            robot[name] = per_robot(key, node=perception, prefix="robots.perception")
        robot["max_obj_num"] = [int(k) for k in robot["max_obj_num"]]
        if any(not 0 <= k <= MAX_OBJECTS for k in robot["max_obj_num"]):
            raise ValueError(
                f"robots.perception.max_obj_num must be in [0, {MAX_OBJECTS}], got "
                f"{robot['max_obj_num']}"
            )
        robot["robot_role"], routes = _traffic(robots, n)
        robot["route_length"] = [len(route) for route in routes]

        # the dict is whole: gather it
        e = self.num_envs
        for name, value in values.items():
            self.env.setdefault(name, []).append(value)
        for name, column in robot.items():
            self.robot.setdefault(name, []).extend(column)
        self.core["core_pos"] += core_pos
        self.core["core_clockwise"] += [bool(c) for c in clockwise]
        self.core["core_gamma"] += gamma
        self.obstacle["obstacle_pos"] += obstacle_pos
        self.obstacle["obstacle_radius"] += radius
        for k, route in enumerate(routes):
            self.waypoints += [(e, k, w) for w in range(len(route))]
            self.points += route
        self.robots.append(n)
        self.obstacles.append(n_obs)
        self.cores.append(n_cores)

    def fill(self, out: Scenario) -> None:
        """Write the gathered environments, ``0 .. num_envs - 1``, into ``out`` (float64, CPU):
        one tensor and one indexed write per field."""
        m = self.num_envs
        if m == 0:
            return
        for name, values in self.env.items():
            field = getattr(out, name)
            field[:m] = torch.tensor(values, dtype=field.dtype)
        for counts, fields, present in (
            (self.robots, self.robot, out.robot_present),
            (self.obstacles, self.obstacle, out.obstacle_present),
            (self.cores, self.core, out.core_present),
        ):
            env, slot = _slot_index(counts)
            if len(env) == 0:
                continue
            present[env, slot] = True
            for name, values in fields.items():
                field = getattr(out, name)
                field[env, slot] = torch.tensor(values, dtype=field.dtype)
        if self.waypoints:
            env, robot, waypoint = torch.tensor(self.waypoints).unbind(-1)
            out.route[env, robot, waypoint] = torch.tensor(self.points, dtype=out.route.dtype)


def _slot_index(counts: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Environment and slot of every gathered item ``[items]`` each, for ``counts[e]`` items
    in the first slots of environment ``e``."""
    sizes = torch.tensor(counts)
    env = torch.repeat_interleave(torch.arange(len(counts)), sizes)
    first = torch.cumsum(sizes, 0) - sizes  # [envs] index of each environment's first item
    return env, torch.arange(len(env)) - first[env]


def _traffic(robots: Mapping[str, Any], n: int) -> tuple[list[int], list[list]]:
    """The optional ``robots.role`` and ``robots.route`` of one dict (``n`` robots): each
    robot's ``VesselRole`` and its waypoints (empty for all but ``"route"`` vessels)."""
    names = robots.get("role")
    if names is None:
        if "route" in robots:
            raise ValueError("robots.route is given without robots.role")
        return [int(VesselRole.POLICY)] * n, [[] for _ in range(n)]
    names = _list_of_length(names, n, "robots.role")
    routes = _list_of_length(robots.get("route", [[] for _ in range(n)]), n, "robots.route")
    roles = []
    for k, (name, route) in enumerate(zip(names, routes, strict=True)):
        if not isinstance(name, str) or name not in ROLE_NAMES:
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
        _rows(route, len(route), where, 2, "must be a list of [x, y] waypoints")
        roles.append(int(role))
    if all(role != VesselRole.POLICY for role in roles):
        raise ValueError("robots.role names no 'policy' vessel: an episode needs one to steer")
    return roles, [list(route) for route in routes]


def _placement_faults(out: Scenario, num_envs: int) -> dict[str, torch.Tensor]:
    """Where environments ``0 .. num_envs - 1`` of ``out`` (float64, CPU, filled) hold a
    placement no episode can start from, all at once: one boolean mask per fault, in the order
    an error tells them (:func:`_placement_refusal`).

    - ``radius [m, O]``: an obstacle of zero or negative radius;
    - ``at_goal [m, R]``: a steered robot starting within ``goal_dis`` of its goal (reached
      before the first step; traffic has no goal to reach);
    - ``start_outside [m, R]``, ``goal_outside [m, R]``: a start, or a steered robot's goal,
      outside the map ``[0, width] x [0, height]``;
    - ``on_obstacle [m, R, O]``: a start in collision with an obstacle
      (``distance - r_a - r_b <= 0``, the collision test);
    - ``on_robot [m, R, R]``: a start in collision with an earlier robot (``[k, j]``, ``j < k``).
    """
    m = num_envs
    robot, obstacle = out.robot_present[:m], out.obstacle_present[:m]  # [m, R], [m, O]
    radius = out.obstacle_radius[:m]  # [m, O] m
    start, goal = out.start[:m], out.goal[:m]  # [m, R, 2] m
    robot_r = out.radius[:m]  # [m, R] m
    steered = robot & (out.robot_role[:m] == VesselRole.POLICY)
    to_goal = torch.linalg.vector_norm(goal - start, dim=-1)  # [m, R] m
    size = torch.stack((out.width[:m], out.height[:m]), dim=-1)[:, None]  # [m, 1, 2] m
    to_obstacle = torch.linalg.vector_norm(
        start[:, :, None] - out.obstacle_pos[:m, None], dim=-1
    )  # [m, R, O] m
    apart = torch.linalg.vector_norm(start[:, :, None] - start[:, None], dim=-1)  # [m, R, R] m
    slots = robot.shape[1]
    earlier = torch.ones(slots, slots, dtype=torch.bool).tril(-1)  # pairs (k, j), j < k
    return {
        "radius": obstacle & ~(radius > 0),
        "at_goal": steered & (to_goal <= out.goal_dis[:m]),
        "start_outside": robot & ((start < 0) | (start > size)).any(-1),
        "goal_outside": steered & ((goal < 0) | (goal > size)).any(-1),
        "on_obstacle": robot[:, :, None]
        & obstacle[:, None]
        & (to_obstacle <= robot_r[:, :, None] + radius[:, None]),
        "on_robot": robot[:, :, None]
        & robot[:, None]
        & earlier
        & (apart <= robot_r[:, :, None] + robot_r[:, None]),
    }


def _refuse_misplaced(out: Scenario, num_envs: int, where: str) -> None:
    """Raise ``ValueError("<where> <env>: ...")`` for the first of environments
    ``0 .. num_envs - 1`` of ``out`` that holds a placement no episode can start from
    (:func:`_placement_faults`), telling its first fault."""
    faults = _placement_faults(out, num_envs)
    bad = torch.stack([mask.flatten(1).any(-1) for mask in faults.values()]).any(0)  # [m]
    if (hit := _first(bad)) is None:
        return
    (env,) = hit
    fault, where_in_env = next(
        (name, at) for name, mask in faults.items() if (at := _first(mask[env])) is not None
    )
    raise ValueError(f"{where} {env}: {_placement_refusal(out, env, fault, where_in_env)}")


def _first(mask: torch.Tensor) -> list[int] | None:
    """The indices of the first true entry of ``mask`` (row-major), or ``None``."""
    hits = mask.nonzero()
    return hits[0].tolist() if len(hits) else None  # host: load time


def _placement_refusal(out: Scenario, i: int, fault: str, at: list[int]) -> str:
    """The words for the placement fault ``fault`` (a key of :func:`_placement_faults`) at index
    ``at`` of environment ``i`` of ``out``, with the numbers that break it."""
    start, goal, robot_r = out.start[i], out.goal[i], out.radius[i]  # [R, 2], [R, 2], [R] m
    if fault == "radius":
        (j,) = at
        return f"env.obstacles.r[{j}] must be positive, got {float(out.obstacle_radius[i, j])}"
    if fault == "at_goal":
        (k,) = at
        to_goal = float(torch.linalg.vector_norm(goal[k] - start[k]))
        return (
            f"robots.goal[{k}] is {to_goal:.3g} m from robots.start[{k}], within "
            f"robots.goal_dis[{k}] = {float(out.goal_dis[i, k]):g} m: the robot starts at its goal"
        )
    if fault in ("start_outside", "goal_outside"):
        (k,) = at
        key = fault.removesuffix("_outside")
        x, y = (start if key == "start" else goal)[k].tolist()  # host: load time
        return (
            f"robots.{key}[{k}] = [{x:g}, {y:g}] lies outside the map, [0, {float(out.width[i]):g}]"
            f" x [0, {float(out.height[i]):g}] m (env.width, env.height)"
        )
    k, j = at
    if fault == "on_obstacle":
        distance = float(torch.linalg.vector_norm(start[k] - out.obstacle_pos[i, j]))
        reach = float(robot_r[k] + out.obstacle_radius[i, j])
        return (
            f"robots.start[{k}] is {distance:.3g} m from env.obstacles.positions[{j}], within "
            f"robots.r[{k}] + env.obstacles.r[{j}] = {reach:.3g} m: the robot starts in collision"
        )
    distance = float(torch.linalg.vector_norm(start[k] - start[j]))
    return (
        f"robots.start[{k}] is {distance:.3g} m from robots.start[{j}], within "
        f"robots.r[{j}] + robots.r[{k}] = {float(robot_r[k] + robot_r[j]):.3g} m: the robots "
        "start in collision"
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
    scenarios_from_dicts(
        episodes,
        slots_needed(episodes, where=f"{path}: episode"),
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
