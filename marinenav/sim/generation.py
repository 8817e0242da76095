"""Vectorised scenario generation: the original's ``reset()`` rejection sampling
(docs/simulator.md, "Scenarios and the curriculum").

``generate_scenarios`` places robots (start/goal pairs), then vortex cores, then static obstacles
in ``n`` environments at once, with the original's acceptance rules and its shared budget of
``SCENARIO_ATTEMPTS`` (500) attempts per kind and environment.

How it works
------------
For each kind, all 500 candidates of every environment are drawn up front, one random call per
quantity, shape ``[n, 500, ...]``. Then:

1. The checks that involve only the candidate itself (start-goal distance, inside the map,
   clearance to the robots and cores placed earlier in the same call) give a mask
   ``open [n, 500]``.
2. A loop over the *slot* index ``j = 0 .. slots-1`` (at most R, C or O iterations, a count
   known from the shapes; vectorised over environments and candidates) takes for slot ``j`` the
   first candidate still open (``torch.max`` over the 1/0 mask returns the first maximal index;
   the maximum is 0 when none is left), marks it placed if ``j`` is below the requested count,
   closes it, and multiplies ``open`` by the compatibility of every candidate with the newly
   placed item only.

Why this equals the original's sequential scan: the original visits candidates ``t = 0, 1, ..``
and accepts ``t`` iff the requested count is not reached, ``t`` passes its own checks, and ``t``
is compatible with every item accepted before ``t``. Let ``k_0 < k_1 < ..`` be the original's
accepted indices. By induction, before slot ``j`` the mask is
``open[t] = own_ok(t) and t not in {k_0..k_(j-1)} and compatible(t, k_i) for all i < j``.

* Every candidate ``t < k_(j-1)`` that was not accepted was rejected by the original because of
  its own checks or an item ``k_i < t``, i.e. ``i < j``; its mask bit is already false.
* Between ``k_(j-1)`` and ``k_j`` the accepted set is ``{k_0..k_(j-1)}``, so the original rejects
  exactly the candidates with ``open[t]`` false and accepts the first ``t > k_(j-1)`` with
  ``open[t]`` true.

Hence the first open candidate is ``k_j``, for every slot, until the count is reached (the count
test is applied per slot) or the budget is exhausted (the mask is empty: the slot and all later
ones stay empty, which is the original's "fewer items than requested" quirk; docs/simulator.md,
"Faithful quirks").

Random streams: the draw order is robot starts, robot goals, headings ``[n, R]``, then (only if
there are core slots) core centres, directions, edge speeds, then (only if there are obstacle
slots) obstacle centres and radii. The same generator state therefore gives the same scenarios;
changing a slot count changes the stream. Bit-exact reproduction of the original's numpy stream
is not a goal (docs/simulator.md, "Randomness").

Distances are compared squared (``dx^2 + dy^2 > c^2`` for the original's ``|d| > c``): the same
rules, only round-off within an ulp of a threshold can decide differently. Thresholds are
distances and assumed non-negative. Masks are 1/0 floats and work buffers are reused across
slots: on CPU, bool comparisons, ``torch.where`` and fresh ``[n, 500]`` allocations cost several
times the arithmetic.

No host synchronisation: no ``item()`` read-back, no boolean-mask indexing, no data-dependent Python
branch; on CUDA the whole call is a fixed sequence of kernel launches.

Units: metres, seconds, radians; circulation ``Gamma`` in m^2/s. Frames: world
(docs/simulator.md, "Tensors").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from marinenav.sim.constants import OBSTACLE_MARGIN, SCENARIO_ATTEMPTS, START_GOAL_MARGIN
from marinenav.sim.scenario import Scenario

TWO_PI = 2.0 * math.pi

# Fields of a Scenario that generate_scenarios (re)writes; everything else is copied from base.
_GENERATED_FIELDS = (
    "robot_present", "start", "goal", "init_theta", "init_velocity_r", "init_thrust",
    "init_thruster_angle", "obstacle_pos", "obstacle_radius", "obstacle_present", "core_pos",
    "core_clockwise", "core_gamma", "core_present",
)  # fmt: skip


@dataclass
class _Candidates:
    """All random draws of one ``generate_scenarios`` call (``A = SCENARIO_ATTEMPTS``).

    Without core (obstacle) slots nothing is drawn for them and their candidate axis is empty.
    Points are stored coordinate-major (see ``_uniform_points``).
    """

    robot_start: Tensor  # [n, A, 2] m, world frame
    robot_goal: Tensor  # [n, A, 2] m, world frame
    init_theta: Tensor  # [n, R] rad in [0, 2pi), one per robot slot
    core_pos: Tensor  # [n, A, 2] m (or [n, 0, 2] without core slots)
    core_clockwise: Tensor  # [n, A] bool
    core_gamma: Tensor  # [n, A] m^2/s
    obstacle_pos: Tensor  # [n, A, 2] m (or [n, 0, 2] without obstacle slots)
    obstacle_radius: Tensor  # [n, A] m


def _rand(shape: tuple[int, ...], generator: torch.Generator, like: Tensor) -> Tensor:
    """``U[0, 1)`` samples of ``shape`` with ``like``'s device and dtype."""
    return torch.rand(shape, generator=generator, device=like.device, dtype=like.dtype)


