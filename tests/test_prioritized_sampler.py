"""``DevicePrioritizedSampler``: proportional sampling frequencies, importance weights, insertion at
the maximum priority, priority updates, use inside TorchRL's ``TensorDictReplayBuffer``, state
round trips, and no host read-back."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer

from marinenav.training.prioritized import DevicePrioritizedSampler
from tests.sync_utils import count_read_backs


def filled_sampler(priorities: torch.Tensor, capacity: int = 64, alpha: float = 0.5, **kw):
    sampler = DevicePrioritizedSampler(capacity, alpha=alpha, beta=0.4, **kw)
    index = torch.arange(priorities.numel())
    sampler.extend(index)
    sampler.update_priority(index, priorities)
    return sampler


def frequencies(sampler: DevicePrioritizedSampler, draws: int, batch: int = 32) -> torch.Tensor:
    counts = torch.zeros(sampler.weights.numel())
    for _ in range(draws // batch):
        index, _ = sampler.sample(None, batch)
        counts += torch.bincount(index, minlength=counts.numel()).float()
    return counts / counts.sum()


def test_block_layout_and_sink() -> None:
    sampler = DevicePrioritizedSampler(100)
    assert sampler.block_size == 8 and sampler.num_blocks == 13  # 13 * 8 >= 100 + sink
    assert sampler.sink == 100
    with pytest.raises(RuntimeError, match="nothing was added"):
        sampler.sample(None, 4)


@pytest.mark.parametrize("block_size", [None, 4, 64])
def test_sampling_frequencies_follow_priority_to_the_alpha(block_size) -> None:
    priorities = torch.tensor([1.0, 4.0, 9.0, 0.25, 16.0, 2.0, 0.0, 7.0, 3.0, 5.0])
    sampler = filled_sampler(priorities, alpha=0.5, block_size=block_size, seed=1)
    mass = (priorities + 1e-8) ** 0.5
    expected = mass / mass.sum()
    observed = frequencies(sampler, 6400)[: priorities.numel()]
    assert torch.allclose(observed, expected, atol=0.015), (observed, expected)
    assert frequencies(sampler, 640)[priorities.numel() :].sum() == 0  # empty slots never drawn


def test_empty_blocks_between_entries_are_skipped() -> None:
    """Entries spread over the storage, with excluded (invalid) slots and empty blocks between."""
    sampler = DevicePrioritizedSampler(256, alpha=1.0, block_size=16, seed=2)
    index = torch.tensor([3, 40, 41, 100, 200, 255, 7])
    valid = torch.tensor([True, True, False, True, True, True, False])
    sampler.extend_masked(index, valid)
    sampler.update_priority(torch.tensor([3, 40, 100, 200, 255]),
                            torch.tensor([1.0, 2.0, 3.0, 4.0, 10.0]))  # fmt: skip
    observed = frequencies(sampler, 6400)
    expected = torch.zeros_like(observed)
    expected[[3, 40, 100, 200, 255]] = torch.tensor([1.0, 2.0, 3.0, 4.0, 10.0]) / 20.0
    assert torch.allclose(observed, expected, atol=0.015)
    assert int(sampler.filled()) == 5


def test_importance_weights_formula() -> None:
    priorities = torch.tensor([1.0, 4.0, 9.0, 16.0, 0.5])
    sampler = filled_sampler(priorities, alpha=0.5)
    index, info = sampler.sample(None, 16)
    mass = (priorities.double() + 1e-8) ** 0.5
    probability = mass[index] / mass.sum()
    weight = (5 * probability) ** -0.4
    torch.testing.assert_close(info["_weight"], (weight / weight.max()).float())
    assert info["_weight"].max() == 1.0


def test_new_entries_get_the_running_maximum_priority() -> None:
    sampler = DevicePrioritizedSampler(32, alpha=0.5)
    sampler.extend(torch.arange(4))
    assert torch.equal(sampler.weights[:4], torch.ones(4))  # the initial maximum is 1
    sampler.update_priority(torch.tensor([0, 1]), torch.tensor([9.0, 0.04]))
    sampler.update_priority(torch.tensor([0]), torch.tensor([0.01]))  # max does not go down
    sampler.extend(torch.tensor([4, 5]))
    torch.testing.assert_close(sampler.weights[4:6], torch.full((2,), (9.0 + 1e-8) ** 0.5))
    torch.testing.assert_close(sampler.default_priority, torch.tensor(9.0))


def test_priority_updates_keep_the_block_sums_exact() -> None:
    gen = torch.Generator().manual_seed(0)
    sampler = DevicePrioritizedSampler(1000, alpha=0.6, seed=3)
    sampler.extend(torch.arange(700))
    for _ in range(50):
        index = torch.randint(0, 1000, (64,), generator=gen)  # duplicates and empty slots
        sampler.update_priority(index, torch.rand(64, generator=gen) * 5)
        sampler.extend_masked(torch.randint(0, 1100, (32,), generator=gen),
                              torch.rand(32, generator=gen) < 0.5)  # fmt: skip
    sums, counts = sampler.block_sums.clone(), sampler.block_counts.clone()
    sampler.rebuild()
    torch.testing.assert_close(sums, sampler.block_sums, rtol=0, atol=1e-12)
    assert torch.equal(counts, sampler.block_counts)
    assert sampler.weights[sampler.sink] == 0  # indices >= capacity went to the sink
    assert int(sampler.filled()) == int((sampler.weights > 0).sum())


def test_duplicate_indices_in_one_update() -> None:
    sampler = filled_sampler(torch.ones(4), alpha=1.0)
    sampler.update_priority(torch.tensor([2, 2, 2]), torch.tensor([5.0, 5.0, 5.0]))
    assert sampler.weights[2] == pytest.approx(5.0)
    assert float(sampler.total()) == pytest.approx(8.0)


def test_inside_a_tensordict_replay_buffer() -> None:
    capacity = 50
    sampler = DevicePrioritizedSampler(capacity, alpha=1.0, beta=0.4, seed=4)
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(capacity), sampler=sampler, batch_size=32,
        priority_key="priority",
    )  # fmt: skip
    data = TensorDict({"x": torch.arange(40.0), "y": torch.zeros(40, 3)}, batch_size=[40])
    index = rb.extend(data)
    assert torch.equal(index, torch.arange(40)) and int(sampler.filled()) == 40
    batch = rb.sample()
    assert set(batch.keys()) >= {"x", "y", "index", "_weight"}
    assert torch.equal(batch["x"], batch["index"].float())  # the data of the sampled slots
    # priorities through the tensordict path: only slot 7 keeps a large priority
    batch.set("priority", torch.full((32,), 1e-6))
    rb.update_tensordict_priority(batch)
    rb.update_priority(torch.tensor([7]), torch.tensor([1000.0]))
    assert (rb.sample()["index"] == 7).float().mean() > 0.5
    # wrap around: the ring overwrites the oldest slots, new entries get the max priority
    rb.extend(TensorDict({"x": torch.arange(40.0, 60.0), "y": torch.zeros(20, 3)}, [20]))
    assert int(sampler.filled()) == capacity
    torch.testing.assert_close(sampler.weights[40:50], torch.full((10,), 1000.0))


def test_state_dict_round_trip(tmp_path) -> None:
    sampler = filled_sampler(torch.tensor([1.0, 2.0, 3.0, 4.0]), capacity=16)
    sampler.sample(None, 8)
    state = sampler.state_dict()
    other = DevicePrioritizedSampler(16, alpha=0.5, beta=0.4, seed=99)
    other.load_state_dict(state)
    assert torch.equal(other.weights, sampler.weights)
    assert torch.equal(other.block_sums, sampler.block_sums)
    assert torch.equal(other.max_weight, sampler.max_weight)
    a, wa = sampler.sample(None, 8)
    b, wb = other.sample(None, 8)
    assert torch.equal(a, b) and torch.equal(wa["_weight"], wb["_weight"])
    sampler.dumps(tmp_path / "sampler")
    third = DevicePrioritizedSampler(16, alpha=0.5, beta=0.4)
    third.loads(tmp_path / "sampler")
    assert torch.equal(third.weights, sampler.weights)
    with pytest.raises(ValueError, match="does not fit"):
        DevicePrioritizedSampler(32).load_state_dict(state)
    sampler._empty()
    assert sampler.total() == 0 and sampler.filled() == 0


def test_sampler_calls_make_no_read_back() -> None:
    sampler = DevicePrioritizedSampler(4096, alpha=0.5, beta=0.4)
    gen = torch.Generator().manual_seed(0)
    sampler.extend(torch.arange(64))  # the host flag "something was added" is set here
    with count_read_backs() as counts:
        for step in range(20):
            sampler.extend(torch.arange(64) + 64 * step)
            sampler.extend_masked(torch.arange(30) + 2000, torch.rand(30, generator=gen) < 0.5)
            index, info = sampler.sample(None, 64)
            sampler.update_priority(index, torch.rand(64, generator=gen))
    assert sum(counts.values()) == 0, dict(counts)


def test_replay_buffer_sample_and_update_make_no_read_back() -> None:
    """TorchRL's TensorDictReplayBuffer around the sampler: sample and priority updates."""
    sampler = DevicePrioritizedSampler(1024, alpha=0.5, beta=0.4)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(1024), sampler=sampler,
                                batch_size=64, priority_key="priority")  # fmt: skip
    rb.extend(TensorDict({"x": torch.arange(512.0)}, batch_size=[512]))
    with count_read_backs() as counts:
        for _ in range(10):
            batch = rb.sample()
            batch.set("priority", torch.rand(64))
            rb.update_tensordict_priority(batch)
            rb.update_priority(batch["index"], batch["priority"])
    assert sum(counts.values()) == 0, dict(counts)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_sampler_never_synchronises() -> None:
    sampler = DevicePrioritizedSampler(100_000, alpha=1.0, beta=0.4, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    sampler.extend(torch.arange(64, device="cuda"))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for step in range(20):
            sampler.extend(torch.arange(64, device="cuda") + 64 * step)
            valid = torch.rand(30, generator=gen, device="cuda") < 0.5
            sampler.extend_masked(torch.arange(30, device="cuda") + 5000, valid)
            index, info = sampler.sample(None, 64)
            sampler.update_priority(index, torch.rand(64, generator=gen, device="cuda"))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert index.device.type == "cuda" and info["_weight"].device.type == "cuda"
