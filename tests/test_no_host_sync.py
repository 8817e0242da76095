"""No host synchronisation in ``step`` and masked ``reset`` (rule 1 of
docs/architecture.md, "Performance rules and where they are kept").

On CPU we count every call that reads a tensor back to Python; on CUDA we also run under
``torch.cuda.set_sync_debug_mode("error")``, which raises on any synchronising CUDA call.
"""

from __future__ import annotations

import pytest
import torch

from marinenav.sim import MarineNavSimulator
from tests.sync_utils import count_read_backs, take_the_cuda_code_path


def _drive(sim: MarineNavSimulator, steps: int) -> torch.Tensor:
    """Random actions, stepping and resetting finished environments, as a trainer would;
    returns the episodes each environment ended, ``[E]`` int64 (counted on the device)."""
    gen = torch.Generator(device=sim.device).manual_seed(0)
    E, R = sim.num_envs, sim.robot_slots
    ended = torch.zeros(E, dtype=torch.int64, device=sim.device)
    for _ in range(steps):
        if sim.action_kind == "discrete":
            actions = torch.randint(0, 25, (E, R), generator=gen, device=sim.device)
        else:
            actions = torch.rand((E, R, 2), generator=gen, device=sim.device) * 2 - 1
        result = sim.step(actions)
        ended += result.env_done
        sim.reset(result.env_done)
    return ended


def test_counting_catches_a_read_back() -> None:
    with count_read_backs() as counts:
        bool(torch.ones(1) > 0)
        torch.ones(1).item()
    assert counts["__bool__"] == 1 and counts["item"] == 1
    assert sum(counts.values()) == 2  # a read-back's own operators are not counted again


def test_counting_catches_what_waits_on_a_cuda_device() -> None:
    x, mask = torch.arange(6.0), torch.tensor([True, False] * 3)
    counts_of_two, picks = torch.tensor([1, 2]), torch.tensor([0, 2])
    with count_read_backs() as counts:
        x[mask]
        x[mask] = 0.0
        mask.nonzero()
        torch.repeat_interleave(counts_of_two)
        torch.tensor([1.0, -1.0])  # host data: a copy to a CUDA device
        x[[0, 2]]  # so is a Python list as an index
    assert counts["index"] == 0 and counts["aten.index"] == 1
    assert counts["aten.nonzero"] == 1 and counts["aten.repeat_interleave"] == 1
    assert counts["aten.lift_fresh"] == 2
    assert sum(counts.values()) == 6, dict(counts)  # the assignment: index_put_ or masked_fill_
    with count_read_backs() as counts:  # the same work in shapes known before it runs
        torch.where(mask, x, 0.0)
        x.masked_fill(mask, 0.0)
        x[picks]
        torch.repeat_interleave(counts_of_two, output_size=3)
        torch.where(torch.arange(2) < 1, 1.0, -1.0)  # made on the device
        x * torch.tensor(2.0)  # a 0-dim host tensor is a scalar to a CUDA kernel: no copy
    assert sum(counts.values()) == 0, dict(counts)


@pytest.mark.parametrize("action_kind", ["discrete", "continuous"])
def test_step_and_masked_reset_make_no_read_back(action_kind: str) -> None:
    # counted operator by operator (slow): a window as short as still ends four episodes or more
    # in each environment, so that masked resets of some environments are inside it
    sim = MarineNavSimulator(6, action_kind, core_slots=2, validate=False, max_episode_steps=15)
    take_the_cuda_code_path(sim)
    with count_read_backs() as counts:
        ended = _drive(sim, 80)
    assert sum(counts.values()) == 0, dict(counts)
    assert int(sim.curriculum_step) == 6 * 80
    assert (ended >= 4).all(), ended


def test_validation_mode_is_what_reads_back() -> None:
    sim = MarineNavSimulator(2, "continuous", validate=True)
    with count_read_backs() as counts:
        sim.step(torch.zeros(2, 5, 2))
    assert counts["__bool__"] >= 1


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("action_kind", ["discrete", "continuous"])
def test_cuda_step_and_reset_never_synchronise(action_kind: str) -> None:
    sim = MarineNavSimulator(
        64, action_kind, core_slots=2, device="cuda", validate=False, max_episode_steps=40
    )
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _drive(sim, 200)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert int(sim.curriculum_step) == 64 * 200