def _uniform(lo: Tensor, hi: Tensor, shape: tuple[int, ...], generator: torch.Generator) -> Tensor:
    """``U[lo, hi)`` samples of ``shape``, ``lo``/``hi`` broadcastable to it (numpy's formula)."""
    return _rand(shape, generator, hi).mul_(hi - lo).add_(lo)


def _uniform_points(
    lo: Tensor | float, hi: Tensor, n: int, count: int, generator: torch.Generator
) -> Tensor:
    """``[n, count, 2]`` points uniform in the box ``[lo, hi)`` (``lo``/``hi`` ``[n, 1, 2]``).

    Drawn coordinate-major (one ``[n, 2, count]`` call) and returned as a transposed view, so
    each coordinate plane ``[..., 0]`` / ``[..., 1]`` is contiguous for the acceptance passes.
    """
    u = _rand((n, 2, count), generator, hi).transpose(1, 2)
    return u.mul_(hi - lo).add_(lo)


def _sample_candidates(base: Scenario, generator: torch.Generator) -> _Candidates:
    """Draw the ``A = 500`` candidates of every kind for every environment of ``base``.

    Starts/goals ~ U([2, W-2] x [2, H-2]); core centres ~ U([0, W] x [0, H]),
    clockwise ~ Bernoulli(0.5), Gamma = 2 pi r v_edge with v_edge ~ U(v_range); obstacle centres
    ~ U([5, W-5] x [5, H-5]), radii ~ U(obs_r_range); headings ~ U[0, 2 pi). Nothing is drawn
    for cores or obstacles without slots. ``generator`` must live on ``base``'s device.
    """
    n = base.num_envs
    robot_slots, obstacle_slots, core_slots = base.slots
    A = SCENARIO_ATTEMPTS
    extent = torch.stack([base.width, base.height], dim=-1)[:, None, :]  # [n, 1, 2] (W, H)
    inner = START_GOAL_MARGIN
    robot_start = _uniform_points(inner, extent - inner, n, A, generator)
    robot_goal = _uniform_points(inner, extent - inner, n, A, generator)
    init_theta = TWO_PI * _rand((n, robot_slots), generator, extent)

    num_cores = A if core_slots > 0 else 0
    core_pos = _uniform_points(0.0, extent, n, num_cores, generator)
    core_clockwise = _rand((n, num_cores), generator, extent) < 0.5
    v_range = base.v_range[:, :, None]  # [n, 2, 1]
    v_edge = _uniform(v_range[:, 0], v_range[:, 1], (n, num_cores), generator)
    core_gamma = TWO_PI * base.core_radius[:, None] * v_edge

    num_obstacles = A if obstacle_slots > 0 else 0
    inner = OBSTACLE_MARGIN
    obstacle_pos = _uniform_points(inner, extent - inner, n, num_obstacles, generator)
    r_range = base.obs_r_range[:, :, None]
    obstacle_radius = _uniform(r_range[:, 0], r_range[:, 1], (n, num_obstacles), generator)
    return _Candidates(
        robot_start=robot_start,
        robot_goal=robot_goal,
        init_theta=init_theta,
        core_pos=core_pos,
        core_clockwise=core_clockwise,
        core_gamma=core_gamma,
        obstacle_pos=obstacle_pos,
        obstacle_radius=obstacle_radius,
    )


