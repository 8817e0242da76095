"""Proportional prioritized replay sampling on the device, in plain torch (Rainbow's replay).

TorchRL's ``PrioritizedSampler`` keeps its sum / min trees in a C++ extension that does not load
with our torch, and it reads values back to the host on every CPU sample. This sampler keeps
everything in tensors on one device and never reads back:

* ``weights [L]``: the sampling mass ``(priority + eps) ** alpha`` of every storage slot
  (``L >= capacity + 1`` after padding to whole blocks); 0 marks an empty or excluded slot, so
  the number of filled slots ``N`` is known on the device without asking the storage (whose
  length TorchRL tracks on the host, and which a device-side writer may not update). Slot
  ``capacity`` is a sink that always has mass 0: indices at or beyond the capacity (the sink row
  of ``marinenav.training.replay``) or negative are written there.
* a two-level sum "tree": ``block_sums [L / block]`` (float64) and ``block_counts`` of the
  non-empty slots per block of ``block`` consecutive slots (``block ~ sqrt(capacity)``, a power of
  two). Writes update them by the difference between the new and the old mass of each distinct
  written slot (duplicates resolved with a sort; no ``unique``, no boolean indexing). Float32
  masses summed in float64 are exact for any realistic spread of priorities, so the sums do not
  drift and do not depend on the order of the atomic additions (:meth:`rebuild` recomputes them
  anyway, after loading a state).
* ``sample(storage, k)``: stratified, as the original: ``k`` equal segments of the total mass,
  one uniform draw per segment ``u_j = (j + U_j) / k * total``; the block is found with
  ``searchsorted`` on the cumulative block sums, the slot with ``searchsorted`` on the
  cumulative sums of the ``k`` chosen blocks (``k x block`` values), both clamped to non-empty
  slots (rounding at segment edges can never pick an empty slot). Cost ``O(L / block + k block)``.
* importance weights ``w_i = (N P(i)) ** -beta`` divided by the batch maximum (the original's
  normalisation), ``P(i) = mass_i / total``, returned in the info dict as ``"_weight"`` ``[k]``.
* new entries get the current maximum mass (initially 1): the running maximum of every mass
  given by :meth:`update_priority`, as the original's sum tree.

Use with TorchRL: ``TensorDictReplayBuffer(storage=LazyTensorStorage(capacity, device=d),
sampler=DevicePrioritizedSampler(capacity, alpha, beta, device=d))``; ``rb.extend`` calls
:meth:`extend`, ``rb.sample()`` returns ``"index"`` and ``"_weight"``, ``rb.update_priority(index,
priority)`` and ``rb.update_tensordict_priority(td)`` call :meth:`update_priority` (the class is
registered as a virtual subclass of TorchRL's ``PrioritizedSampler`` for the latter's
``isinstance`` test; it shares no code with it). Device writers that know only on the device
which rows are real call :meth:`extend_masked`.

Exponents: the mass is ``(priority + eps) ** alpha``, default ``alpha = 1``: priorities are used
as given. Rainbow's ``update()`` already returns ``loss ** priority_exponent`` (the original's
stored mass ``loss ** 0.5``), so keep ``alpha = 1`` for it; ``alpha = 0.5`` on top would sample
by ``loss ** 0.25``. Feeding raw losses instead, use ``alpha = 0.5``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torchrl.data.replay_buffers.samplers import PrioritizedSampler, Sampler
from torchrl.data.replay_buffers.storages import Storage

from marinenav.files import write_with

STATE_FILE = "device_prioritized_sampler.pt"


class DevicePrioritizedSampler(Sampler):
    """Proportional prioritized sampling with stratified segments, all on ``device``.

    Args:
        max_capacity: storage slots ``0 .. max_capacity - 1`` (the replay capacity).
        alpha: priority exponent: the sampling mass is ``(priority + eps) ** alpha`` (default
            1: Rainbow's priorities already carry their exponent).
        beta: importance-sampling exponent (settable, e.g. for annealing; the original: 0.4).
        eps: added to priorities so that a zero priority keeps a positive mass.
        device: where the masses live (the storage's device).
        seed: seed of the sampler's own random stream (used unless the replay buffer set a
            generator on the same device with ``set_rng``).
        block_size: slots per block of the two-level sum tree (default: the power of two
            nearest ``sqrt(max_capacity)``).
    """

    reduction = "max"  # how TensorDictReplayBuffer reduces a multi-dim priority entry

    def __init__(
        self,
        max_capacity: int,
        alpha: float = 1.0,
        beta: float = 0.4,
        *,
        eps: float = 1e-8,
        device: torch.device | str = "cpu",
        seed: int = 0,
        block_size: int | None = None,
    ) -> None:
        if max_capacity < 1:
            raise ValueError(f"max_capacity must be positive, got {max_capacity}")
        if alpha < 0 or beta < 0 or eps <= 0:
            raise ValueError("need alpha >= 0, beta >= 0 and eps > 0")
        self._max_capacity = int(max_capacity)
        self._alpha = float(alpha)
        self.beta = float(beta)
        self._eps = float(eps)
        self.device = torch.device(device)
        if block_size is None:
            block_size = 2 ** max(0, round(math.log2(math.sqrt(max_capacity + 1))))
        self.block_size = int(block_size)
        self.num_blocks = -(-(self._max_capacity + 1) // self.block_size)  # + the sink slot
        size = self.num_blocks * self.block_size
        self.sum_dtype = torch.float64
        self.weights = torch.zeros(size, dtype=torch.float32, device=self.device)
        self.block_sums = torch.zeros(self.num_blocks, dtype=self.sum_dtype, device=self.device)
        self.block_counts = torch.zeros(self.num_blocks, dtype=torch.int64, device=self.device)
        self.max_weight = torch.ones((), dtype=torch.float32, device=self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self._block_range = torch.arange(self.num_blocks, device=self.device)
        self._slot_range = torch.arange(self.block_size, device=self.device)
        self._strata: dict[int, torch.Tensor] = {}  # batch size -> arange(k), made once each
        self._written = False  # host-side flag: anything extended since the last _empty

    # ------------------------------------------------------------------ properties
    @property
    def alpha(self) -> float:
        return self._alpha

    @property
    def max_capacity(self) -> int:
        return self._max_capacity

    @property
    def sink(self) -> int:
        """The slot that absorbs out-of-range indices (``max_capacity``); its mass stays 0."""
        return self._max_capacity

    @property
    def default_priority(self) -> torch.Tensor:
        """The priority whose mass is the current maximum (what new entries get)."""
        if self._alpha == 0:
            return torch.ones((), device=self.device)
        return (self.max_weight ** (1.0 / self._alpha) - self._eps).clamp(min=0.0)

    def filled(self) -> torch.Tensor:
        """Number of slots with a positive mass, ``N`` (a 0-dim device tensor)."""
        return self.block_counts.sum()

    def total(self) -> torch.Tensor:
        """Total sampling mass (a 0-dim float64 device tensor)."""
        return self.block_sums.sum()

    # ------------------------------------------------------------------ writes
    def _write(self, index: torch.Tensor, weight: torch.Tensor) -> None:
        """Set the masses of ``index [k]`` to ``weight [k]`` and update the block sums."""
        index = torch.as_tensor(index, device=self.device).reshape(-1).long()
        weight = torch.as_tensor(weight, device=self.device, dtype=torch.float32)
        weight = weight.reshape(-1).expand(index.shape[0])
        outside = (index < 0) | (index >= self._max_capacity)
        index = torch.where(outside, self._max_capacity, index)
        weight = torch.where(outside, 0.0, weight)
        ordered = torch.sort(index).values
        old = self.weights[ordered]
        self.weights.index_put_((index,), weight)  # duplicates: one of them wins
        new = self.weights[ordered]
        first = torch.cat((ordered.new_ones(1, dtype=torch.bool), ordered[1:] != ordered[:-1]))
        delta = torch.where(first, new.to(self.sum_dtype) - old.to(self.sum_dtype), 0.0)
        counted = torch.where(first, (new > 0).long() - (old > 0).long(), 0)
        blocks = torch.div(ordered, self.block_size, rounding_mode="floor")
        self.block_sums.index_add_(0, blocks, delta)
        self.block_counts.index_add_(0, blocks, counted)

    def extend(self, index: torch.Tensor) -> None:
        """New entries at ``index [k]`` get the current maximum mass."""
        self._written = True
        index = torch.as_tensor(index, device=self.device)
        self._write(index, self.max_weight)

    def add(self, index: int | torch.Tensor) -> None:
        self.extend(torch.as_tensor(index).reshape(1))

    def extend_masked(self, index: torch.Tensor, valid: torch.Tensor) -> None:
        """Entries at ``index [k]`` where ``valid [k]`` get the maximum mass; the others get
        mass 0 (never sampled; their slot counts as empty). Indices at or beyond the capacity
        go to the sink."""
        self._written = True
        valid = torch.as_tensor(valid, device=self.device).reshape(-1)
        self._write(index, torch.where(valid, self.max_weight, 0.0))

    @torch.no_grad()
    def update_priority(
        self,
        index: int | torch.Tensor,
        priority: float | torch.Tensor,
        *,
        storage: Storage | None = None,
    ) -> None:
        """Set the priorities of ``index [k]`` (``priority``: ``[k]``, ``[k, 1]`` or a scalar);
        the mass is ``(priority + eps) ** alpha`` and raises the running maximum."""
        index = torch.as_tensor(index, device=self.device).reshape(-1)
        priority = torch.as_tensor(priority, device=self.device).detach().to(torch.float32)
        priority = priority.reshape(-1) if priority.numel() == index.numel() else priority
        weight = (priority.clamp(min=0.0) + self._eps) ** self._alpha
        weight = weight.reshape(-1).expand(index.shape[0])
        self.max_weight.copy_(torch.maximum(self.max_weight, weight.max()))
        self._write(index, weight)

    def rebuild(self) -> None:
        """Recompute the block sums and counts from the masses (``O(L)``)."""
        rows = self.weights.view(self.num_blocks, self.block_size)
        self.block_sums.copy_(rows.to(self.sum_dtype).sum(dim=-1))
        self.block_counts.copy_((rows > 0).sum(dim=-1))

    # ------------------------------------------------------------------ sampling
    def _random(self) -> torch.Generator:
        rng = self._rng
        if rng is not None and torch.device(rng.device) == self.device:
            return rng
        return self.generator

    def sample(self, storage: Storage | None, batch_size: int) -> tuple[torch.Tensor, dict]:
        """``batch_size`` indices ``[k]`` (int64, on ``device``) and ``{"_weight": [k]}``."""
        if not self._written:
            raise RuntimeError("cannot sample: nothing was added to the sampler")
        k = int(batch_size)
        strata = self._strata.get(k)
        if strata is None:
            strata = self._strata[k] = torch.arange(k, device=self.device, dtype=self.sum_dtype)
        sums = self.block_sums
        cumulative = sums.cumsum(0)
        total = cumulative[-1]
        draw = torch.rand(k, generator=self._random(), device=self.device, dtype=self.sum_dtype)
        target = (strata + draw) * (total / k)  # one point per segment of the total mass

        occupied = sums > 0
        first = torch.where(occupied, self._block_range, self.num_blocks).min()
        last = torch.where(occupied, self._block_range, -1).max()
        block = torch.searchsorted(cumulative, target, right=True)
        block = torch.minimum(torch.maximum(block, first), last)
        residual = target - (cumulative[block] - sums[block])

        rows = self.weights.view(self.num_blocks, self.block_size)[block]  # [k, block]
        inner = rows.to(self.sum_dtype).cumsum(dim=-1)
        slot = torch.searchsorted(inner, residual.unsqueeze(-1), right=True).squeeze(-1)
        positive = rows > 0
        lo = torch.where(positive, self._slot_range, self.block_size).min(dim=-1).values
        hi = torch.where(positive, self._slot_range, -1).max(dim=-1).values
        slot = torch.minimum(torch.maximum(slot, lo), hi)
        index = block * self.block_size + slot

        probability = self.weights[index].to(self.sum_dtype) / total
        weight = (self.filled().to(self.sum_dtype) * probability) ** (-self.beta)
        weight = weight / weight.max()
        return index, {"_weight": weight.to(torch.float32)}

    # ------------------------------------------------------------------ state
    def _empty(self) -> None:
        self.weights.zero_()
        self.block_sums.zero_()
        self.block_counts.zero_()
        self.max_weight.fill_(1.0)
        self._written = False

    def state_dict(self) -> dict[str, Any]:
        return {
            "max_capacity": self._max_capacity,
            "block_size": self.block_size,
            "alpha": self._alpha,
            "beta": self.beta,
            "eps": self._eps,
            "weights": self.weights.clone(),
            "max_weight": self.max_weight.clone(),
            "written": self._written,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if (state_dict["max_capacity"], state_dict["block_size"]) != (
            self._max_capacity,
            self.block_size,
        ):
            raise ValueError(
                "sampler state of capacity / block size "
                f"{state_dict['max_capacity']} / {state_dict['block_size']} does not fit "
                f"{self._max_capacity} / {self.block_size}"
            )
        self._alpha = float(state_dict["alpha"])
        self.beta = float(state_dict["beta"])
        self._eps = float(state_dict["eps"])
        self.weights.copy_(state_dict["weights"])
        self.max_weight.copy_(state_dict["max_weight"])
        self._written = bool(state_dict["written"])
        self.generator.set_state(state_dict["generator"])
        self.rebuild()

    def dumps(self, path) -> None:
        state = self.state_dict()
        write_with(Path(path) / STATE_FILE, lambda f: torch.save(state, f))

    def loads(self, path) -> None:
        state = torch.load(Path(path) / STATE_FILE, map_location=self.device, weights_only=False)
        self.load_state_dict(state)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_capacity={self._max_capacity}, alpha={self._alpha}, "
            f"beta={self.beta}, eps={self._eps}, device={self.device})"
        )


# TensorDictReplayBuffer.update_tensordict_priority only forwards priorities to samplers that
# pass ``isinstance(sampler, PrioritizedSampler)``; register ours (ABC virtual subclass).
PrioritizedSampler.register(DevicePrioritizedSampler)
