"""Per-robot n-step transitions (``marinenav.training.nstep``): hand-built sequences of one or two
environments, a random sequence against a plain Python reference, and no host read-back."""

from __future__ import annotations

import random

import pytest
import torch
from tensordict import TensorDict

from marinenav.keys import PRICED_TERM
from marinenav.training.nstep import NStepTransitions
from tests.sync_utils import count_read_backs

GAMMA = 0.5  # exact in binary: hand-computed returns compare exactly


def step_td(
    t: int,
    reward: list[list[float]],
    active: list[list[bool]],
    terminated: list[list[bool]] | None = None,
    truncated: list[list[bool]] | None = None,
) -> TensorDict:
    """One environment step ``[E]`` with robots ``[E, R]``. Observations encode who and when:
    ``self_state[..., 0] = 1000 e + 100 r + t`` before the step (``t + 1`` after), the action
    is ``10 r + t``."""
    reward_t = torch.tensor(reward, dtype=torch.float32)
    E, R = reward_t.shape
    e = torch.arange(E).view(E, 1)
    r = torch.arange(R).view(1, R)
    marker = (1000 * e + 100 * r).float()
    term = torch.tensor(terminated if terminated else [[False] * R] * E)
    trunc = torch.tensor(truncated if truncated else [[False] * R] * E)

    def observation(time: int) -> dict[str, torch.Tensor]:
        value = marker + time
        return {
            "self_state": value.unsqueeze(-1).expand(E, R, 7).clone(),
            "objects": value.view(E, R, 1, 1).expand(E, R, 5, 5).clone(),
            "objects_mask": (value.view(E, R, 1).expand(E, R, 5) > -1).clone(),
        }

    agents = TensorDict(
        {**observation(t), "action": (10 * r + t).expand(E, R).clone(),
         "active": torch.tensor(active)},
        batch_size=[E, R],
    )  # fmt: skip
    nxt = TensorDict(
        {**observation(t + 1), "reward": reward_t.unsqueeze(-1),
         "terminated": term.unsqueeze(-1), "done": (term | trunc).unsqueeze(-1)},
        batch_size=[E, R],
    )  # fmt: skip
    return TensorDict({"agents": agents, "next": {"agents": nxt}}, batch_size=[E])


def emitted(out: TensorDict) -> list[tuple]:
    """Valid transitions as ``(start marker, action, return, next marker, discount,
    terminated, done)``, in output order."""
    rows = []
    for i in torch.nonzero(out["valid"]).flatten().tolist():
        rows.append((
            out["self_state"][i, 0].item(), out["action"][i].item(),
            out["next", "reward"][i, 0].item(), out["next", "self_state"][i, 0].item(),
            out["discount"][i, 0].item(), out["next", "terminated"][i, 0].item(),
            out["next", "done"][i, 0].item(),
        ))  # fmt: skip
    return rows


def test_output_layout() -> None:
    nstep = NStepTransitions(3, GAMMA)
    out = nstep.push(step_td(0, [[1.0, 2.0]], [[True, True]]))
    assert out.batch_size == torch.Size([1 * 2 * 3])
    assert out["self_state"].shape == (6, 7) and out["objects"].shape == (6, 5, 5)
    assert out["objects_mask"].dtype == torch.bool and out["action"].shape == (6,)
    assert out["discount"].shape == (6, 1) and out["valid"].shape == (6,)
    for key in ("reward", "terminated", "done"):
        assert out["next", key].shape == (6, 1)
    assert out["next", "self_state"].shape == (6, 7)
    assert not out["valid"].any()  # nothing is complete after one step of a 3-step window


def test_returns_follow_each_robots_own_trajectory() -> None:
    """Two robots with different rewards, pushed together: no mixing across robots."""
    nstep = NStepTransitions(3, GAMMA)
    rewards = [[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]]
    outs = [nstep.push(step_td(t, [rewards[t]], [[True, True]])) for t in range(4)]
    assert emitted(outs[0]) == [] and emitted(outs[1]) == []
    # start t=0: r0 + g r1 + g^2 r2, next = observation after step 2, discount g^3
    assert emitted(outs[2]) == [
        (0.0, 0, 1 + 0.5 * 2 + 0.25 * 3, 3.0, 0.125, False, False),
        (100.0, 10, 10 + 0.5 * 20 + 0.25 * 30, 103.0, 0.125, False, False),
    ]
    assert emitted(outs[3]) == [
        (1.0, 1, 2 + 0.5 * 3 + 0.25 * 4, 4.0, 0.125, False, False),
        (101.0, 11, 20 + 0.5 * 30 + 0.25 * 40, 104.0, 0.125, False, False),
    ]