def _planes(pos: Tensor) -> tuple[Tensor, Tensor]:
    """Coordinate planes ``(x [n, A], y [n, A])`` of ``pos [n, A, 2]`` (views, no copy).

    For candidates drawn by ``_uniform_points`` each plane is dense along the candidate axis.
    """
    return pos[..., 0], pos[..., 1]


def _squared_distance(
    x: Tensor, y: Tensor, px: Tensor, py: Tensor, out: Tensor, scratch: Tensor
) -> Tensor:
    """``out = (x - px)^2 + (y - py)^2`` (m^2), broadcasting ``px, py`` over ``x, y [n, A]``.

    Writes into the preallocated ``out`` and ``scratch`` (fresh [n, A] buffers per call cost
    more than the arithmetic on CPU) and returns ``out``.
    """
    torch.sub(x, px, out=out).square_()
    torch.sub(y, py, out=scratch)
    return out.addcmul_(scratch, scratch)


def _min_squared_distance(x: Tensor, y: Tensor, points: Tensor, present: Tensor) -> Tensor:
    """Squared distance (m^2) from each candidate ``(x, y) [n, A]`` to the nearest present point.

    ``points [n, K, 2]`` with ``present [n, K]``; ``+inf`` where no point is present. Absent
    points are moved to infinity, so "for every present point, distance >= t" is exactly
    "minimum >= t" (and likewise for ">").
    """
    far = torch.where(present[..., None], points, torch.inf)
    nearest = torch.full_like(x, torch.inf)
    d2, scratch = torch.empty_like(x), torch.empty_like(x)
    for k in range(points.shape[1]):  # slot loop; each pass is vectorised over [n, A]
        _squared_distance(x, y, far[:, k, 0:1], far[:, k, 1:2], d2, scratch)
        torch.minimum(nearest, d2, out=nearest)
    return nearest


def _gather_rows(values: Tensor, index: Tensor) -> Tensor:
    """``values [n, A, *rest]`` at candidate ``index [n, k]`` -> ``[n, k, *rest]``."""
    rest = values.shape[2:]
    expanded = index.view(*index.shape, *([1] * len(rest))).expand(*index.shape, *rest)
    return values.gather(1, expanded)


def _first_fit(
    open_: Tensor, max_count: Tensor, slots: int, compatible_with: Callable[[Tensor], Tensor]
) -> tuple[Tensor, Tensor]:
    """Sequential acceptance as a loop over slots (see the module docstring).

    Args:
        open_: ``[n, A]`` floating, 1 for candidates that pass their own checks, else 0.
            Overwritten.
        max_count: ``[n]`` int64, requested number of items (values above ``slots`` act as
            ``slots``).
        slots: number of output slots.
        compatible_with: maps the accepted candidate index ``[n, 1]`` (int64) to an ``[n, A]``
            mask (1/0 or bool), "candidate is compatible with that accepted item".

    Returns:
        ``(index [n, slots] int64, present [n, slots] bool)``: the accepted candidate of each
        slot (meaningless where not present). Present slots are a prefix of the slot axis.
    """
    n = open_.shape[0]
    indices = torch.zeros((n, slots), dtype=torch.int64, device=open_.device)
    present = torch.zeros((n, slots), dtype=torch.bool, device=open_.device)
    for slot in range(slots):
        # torch.max returns the first maximal index: the first open candidate, if any.
        is_open, first = open_.max(dim=1, keepdim=True)
        indices[:, slot : slot + 1] = first
        present[:, slot] = (is_open.squeeze(1) > 0) & (max_count > slot)
        if slot + 1 < slots:
            open_.mul_(compatible_with(first))
            open_.scatter_(1, first, 0.0)
    return indices, present


