"""The classical baselines (marinenav.baselines): decisions on hand-built situations against a
plain-Python transcription of docs/baselines.md's formulas (scalars, math module, no torch),
batching, the APF variants, input checks and the evaluation entry point.

Frames: situations are written in the ROS robot frame (x forward, y to port) and handed to the
policies as RL observations (every y and the yaw rate negated), as MarineNavEnv observes.
"""

from __future__ import annotations

import math

import pytest
import torch

from marinenav.baselines import APFPolicy, MPCPolicy, baseline_policy

OWN_R = 0.5 * math.sqrt(5**2 + 2.5**2)  # 2.795 m
CHANGES = (0.0, -500.0, -1000.0, 500.0, 1000.0)  # N/s; action a = 5 i + j: left i, right j


# --- hand arithmetic (docs/baselines.md), scalars only -----------------------------------------
def predict(
    u: float, v: float, r: float, tl: float, tr: float, a: int, dt: float = 0.5, clamp=True
):
    """RL-frame one-step prediction of action ``a``: next thrusts (clamped to [-500, 1000] N
    or not), ROS-frame next velocity, heading change and linear acceleration."""
    left, right = tl + CHANGES[a // 5] * 0.5, tr + CHANGES[a % 5] * 0.5
    if clamp:
        left, right = min(max(left, -500.0), 1000.0), min(max(right, -500.0), 1000.0)
    m, izz, xdu = 400.0, 450.0, 20.0
    # b = -C_RB V - (C_A + D + D_n) V with yDotV = yDotR = nDotV = 0 and the linear/quadratic
    # damping xU=-100, yV=-100, nR=-980, xUU=-150, yVV=-150, nRR=-950
    crb = (-m * r * v, m * r * u, 0.0)
    ca = (0.0, -xdu * u * r, xdu * u * v)
    d = (100 * u + 150 * abs(u) * u, 100 * v + 150 * abs(v) * v, 980 * r + 950 * abs(r) * r)
    b = [-crb[i] - ca[i] - d[i] for i in range(3)]
    tau = (left + right, 0.0, (left - right) * 2.5 / 2)
    acc = ((b[0] + tau[0]) / (m - xdu), (b[1] + tau[1]) / m, (b[2] + tau[2]) / (izz + 980))
    u1, v1, r1 = u + acc[0] * dt, v + acc[1] * dt, r + acc[2] * dt
    return (left, right), (u1, -v1), -r1 * dt, (acc[0], -acc[1])


def wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


def colregs(p, w, v):
    """(virtual points, in a zone) of an object at ``p`` moving with ``w``, own velocity ``v``."""
    speed, own = math.hypot(*w), math.hypot(*v)
    if speed < 0.5 or own < 0.5:
        return [], False
    c, s = w[0] / speed, w[1] / speed
    x, y = -(c * p[0] + s * p[1]), -(-s * p[0] + c * p[1])
    bearing = math.atan2(-s * v[0] + c * v[1], c * v[0] + s * v[1])
    crossing = (-9 <= x <= 12 and -17 <= y <= 0 and not (y + 7 > -7 / 12 * (x - 12))
                and math.pi / 4 < bearing <= 3 * math.pi / 4)  # fmt: skip
    head_on = 0 <= x <= 17 and abs(y) <= 4.5 and abs(bearing) > 3 * math.pi / 4
    if crossing:
        d = (c, s)
    elif head_on:
        d = (s, -c)
    else:
        return [], False
    return [(p[0] + 5 * k * d[0], p[1] + 5 * k * d[1]) for k in range(1, 5)], True


def moving(w, v) -> bool:
    """The node's check_COLREGs gives an object points only when it and the own ship move."""
    return math.hypot(*w) >= 0.5 and math.hypot(*v) >= 0.5


def apf_force(goal, vel, objects, textbook: bool):
    fx, fy = 50 * goal[0], 50 * goal[1]
    dg = math.hypot(*goal)
    for x, y, wx, wy, radius in objects:
        dist = math.hypot(x, y)
        if ((vel[0] - wx) * x + (vel[1] - wy) * y) / dist <= 0:
            continue  # not closing in
        virtual, _ = colregs((x, y), (wx, wy), vel)
        if not textbook and not moving((wx, wy), vel):
            continue  # the node: no point at all for a static object or a slow own ship
        for qx, qy in [(x, y), *virtual]:
            dq = math.hypot(qx, qy)
            d_obs = dq - OWN_R - radius
            if textbook and d_obs >= 15:
                continue
            if textbook:
                d_obs = max(d_obs, 0.1)
            gap = 1 / d_obs - 1 / 15
            f1 = 500 * gap * dg**2 / d_obs**2
            f2 = 500 * gap**2 * dg
            fx += f1 * -qx / dq + f2 * -goal[0] / dg
            fy += f1 * -qy / dq + f2 * -goal[1] / dg
    return fx, fy


def apf_score(state, objects, a, textbook=True, dt=0.5):
    goal, vel = state[0:2], state[2:4]
    _, v2, heading, _ = predict(state[2], -state[3], -state[4], *state[5:7], a, dt, textbook)
    fx, fy = apf_force(goal, vel, objects, textbook)
    projection = (fx * v2[0] + fy * v2[1]) / math.hypot(fx, fy)
    return 0.15 * projection - abs(wrap(heading - math.atan2(fy, fx)))


def mpc_cost(state, objects, a, clamp=True, dt=0.5):
    goal, vel = state[0:2], state[2:4]
    thrust, v2, heading, acc = predict(state[2], -state[3], -state[4], *state[5:7], a, dt, clamp)
    dg = math.hypot(*goal)
    cost = 20 * (abs(wrap(heading - math.atan2(goal[1], goal[0])))
                 - 0.15 * (goal[0] * v2[0] + goal[1] * v2[1]) / dg)  # fmt: skip
    px, py, vx, vy = 0.0, 0.0, vel[0], vel[1]
    for _ in range(5):
        px, py = px + vx * 0.2, py + vy * 0.2
        vx, vy = vx + acc[0] * 0.2, vy + acc[1] * 0.2
    # the node's computeCost runs once, on the horizon's end
    for x, y, wx, wy, radius in objects:
        dis = math.hypot(px - (x + wx), py - (y + wy)) - OWN_R - radius
        if dis < 10:
            cost += (10 / max(dis, 9)) ** 4 * ((10 - dis) + (50 if dis < 0 else 0)) / 1.0
        virtual, in_zone = colregs((x, y), (wx, wy), vel)
        points = virtual if in_zone else [(x, y)] if moving((wx, wy), vel) else []
        for qx, qy in points:
            if math.hypot(px - qx, py - qy) - OWN_R - radius < 0:
                cost += 12
    return cost + 0.0005 * (abs(thrust[0]) + abs(thrust[1])) * 1.0


# --- situations, ROS frame: state = (goal x, goal y, u, v, r, thrust l, thrust r) -------------
# (x, y, vx, vy, radius) per object; the own ship cruises at 2 m/s on 400 N per thruster
GOAL_BEHIND = ((-20.0, 0.05, 2.0, 0.0, 0.0, 400.0, 400.0), [])
STATIC_AHEAD = ((30.0, 0.0, 2.0, 0.0, 0.0, 400.0, 400.0), [(12.0, 0.5, 0.0, 0.0, 1.0)])
STATIC_CLOSE = ((30.0, 0.0, 2.0, 0.0, 0.0, 400.0, 400.0), [(5.0, 0.5, 0.0, 0.0, 1.0)])
HEAD_ON = ((40.0, 0.0, 2.0, 0.1, 0.02, 400.0, 400.0), [(15.0, 0.0, -2.0, 0.0, OWN_R)])
LEFT_CROSSING = ((40.0, 0.0, 2.0, 0.0, 0.0, 400.0, 400.0), [(12.0, 6.0, 0.0, -2.0, OWN_R)])
SITUATIONS = {"goal behind": GOAL_BEHIND, "static obstacle ahead": STATIC_AHEAD,
              "static obstacle close ahead": STATIC_CLOSE, "head-on": HEAD_ON,
              "left crossing": LEFT_CROSSING}  # fmt: skip


def rl_observation(situation, slots: int = 5):
    """The situation as one RL observation: y components and the yaw rate negated."""
    state, objects = situation
    gx, gy, u, v, r, tl, tr = state
    self_state = torch.tensor([gx, -gy, u, -v, -r, tl, tr], dtype=torch.float64)
    rows = torch.zeros(slots, 5, dtype=torch.float64)
    mask = torch.zeros(slots, dtype=torch.bool)
    for k, (x, y, vx, vy, radius) in enumerate(objects):
        rows[k] = torch.tensor([x, -y, vx, -vy, radius], dtype=torch.float64)
        mask[k] = True
    return self_state, rows, mask


def hand_scores(name: str, situation, dt: float = 0.5) -> list[float]:
    state, objects = situation
    if name.startswith("mpc"):
        clamp = name == "mpc"
        return [-mpc_cost(state, objects, a, clamp, dt) for a in range(25)]
    return [apf_score(state, objects, a, name == "apf", dt) for a in range(25)]


POLICIES = {"apf": lambda: APFPolicy(), "apf-original": lambda: APFPolicy(variant="original"),
            "mpc": lambda: MPCPolicy(),
            "mpc-original": lambda: MPCPolicy(variant="original")}  # fmt: skip
# the hand arithmetic's decision in each situation (index a = 5 i + j: left i, right j)
EXPECTED = {
    ("apf", "goal behind"): 14,  # left -1000, right +1000: hardest turn to port (the goal's side)
    ("apf", "static obstacle ahead"): 24,  # 8 m clear: the attraction wins, full ahead
    ("apf", "static obstacle close ahead"): 22,  # 1.2 m clear, at port: hard to starboard
    ("apf", "head-on"): 23,  # left +1000, right +500: ahead, turning to starboard (COLREGs)
    ("apf", "left crossing"): 14,  # its virtual obstacles block starboard: hard to port, astern
    ("mpc", "goal behind"): 11,  # left -1000, right -500: slow down, turning to port
    ("mpc", "static obstacle ahead"): 24,  # nothing within reach of the 1 s horizon: full ahead
    ("mpc", "static obstacle close ahead"): 12,  # both -1000: brake
    ("mpc", "head-on"): 24,
    ("mpc", "left crossing"): 24,
}


@pytest.mark.parametrize("name", ["apf", "mpc"])
@pytest.mark.parametrize("situation", list(SITUATIONS))
def test_decision_matches_hand_arithmetic(name: str, situation: str) -> None:
    policy = POLICIES[name]()
    obs = rl_observation(SITUATIONS[situation])
    hand = hand_scores(name, SITUATIONS[situation])
    scores = policy.candidate_scores(*obs)
    assert scores.shape == (25,)
    # every candidate's score, and so the decision, as the hand arithmetic gives it
    assert scores.tolist() == pytest.approx(hand, rel=1e-9, abs=1e-9)
    decision = max(range(25), key=lambda a: hand[a])
    assert int(policy.act(*obs)) == decision == EXPECTED[name, situation]


def test_goal_behind_scores_by_hand() -> None:
    """Two candidates of APF with the goal behind, by hand (u = 2 m/s, no rotation, 400 N per
    thruster, goal (-20, 0.05) in the ROS frame)."""
    policy = APFPolicy()
    scores = policy.candidate_scores(*rl_observation(GOAL_BEHIND))
    goal_angle = math.atan2(0.05, -20.0)
    # action 14: left 400 - 500 = -100 N, right 400 + 500 = 900 N; surge force 800 N balances the
    # drag 100 u + 150 u^2 = 800 N; yaw moment (-100 - 900) 1.25 = -1250 N m over 1430 kg m^2
    heading = 1250 / 1430 * 0.5 * 0.5  # rad, counter-clockwise (ROS)
    projection = -20.0 * 2.0 / math.hypot(-20.0, 0.05)
    expected_14 = 0.15 * projection - abs(heading - goal_angle)
    assert float(scores[14]) == pytest.approx(expected_14, rel=1e-12)
    # action 0: thrusts unchanged, no turn, no surge change
    assert float(scores[0]) == pytest.approx(0.15 * projection - abs(goal_angle), rel=1e-12)


# at rest, both thrusters at the motors' 1,000 N limit, the goal 30 m dead ahead, nothing else
FULL_THRUST_AT_REST = ((30.0, 0.0, 0.0, 0.0, 0.0, 1000.0, 1000.0), [])


@pytest.mark.parametrize("name", ["apf", "mpc"])
def test_the_nodes_planners_score_the_unclamped_thrust(name: str) -> None:
    """Where the clamp decides: at rest, thrusters at the 1,000 N limit, goal 30 m dead ahead,
    the node's 0.25 s prediction step.

    At rest every Coriolis and damping term is 0 and ``A = diag(400 - 20, 400, 450 + 980)``,
    so a candidate with thrusts ``(l, r)`` predicts ``u_next = (l + r) / 380 * 0.25`` m/s,
    ``v_next = 0`` and the heading change ``(l - r) 1.25 / 1430 * 0.25 * 0.25`` rad, whatever
    its sign: the goal is dead ahead, so any ``l != r`` only adds a heading error.

    - APF: ``F = 50 (30, 0)`` points dead ahead, the score is
      ``0.15 u_next - |heading|``.
    - MPC: the cost is ``20 (|heading| - 0.15 u_next) + 0.0005 (|l| + |r|)``, nothing to
      collide with.

    Clamped (textbook), the changes 0, +500 and +1000 N/s all leave 1,000 N: nine candidates
    (i, j in {0, 3, 4}) tie with ``u_next = 2000 / 380 * 0.25 = 1.3158`` m/s, APF score
    ``0.15 * 1.3158 = 0.19737``, MPC cost ``-3 * 1.3158 + 0.0005 * 2000 = -2.9474``; the first,
    action 0 (hold), wins. Unclamped (the node), +1000 N/s on both gives ``0.5 * 1000 + 1000 =
    1500`` N each, ``u_next = 3000 / 380 * 0.25 = 1.9737`` m/s: APF score ``0.29605``, MPC cost
    ``-3 * 1.9737 + 0.0005 * 3000 = -4.4211``, the best of all 25: action 24 (both +1000 N/s).
    """
    obs = rl_observation(FULL_THRUST_AT_REST)
    textbook = baseline_policy(name, "textbook", planning_period=0.25)
    original = baseline_policy(name, "original", planning_period=0.25)
    clamped, unclamped = textbook.candidate_scores(*obs), original.candidate_scores(*obs)
    hold, full, held = 2000 / 380 * 0.25, 3000 / 380 * 0.25, [0, 3, 4, 15, 18, 19, 20, 23, 24]
    if name == "apf":
        hold_score, full_score = 0.15 * hold, 0.15 * full
    else:
        hold_score, full_score = -(-3 * hold + 0.0005 * 2000), -(-3 * full + 0.0005 * 3000)
    assert hold_score == pytest.approx(0.19737 if name == "apf" else 2.9474, abs=1e-4)
    assert full_score == pytest.approx(0.29605 if name == "apf" else 4.4211, abs=1e-4)
    assert clamped[held].tolist() == pytest.approx([hold_score] * 9, rel=1e-12)
    assert float(unclamped[0]) == pytest.approx(hold_score, rel=1e-12)
    assert float(unclamped[24]) == pytest.approx(full_score, rel=1e-12)
    assert int(textbook.act(*obs)) == 0
    assert int(original.act(*obs)) == 24


@pytest.mark.parametrize("name", ["apf", "apf-original", "mpc", "mpc-original"])
@pytest.mark.parametrize("period", [0.25, 0.5])
def test_scores_near_the_thrust_limits_match_hand_arithmetic(name: str, period: float) -> None:
    """Every candidate's score, clamped (textbook) or not (original), with the own ship's
    thrusts drawn in [-500, 1000] N (a change of 500 N crosses a limit from two thirds of
    that range) among each hand-built situation's objects."""
    generator = torch.Generator().manual_seed(34)
    planner, _, variant = name.partition("-")
    policy = baseline_policy(planner, variant or "textbook", planning_period=period)
    for state, objects in SITUATIONS.values():
        thrust = torch.empty(2, dtype=torch.float64).uniform_(-500, 1000, generator=generator)
        situation = ((*state[:5], *thrust.tolist()), objects)
        hand = hand_scores(name, situation, period)
        scores = policy.candidate_scores(*rl_observation(situation))
        assert scores.tolist() == pytest.approx(hand, rel=1e-9, abs=1e-9)


def test_apf_variants_differ_beyond_d0_and_agree_within() -> None:
    state = GOAL_BEHIND[0]
    # an object ahead to starboard drifting to starboard at 1 m/s (moving, closing in, in no
    # COLREGs zone), 22.4 - 2.8 - 1 = 18.6 m clear (beyond d0 = 15 m)
    far = (state, [(20.0, -10.0, 0.0, -1.0, 1.0)])
    textbook, original = APFPolicy(), APFPolicy(variant="original")
    obs = rl_observation(far)
    # textbook: the far obstacle is ignored, the force is the attraction alone
    f_textbook = textbook.force(_ros(obs))
    assert f_textbook.tolist() == pytest.approx([50 * -20.0, 50 * 0.05], rel=1e-12)
    # original: 1/d - 1/d0 < 0 pulls toward the obstacle (F1) and away from the goal (F2)
    d = math.hypot(20.0, -10.0) - OWN_R - 1.0
    gap, dg = 1 / d - 1 / 15, math.hypot(-20.0, 0.05)
    f1 = 500 * gap * dg**2 / d**2
    f2 = 500 * gap**2 * dg
    q = math.hypot(20.0, -10.0)
    expected = (-1000 + f1 * -20.0 / q + f2 * 20.0 / dg, 2.5 + f1 * 10.0 / q + f2 * -0.05 / dg)
    assert original.force(_ros(obs)).tolist() == pytest.approx(expected, rel=1e-12)
    # ... which tips the decision: textbook turns to port (the goal's side), original to starboard
    assert int(textbook.act(*obs)) == 14
    assert int(original.act(*obs)) == 22
    # within d0 (and outside contact) the two are the same planner: an object 8.2 m clear
    # ahead, drifting to port at 1 m/s (closing in, in no COLREGs zone)
    near = rl_observation(((30.0, 0.0, 2.0, 0.0, 0.0, 400.0, 400.0), [(12.0, 0.5, 0.0, 1.0, 1.0)]))
    assert textbook.force(_ros(near)).tolist() == pytest.approx(
        original.force(_ros(near)).tolist(), rel=1e-12
    )
    assert torch.equal(textbook.candidate_scores(*near), original.candidate_scores(*near))


def test_the_nodes_apf_ignores_static_objects_and_a_slow_own_ship() -> None:
    """The node's check_COLREGs gives an object no point unless the object and the own ship
    both move at 0.5 m/s or more, so its APF feels no static obstacle; the textbook one does."""
    textbook, original = APFPolicy(), APFPolicy(variant="original")
    static = rl_observation(STATIC_AHEAD)  # 8.2 m clear, not moving, own ship at 2 m/s
    attraction = [50 * 30.0, 0.0]
    assert original.force(_ros(static)).tolist() == pytest.approx(attraction, abs=1e-12)
    assert textbook.force(_ros(static)).tolist() != pytest.approx(attraction, abs=1e-6)
    slow_state = (30.0, 0.0, 0.4, 0.0, 0.0, 400.0, 400.0)  # own ship at 0.4 m/s
    slow = rl_observation((slow_state, [(12.0, 0.5, 0.0, 1.0, 1.0)]))
    assert original.force(_ros(slow)).tolist() == pytest.approx(attraction, abs=1e-12)
    assert textbook.force(_ros(slow)).tolist() != pytest.approx(attraction, abs=1e-6)


def _ros(obs):
    from marinenav.baselines.prediction import ros_frame

    return ros_frame(*obs)


@pytest.mark.parametrize("name", list(POLICIES))
def test_batched_call_equals_one_at_a_time(name: str) -> None:
    """A [4, 3] batch of situations (some rows all padding) gives each row's own decision."""
    policy = POLICIES[name]()
    generator = torch.Generator().manual_seed(22)
    rows = [rl_observation(s) for s in SITUATIONS.values()]
    for _ in range(12 - len(rows)):  # random observations: goals, velocities, objects, masks
        state = torch.randn(7, generator=generator, dtype=torch.float64) * torch.tensor(
            [20, 20, 1, 0.3, 0.1, 300, 300], dtype=torch.float64
        )
        objects = torch.randn(5, 5, generator=generator, dtype=torch.float64) * torch.tensor(
            [10, 10, 1.5, 1.5, 0.5], dtype=torch.float64
        )
        objects[:, 4] = objects[:, 4].abs() + 1
        mask = torch.rand(5, generator=generator) < 0.6
        rows.append((state, objects, mask))
    self_state = torch.stack([r[0] for r in rows]).view(4, 3, 7)
    objects = torch.stack([r[1] for r in rows]).view(4, 3, 5, 5)
    mask = torch.stack([r[2] for r in rows]).view(4, 3, 5)
    batched = policy.act(self_state, objects, mask)
    assert batched.shape == (4, 3) and batched.dtype == torch.int64
    one_by_one = torch.stack([policy.act(*r) for r in rows]).view(4, 3)
    assert torch.equal(batched, one_by_one)
    # padded objects are ignored whatever their numbers
    junk = objects.clone()
    junk[~mask] = 123.0
    assert torch.equal(policy.act(self_state, junk, mask), batched)


def test_policy_reads_and_writes_the_env_keys() -> None:
    from tensordict import TensorDict

    self_state, objects, mask = rl_observation(HEAD_ON)
    td = TensorDict(
        {("agents", "self_state"): self_state.expand(2, 7),
         ("agents", "objects"): objects.expand(2, 5, 5),
         ("agents", "objects_mask"): mask.expand(2, 5)}, batch_size=[2],
    )  # fmt: skip
    out = baseline_policy("apf")(td)
    assert out["agents", "action"].tolist() == [EXPECTED["apf", "head-on"]] * 2
    assert baseline_policy("mpc").action_kind == "discrete"


def test_bad_input_gets_a_clear_error() -> None:
    policy = APFPolicy()
    self_state, objects, mask = rl_observation(HEAD_ON)
    with pytest.raises(ValueError, match=r"self_state must have shape \[\.\.\., 7\]"):
        policy.act(self_state[:6], objects, mask)
    with pytest.raises(ValueError, match="objects must have shape"):
        policy.act(self_state, objects[:, :4], mask)
    with pytest.raises(ValueError, match="objects must have shape"):
        policy.act(self_state.expand(2, 7), objects, mask)  # batch shapes differ
    with pytest.raises(ValueError, match="objects_mask must have shape"):
        policy.act(self_state, objects, mask[:4])
    with pytest.raises(ValueError, match="floating dtype"):
        policy.act(self_state.long(), objects.long(), mask)
    with pytest.raises(ValueError, match="APF variant"):
        APFPolicy(variant="textbok")
    with pytest.raises(ValueError, match="MPC variant"):
        MPCPolicy(variant="node")
    with pytest.raises(ValueError, match="unknown baseline"):
        baseline_policy("dwa")


def test_evaluate_cli_runs_a_baseline(tmp_path, capsys) -> None:
    """Smoke test of ``python -m marinenav.evaluate --baseline``: the paper set's 60 episodes
    cut to 3 steps, the per-stage table, the baseline recorded in the JSON."""
    import json

    from marinenav.evaluate import main

    out = tmp_path / "apf.json"
    argv = ["--baseline", "apf", "--variant", "original", "--set", "paper", "--max-steps", "3"]
    assert main([*argv, "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| success_rate_stage5 |" in table and "| episodes | 60 |" in table
    metrics = json.loads(out.read_text())
    assert metrics["baseline"] == {"name": "apf", "variant": "original", "planning_period": 0.5}
    assert len(metrics["episodes"]["success"]) == 60
    assert main(["--baseline", "mpc", "--variant", "node", "--max-steps", "3"]) == 2
    assert "MPC variant must be one of ('textbook', 'original')" in capsys.readouterr().err


def test_viz_episode_draws_a_baseline(tmp_path, capsys) -> None:
    """Smoke test of ``python -m marinenav.viz episode --baseline``: a 2-step episode."""
    from marinenav.viz.__main__ import main

    out = tmp_path / "frames"
    argv = ["episode", "--baseline", "mpc", "--episode", "0", "--max-steps", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "episode 0 of mpc (textbook) on the random paper set: 2 steps" in capsys.readouterr().out
    assert len(list(out.glob("frame_*.png"))) == 3