def test_terminal_step_flushes_the_window_with_shorter_returns() -> None:
    nstep = NStepTransitions(3, GAMMA)
    for t in range(3):
        nstep.push(step_td(t, [[t + 1.0]], [[True]]))
    out = nstep.push(step_td(3, [[4.0]], [[True]], terminated=[[True]]))
    # window: starts t=1, 2, 3 all end at the terminal step 3 (start 0 went out at t=2)
    assert sorted(emitted(out)) == sorted([
        (3.0, 3, 4.0, 4.0, 0.5, True, True),  # m = 1
        (2.0, 2, 3 + 0.5 * 4, 4.0, 0.25, True, True),  # m = 2
        (1.0, 1, 2 + 0.5 * 3 + 0.25 * 4, 4.0, 0.125, True, True),  # m = 3
    ])  # fmt: skip
    # the finished robot is inactive afterwards: nothing more
    for t in range(4, 8):
        out = nstep.push(step_td(t, [[0.0]], [[False]], terminated=[[True]]))
        assert emitted(out) == []


def test_truncation_flushes_with_bootstrapping_flags() -> None:
    nstep = NStepTransitions(3, GAMMA)
    nstep.push(step_td(0, [[1.0]], [[True]]))
    out = nstep.push(step_td(1, [[2.0]], [[True]], truncated=[[True]]))
    assert sorted(emitted(out)) == sorted([
        (1.0, 1, 2.0, 2.0, 0.5, False, True),
        (0.0, 0, 1 + 0.5 * 2, 2.0, 0.25, False, True),
    ])  # fmt: skip


def test_new_episode_starts_with_an_empty_window() -> None:
    nstep = NStepTransitions(2, GAMMA)
    nstep.push(step_td(0, [[1.0]], [[True]]))
    out = nstep.push(step_td(1, [[2.0]], [[True]], terminated=[[True]]))
    assert len(emitted(out)) == 2
    # the environment restarts (t goes on counting): the first new transition needs 2 new steps
    out = nstep.push(step_td(5, [[7.0]], [[True]]))
    assert emitted(out) == []
    out = nstep.push(step_td(6, [[8.0]], [[True]]))
    assert emitted(out) == [(5.0, 5, 7 + 0.5 * 8, 7.0, 0.25, False, False)]


def test_inactive_slots_and_steps_contribute_nothing() -> None:
    """Slot 1 is padding (never active); slot 0 skips one step: that step's reward is not in
    its return."""
    nstep = NStepTransitions(3, GAMMA)
    pattern = [True, False, True, True]
    outs = [nstep.push(step_td(t, [[t + 1.0, 99.0]], [[pattern[t], False]])) for t in range(4)]
    assert all(emitted(o) == [] for o in outs[:3])
    assert emitted(outs[3]) == [(0.0, 0, 1 + 0.5 * 3 + 0.25 * 4, 4.0, 0.125, False, False)]
    assert not outs[3]["valid"].view(1, 2, 3)[:, 1].any()


def test_two_environments_are_independent() -> None:
    nstep = NStepTransitions(2, GAMMA)
    nstep.push(step_td(0, [[1.0], [5.0]], [[True], [True]]))
    out = nstep.push(step_td(1, [[2.0], [6.0]], [[True], [True]], terminated=[[False], [True]]))
    assert sorted(emitted(out)) == sorted([
        (0.0, 0, 1 + 0.5 * 2, 2.0, 0.25, False, False),
        (1000.0, 0, 5 + 0.5 * 6, 1002.0, 0.25, True, True),
        (1001.0, 1, 6.0, 1002.0, 0.5, True, True),
    ])  # fmt: skip


def test_reset_slots_drops_pending_steps() -> None:
    nstep = NStepTransitions(2, GAMMA)
    nstep.push(step_td(0, [[1.0], [1.0]], [[True], [True]]))
    nstep.reset_slots(torch.tensor([True, False]))
    out = nstep.push(step_td(1, [[2.0], [2.0]], [[True], [True]]))
    assert emitted(out) == [(1000.0, 0, 1 + 0.5 * 2, 1002.0, 0.25, False, False)]


def reference(steps: list[dict], n: int, gamma: float) -> list[tuple]:
    """Plain per-robot n-step returns of a recorded sequence (complete transitions only)."""
    rows = []
    E, R = len(steps[0]["active"]), len(steps[0]["active"][0])
    for e in range(E):
        for r in range(R):
            window: list[tuple] = []  # (t, reward, terminated, done) of pending active steps
            for t, s in enumerate(steps):
                if not s["active"][e][r]:
                    continue
                window.append((t, s["reward"][e][r], s["terminated"][e][r], s["done"][e][r]))
                if s["done"][e][r]:  # the episode ends: every pending start, shorter returns
                    rows += [_transition(window[i:], e, r, gamma) for i in range(len(window))]
                    window = []
                elif len(window) == n:  # the oldest pending start has its n steps
                    rows.append(_transition(window, e, r, gamma))
                    window.pop(0)
    return rows