def _accept_robots(
    base: Scenario,
    start: Tensor,
    goal: Tensor,
    num_robots: Tensor,
    min_start_goal_dis: Tensor,
) -> tuple[Tensor, Tensor]:
    """Robot acceptance (the original's start-goal rules) on given candidates.

    A candidate ``(start, goal)`` is accepted iff ``|goal - start| >= min_start_goal_dis`` and,
    against every accepted robot k, ``|start_k - start| > clear_r`` and
    ``|goal_k - goal| > clear_r``, in candidate order, until ``num_robots`` are placed.

    Args:
        base: constants (``clear_r [n]``) and the slot count R.
        start, goal: ``[n, A, 2]`` m, world frame.
        num_robots: ``[n]`` int64.
        min_start_goal_dis: ``[n]`` m.

    Returns:
        ``(index [n, R] int64, present [n, R] bool)`` into the candidate axis.
    """
    sx, sy = _planes(start)
    gx, gy = _planes(goal)
    open_, d2_start, d2_goal, scratch = (torch.empty_like(sx) for _ in range(4))
    _squared_distance(gx, gy, sx, sy, open_, scratch)
    open_.ge_(min_start_goal_dis[:, None].clamp(min=0).square())
    clear_r2 = base.clear_r[:, None].square()

    def compatible_with(k: Tensor) -> Tensor:
        _squared_distance(sx, sy, sx.gather(1, k), sy.gather(1, k), d2_start, scratch)
        _squared_distance(gx, gy, gx.gather(1, k), gy.gather(1, k), d2_goal, scratch)
        return torch.minimum(d2_start, d2_goal, out=d2_start).gt_(clear_r2)

    return _first_fit(open_, num_robots, base.slots[0], compatible_with)


def _accept_cores(
    base: Scenario,
    pos: Tensor,
    clockwise: Tensor,
    gamma: Tensor,
    robot_start: Tensor,
    robot_goal: Tensor,
    robot_present: Tensor,
    num_cores: Tensor,
) -> tuple[Tensor, Tensor]:
    """Vortex-core acceptance (the original's core rules) on given candidates.

    Own checks: inside the map (``x - r >= 0``, ``x + r <= W``, ``y - r >= 0``, ``y + r <= W``:
    the original's quirk uses the width for the y upper bound) and distance ``>= r + clear_r`` to
    every present robot start and goal. Against an accepted core i at distance d: same direction
    rejects ``d < G_i/(2 pi v_rel_max) + G/(2 pi v_rel_max)``; opposite directions reject
    ``v1 > p v2`` with ``v1 = max(G_i, G)/(2 pi (d - 2r))``, ``v2 = min(G_i, G)/(2 pi r)``
    (so ``d < 2r`` is accepted and ``d == 2r`` rejected, as in the original).

    Args:
        base: constants (``width``, ``core_radius``, ``v_rel_max``, ``p``, ``clear_r``) and C.
        pos: ``[n, A, 2]`` m; clockwise: ``[n, A]`` bool; gamma: ``[n, A]`` m^2/s.
        robot_start, robot_goal: ``[n, R, 2]`` m; robot_present: ``[n, R]`` bool.
        num_cores: ``[n]`` int64.

    Returns:
        ``(index [n, C] int64, present [n, C] bool)`` into the candidate axis.
    """
    x, y = _planes(pos)
    r = base.core_radius[:, None]  # [n, 1]
    # x - r >= 0 and y - r >= 0 <=> min(x, y) - r >= 0 exactly (rounding is monotone); same for
    # the upper bound, which the original checks against the width for both axes.
    open_ = torch.minimum(x, y).sub_(r).ge_(0)
    open_.mul_(torch.maximum(x, y).add_(r).le_(base.width[:, None]))
    robots = torch.cat([robot_start, robot_goal], dim=1)
    robots_present = torch.cat([robot_present, robot_present], dim=1)
    open_.mul_(
        _min_squared_distance(x, y, robots, robots_present).ge_(
            (r + base.clear_r[:, None]).square()
        )
    )

    gamma_scaled = gamma / (TWO_PI * base.v_rel_max[:, None])  # Gamma / (2 pi v_rel_max), m
    two_r, two_pi_r, p = 2 * r, TWO_PI * r, base.p[:, None]
    clockwise_f = clockwise.to(x.dtype)
    d, same_ok, v1, v2, opposite = (torch.empty_like(x) for _ in range(5))

    # Masks are 1/0 floats: torch.where and bool comparisons are several times slower on CPU.
    def compatible_with(k: Tensor) -> Tensor:
        gamma_k = gamma.gather(1, k)
        _squared_distance(x, y, x.gather(1, k), y.gather(1, k), d, v1).sqrt_()
        # same direction: accept iff d >= G_k/(2 pi v_rel_max) + G/(2 pi v_rel_max)
        torch.add(gamma_scaled.gather(1, k), gamma_scaled, out=same_ok).le_(d)
        # opposite directions: reject iff v1 > p v2 (NaN compares false: accepted, as in numpy)
        torch.maximum(gamma, gamma_k, out=v1).div_(torch.sub(d, two_r, out=v2).mul_(TWO_PI))
        torch.minimum(gamma, gamma_k, out=v2).div_(two_pi_r).mul_(p)
        opposite_ok = v1.gt_(v2).neg_().add_(1)
        torch.ne(clockwise_f, clockwise_f.gather(1, k), out=opposite)
        # same_ok where same direction, opposite_ok where opposite
        return opposite_ok.sub_(same_ok).mul_(opposite).add_(same_ok)

    return _first_fit(open_, num_cores, base.slots[2], compatible_with)


