"""Replay of robot transitions on the training device, written without host synchronisation.

Every environment step offers ``E * R`` robot-slot transitions, of which only those of robots
that acted are learning data; how many is known only on the device. TorchRL's writers keep their
cursor on the host, so :class:`RobotReplay` writes through TorchRL's ``LazyTensorStorage``
itself: valid entries go to consecutive ring positions computed with a cumulative sum on the
device, invalid ones to one extra sink row that is never sampled, and the cursor and fill count
are device tensors. Sampling uses TorchRL's ``TensorDictReplayBuffer`` with a sampler that reads
the device fill count (:class:`DeviceUniformSampler`, or the prioritized sampler for Rainbow).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.data.replay_buffers.samplers import Sampler
from torchrl.data.replay_buffers.storages import Storage


class DeviceUniformSampler(Sampler):
    """Uniform indices in ``[0, count)`` where ``count`` is a device tensor (set by
    :class:`RobotReplay`): no host read per sample."""

    def __init__(self) -> None:
        super().__init__()
        self.count: torch.Tensor | None = None
        self.generator: torch.Generator | None = None

    def sample(self, storage: Storage, batch_size: int) -> tuple[torch.Tensor, dict]:
        if self.count is None:
            raise RuntimeError("the replay is empty")
        draw = torch.rand(batch_size, device=self.count.device, generator=self.generator)
        return (draw * self.count).long(), {}

    def _empty(self) -> None:
        return None

    def dumps(self, path) -> None:
        return None

    def loads(self, path) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return None


class RobotReplay:
    """A ring buffer of ``capacity`` robot transitions on ``device``.

    Args:
        capacity: transitions kept (the original: 1e6).
        device: where storage, cursor and counts live.
        batch_size: transitions per sample.
        sampler: a TorchRL ``Sampler`` over ``[0, count)``; default uniform. A sampler with an
            ``extend_masked(index, valid)`` method (prioritized) is told about new entries.
        seed: seed of the uniform sampler's stream.
    """

    def __init__(
        self,
        capacity: int,
        device: torch.device | str,
        batch_size: int,
        sampler: Sampler | None = None,
        seed: int = 0,
    ) -> None:
        if capacity < 1 or batch_size < 1:
            raise ValueError("replay capacity and batch size must be positive")
        self.capacity = capacity
        self.device = torch.device(device)
        self.storage = LazyTensorStorage(capacity + 1, device=self.device)  # + the sink row
        self.sampler = sampler if sampler is not None else DeviceUniformSampler()
        if isinstance(self.sampler, DeviceUniformSampler):
            self.sampler.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.buffer = TensorDictReplayBuffer(
            storage=self.storage, sampler=self.sampler, batch_size=batch_size
        )
        self.cursor = torch.zeros((), dtype=torch.int64, device=self.device)
        self.count = torch.zeros((), dtype=torch.int64, device=self.device)
        if hasattr(self.sampler, "count"):
            self.sampler.count = self.count

    def extend(self, data: TensorDictBase, valid: torch.Tensor) -> None:
        """Append the entries of ``data`` ``[N]`` where ``valid`` ``[N]`` (bool) is true."""
        if not self.storage.initialized:
            self._allocate(data[0])
        valid = valid.to(self.device)
        offset = torch.cumsum(valid.long(), dim=0) - 1
        index = torch.where(valid, (self.cursor + offset) % self.capacity, self.capacity)
        self.storage.set(index, data, set_cursor=False)
        added = valid.sum()
        if hasattr(self.sampler, "extend_masked"):
            self.sampler.extend_masked(index, valid)
        self.cursor.copy_((self.cursor + added) % self.capacity)
        self.count.copy_(torch.clamp(self.count + added, max=self.capacity))

    def _allocate(self, example: TensorDictBase) -> None:
        """Allocate the whole storage once. The storage's own length (a host counter TorchRL
        updates on its writes) is set to full: which rows hold data is ``count``'s business."""
        self.storage._init(example)
        self.storage._len = self.capacity + 1

    def sample(self) -> TensorDict:
        """A batch of transitions (with ``"index"`` and sampler info such as ``_weight``).
        Sample only once stored transitions exist (the learner waits for them,
        ``ReplayLearner.ready``): rows ``[0, count)`` are drawn and the fill count is read on
        the device, so an empty replay could not refuse without a host read."""
        if not self.storage.initialized:  # a host flag: nothing was ever stored
            raise RuntimeError("the replay is empty: store transitions before sampling")
        data, info = self.buffer.sample(return_info=True)
        for key, value in info.items():
            if isinstance(value, torch.Tensor):
                data.set(key, value)
        return data

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Forward new priorities to the sampler (prioritized replay only: TorchRL's base
        sampler warns that it is not prioritized)."""
        self.sampler.update_priority(index, priority)

    def state_dict(self) -> dict[str, Any]:
        """The filled rows, cursor, count and sampler state (for checkpoints).

        Only rows ``[0, count)`` hold data (the ring fills from 0 and sampling never goes past
        ``count``), so only those are saved: a run that has stored 10k transitions writes 10k
        rows, not the whole preallocated capacity. A prioritized sampler's masses beyond
        ``count`` are zero and are trimmed the same way.
        """
        filled = int(self.count)  # host: once per checkpoint write, to size the saved slice
        stored = self.storage._storage[:filled].clone() if self.storage.initialized else None
        sampler = self.sampler.state_dict()
        if "weights" in sampler:
            sampler = {**sampler, "weights": sampler["weights"][:filled].clone()}
        return {
            "storage": stored,
            "cursor": self.cursor.clone(),
            "count": self.count.clone(),
            "sampler": sampler,
            "sampler_generator": (
                self.sampler.generator.get_state()
                if isinstance(self.sampler, DeviceUniformSampler)
                else None
            ),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (also the whole-storage layout of older checkpoints)."""
        if state["storage"] is not None and state["storage"].shape[0] > 0:
            stored = state["storage"].to(self.device)
            if not self.storage.initialized:
                self._allocate(stored[0])
            self.storage._storage[: stored.shape[0]] = stored
        self.cursor.copy_(state["cursor"])
        self.count.copy_(state["count"])
        sampler = state["sampler"]
        if "weights" in sampler and hasattr(self.sampler, "weights"):
            weights = torch.zeros_like(self.sampler.weights)
            saved = sampler["weights"].to(weights.device)
            weights[: saved.shape[0]] = saved
            sampler = {**sampler, "weights": weights}
        self.sampler.load_state_dict(sampler)
        if state.get("sampler_generator") is not None:
            self.sampler.generator.set_state(state["sampler_generator"])