def _transition(used: list[tuple], e: int, r: int, gamma: float) -> tuple:
    ret = sum(gamma**k * step[1] for k, step in enumerate(used))
    t0, t_last = used[0][0], used[-1][0]
    marker = 1000 * e + 100 * r
    return (float(marker + t0), 10 * r + t0, ret, float(marker + t_last + 1),
            gamma ** len(used), used[-1][2], used[-1][3])  # fmt: skip


@pytest.mark.parametrize("n", [1, 3])
def test_random_sequence_matches_a_plain_reference(n: int) -> None:
    rng = random.Random(n)
    E, R, T = 2, 3, 60
    nstep = NStepTransitions(n, GAMMA)
    alive = [[True] * R for _ in range(E)]
    steps, got = [], []
    for t in range(T):
        active = [[alive[e][r] for r in range(R)] for e in range(E)]
        term = [[active[e][r] and rng.random() < 0.1 for r in range(R)] for e in range(E)]
        trunc = [[active[e][r] and not term[e][r] and rng.random() < 0.05 for r in range(R)]
                 for e in range(E)]  # fmt: skip
        reward = [[float(rng.randint(-4, 4)) for _ in range(R)] for _ in range(E)]
        got += emitted(nstep.push(step_td(t, reward, active, term, trunc)))
        done = [[term[e][r] or trunc[e][r] for r in range(R)] for e in range(E)]
        steps.append({"active": active, "reward": reward, "terminated": term, "done": done})
        for e in range(E):
            for r in range(R):
                alive[e][r] = alive[e][r] and not done[e][r]
            if not any(alive[e]):  # the environment restarts with every robot
                alive[e] = [True] * R
    expected = reference(steps, n, GAMMA)
    assert len(got) > 50
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize("n", [1, 3])
def test_the_priced_term_runs_through_the_window_as_the_reward_does(n: int) -> None:
    """With the term kept apart, each transition's ``("next", PRICED_TERM)`` is the n-step return of
    the term's sequence: what a plain window gives for a reward equal to the term."""
    rng = random.Random(7 + n)
    E, R = 2, 3
    kept = NStepTransitions(n, 0.5, extra_returns=(PRICED_TERM,))
    plain_reward, plain_term = NStepTransitions(n, 0.5), NStepTransitions(n, 0.5)
    alive = [[True] * R for _ in range(E)]
    checked = 0
    for t in range(50):
        active = [[alive[e][r] for r in range(R)] for e in range(E)]
        term = [[active[e][r] and rng.random() < 0.15 for r in range(R)] for e in range(E)]
        reward = [[float(rng.randint(-4, 4)) for _ in range(R)] for _ in range(E)]
        cost = [[float(rng.randint(-3, 0)) for _ in range(R)] for _ in range(E)]
        step = step_td(t, reward, active, term)
        step["next", "agents"].set(PRICED_TERM, torch.tensor(cost).unsqueeze(-1))
        out = kept.push(step)
        want_reward = plain_reward.push(step_td(t, reward, active, term))
        want_term = plain_term.push(step_td(t, cost, active, term))
        assert torch.equal(out["valid"], want_reward["valid"])
        valid = out["valid"]
        assert torch.equal(out["next", "reward"][valid], want_reward["next", "reward"][valid])
        assert torch.equal(out["next", PRICED_TERM][valid], want_term["next", "reward"][valid])
        checked += int(valid.sum())
        for e in range(E):
            for r in range(R):
                alive[e][r] = alive[e][r] and not term[e][r]
            if not any(alive[e]):
                alive[e] = [True] * R
    assert checked > 100


def test_push_makes_no_read_back() -> None:
    nstep = NStepTransitions(3, 0.99)
    steps = [step_td(t, [[1.0, 2.0], [3.0, 4.0]], [[True, t % 2 == 0], [True, True]],
                     terminated=[[t == 4, False], [False, False]]) for t in range(8)]  # fmt: skip
    nstep.push(steps[0])  # allocates the window
    ended = torch.tensor([True, False])  # host data: made before, as the CUDA twin does
    with count_read_backs() as counts:
        for step in steps[1:]:
            nstep.push(step)
        nstep.reset_slots(ended)
    assert sum(counts.values()) == 0, dict(counts)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_push_never_synchronises() -> None:
    nstep = NStepTransitions(3, 0.99)
    steps = [step_td(t, [[1.0, 2.0], [3.0, 4.0]], [[True, t % 2 == 0], [True, True]],
                     terminated=[[t == 4, False], [False, False]]).to("cuda")
             for t in range(8)]  # fmt: skip
    nstep.push(steps[0])
    ended = torch.tensor([True, False], device="cuda")  # a copy from the host: made before
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for step in steps[1:]:
            out = nstep.push(step)
        nstep.reset_slots(ended)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert out["valid"].device.type == "cuda"