def _accept_obstacles(
    base: Scenario,
    pos: Tensor,
    radius: Tensor,
    robot_start: Tensor,
    robot_goal: Tensor,
    robot_present: Tensor,
    core_pos: Tensor,
    core_present: Tensor,
    num_obstacles: Tensor,
) -> tuple[Tensor, Tensor]:
    """Static-obstacle acceptance (the original's obstacle rules) on given candidates.

    Own checks: ``x +- r_o`` within ``[0, W]`` and ``y +- r_o`` within ``[0, H]``; distance
    ``>= r_o + clear_r`` to every present robot start and goal; distance ``> core_r + r_o`` to
    every present core centre. Against an accepted obstacle k: distance ``> r_k + r_o``.

    Args:
        base: constants (``width``, ``height``, ``core_radius``, ``clear_r``) and O.
        pos: ``[n, A, 2]`` m; radius: ``[n, A]`` m.
        robot_start, robot_goal: ``[n, R, 2]`` m; robot_present: ``[n, R]`` bool.
        core_pos: ``[n, C, 2]`` m; core_present: ``[n, C]`` bool.
        num_obstacles: ``[n]`` int64.

    Returns:
        ``(index [n, O] int64, present [n, O] bool)`` into the candidate axis.
    """
    x, y = _planes(pos)
    # x - r >= 0 and y - r >= 0 <=> min(x, y) - r >= 0 exactly (rounding is monotone).
    open_ = torch.minimum(x, y).sub_(radius).ge_(0)
    open_.mul_((x + radius).le_(base.width[:, None])).mul_((y + radius).le_(base.height[:, None]))
    robots = torch.cat([robot_start, robot_goal], dim=1)
    robots_present = torch.cat([robot_present, robot_present], dim=1)
    robot_clearance2 = (radius + base.clear_r[:, None]).square_()
    open_.mul_(_min_squared_distance(x, y, robots, robots_present).ge_(robot_clearance2))
    core_clearance2 = (base.core_radius[:, None] + radius).square_()
    open_.mul_(_min_squared_distance(x, y, core_pos, core_present).gt_(core_clearance2))

    d2, scratch = torch.empty_like(x), torch.empty_like(x)

    def compatible_with(k: Tensor) -> Tensor:
        _squared_distance(x, y, x.gather(1, k), y.gather(1, k), d2, scratch)
        return d2.gt_(torch.add(radius.gather(1, k), radius, out=scratch).square_())

    return _first_fit(open_, num_obstacles, base.slots[1], compatible_with)


def _check_counts(base: Scenario, **counts: Tensor) -> None:
    n = base.num_envs
    for name, value in counts.items():
        if not isinstance(value, Tensor) or value.shape != (n,):
            shape = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
            raise ValueError(f"{name} must be a tensor of shape ({n},), got {shape}")


def _place_candidates(
    base: Scenario,
    candidates: _Candidates,
    num_robots: Tensor,
    num_obstacles: Tensor,
    num_cores: Tensor,
    min_start_goal_dis: Tensor,
) -> Scenario:
    """Run the acceptance of robots, then cores, then obstacles on drawn ``candidates``.

    Same arguments and result as ``generate_scenarios``, with the random draws given.
    """
    device, dtype = base.width.device, base.width.dtype
    _check_counts(
        base,
        num_robots=num_robots,
        num_obstacles=num_obstacles,
        num_cores=num_cores,
        min_start_goal_dis=min_start_goal_dis,
    )
    num_robots = num_robots.to(device=device, dtype=torch.int64)
    num_obstacles = num_obstacles.to(device=device, dtype=torch.int64)
    num_cores = num_cores.to(device=device, dtype=torch.int64)
    min_start_goal_dis = min_start_goal_dis.to(device=device, dtype=dtype)
    zero = torch.zeros((), dtype=dtype, device=device)

    robot_index, robot_present = _accept_robots(
        base, candidates.robot_start, candidates.robot_goal, num_robots, min_start_goal_dis
    )
    start = torch.where(
        robot_present[..., None], _gather_rows(candidates.robot_start, robot_index), zero
    )
    goal = torch.where(
        robot_present[..., None], _gather_rows(candidates.robot_goal, robot_index), zero
    )

    core_index, core_present = _accept_cores(
        base,
        candidates.core_pos,
        candidates.core_clockwise,
        candidates.core_gamma,
        start,
        goal,
        robot_present,
        num_cores,
    )
    core_pos = torch.where(
        core_present[..., None], _gather_rows(candidates.core_pos, core_index), zero
    )
    core_clockwise = candidates.core_clockwise.gather(1, core_index) & core_present
    core_gamma = torch.where(core_present, candidates.core_gamma.gather(1, core_index), zero)

    obstacle_index, obstacle_present = _accept_obstacles(
        base,
        candidates.obstacle_pos,
        candidates.obstacle_radius,
        start,
        goal,
        robot_present,
        core_pos,
        core_present,
        num_obstacles,
    )
    obstacle_pos = torch.where(
        obstacle_present[..., None], _gather_rows(candidates.obstacle_pos, obstacle_index), zero
    )
    obstacle_radius = torch.where(
        obstacle_present, candidates.obstacle_radius.gather(1, obstacle_index), zero
    )

    generated = {
        "robot_present": robot_present,
        "start": start,
        "goal": goal,
        "init_theta": torch.where(robot_present, candidates.init_theta, zero),
        "init_velocity_r": torch.zeros_like(base.init_velocity_r),
        "init_thrust": torch.zeros_like(base.init_thrust),
        "init_thruster_angle": torch.zeros_like(base.init_thruster_angle),
        "obstacle_pos": obstacle_pos,
        "obstacle_radius": obstacle_radius,
        "obstacle_present": obstacle_present,
        "core_pos": core_pos,
        "core_clockwise": core_clockwise,
        "core_gamma": core_gamma,
        "core_present": core_present,
    }
    copied = {
        f.name: getattr(base, f.name).clone()
        for f in dataclasses.fields(base)
        if f.name not in _GENERATED_FIELDS
    }
    return Scenario(**copied, **generated)


def generate_scenarios(
    base: Scenario,
    num_robots: Tensor,
    num_obstacles: Tensor,
    num_cores: Tensor,
    min_start_goal_dis: Tensor,
    generator: torch.Generator,
) -> Scenario:
    """Generate ``n`` random scenarios with the original's rules.

    Args:
        base: ``n`` environments whose constants (map size, core and obstacle parameters,
            ``clear_r``, vessel and perception constants) and slot counts ``(R, O, C)`` are
            used, typically ``default_scenario(n, R, O, C)``.
        num_robots, num_obstacles, num_cores: ``[n]`` int64, requested counts per environment.
            They must not exceed the slot counts (not checked on the device: larger values are
            capped at the slot count; see ``CurriculumSchedule.check_slots``).
        min_start_goal_dis: ``[n]`` m, minimum start-goal distance per environment.
        generator: random generator on ``base``'s device.

    Returns:
        A new Scenario (same ``n``, slots, dtype and device; no tensor shared with ``base``)
        equal to ``base`` except the robots (``robot_present``, ``start``, ``goal``,
        ``init_theta ~ U[0, 2pi)``, zero initial velocity, thrusts and thruster angles), the
        obstacles and the cores. Empty slots hold zeros. If an environment's 500-attempt budget
        of a kind runs out, it gets fewer items than requested (the ``*_present`` mask shows
        it), as in the original.

    Raises:
        ValueError: if a count or distance tensor does not have shape ``[n]``.
    """
    candidates = _sample_candidates(base, generator)
    return _place_candidates(
        base, candidates, num_robots, num_obstacles, num_cores, min_start_goal_dis
    )
