"""The acting network's weights averaged over the end of a run (stochastic weight averaging).

A run's last network is one draw from the wandering of the last updates: two checkpoints a few
thousand updates apart can differ by 0.1 in success rate (docs/results.md, the fifteen-minute
candidates). The uniform average of the acting network's weights over the last part of
the run (SWA, Izmailov et al. 2018; in deep RL, Nikishin et al. 2018, "Improving stability in
deep reinforcement learning with weight averaging") is that run's planner instead. With
``training.policy_average_start=S`` (a fraction of ``training.total_timesteps``), the trainer
adds the acting network (``agent.policy.selector``: the actor, or the Q network of a value
agent) to the average every ``training.policy_average_interval`` timesteps from timestep
``S * total_timesteps`` on; once it holds one sample, every evaluation, best / evaluated
snapshot and the final checkpoint's planner is the average (:func:`averaged_network_state`,
read by ``marinenav.training.checkpoint.load_agent``, so ``marinenav.evaluate`` and
``marinenav.export`` use it). Learning is unchanged: the critic and the updates still see the
online network, which the checkpoint keeps for a resume.

The average is PyTorch's own: :class:`torch.optim.swa_utils.AveragedModel`
(equal weights; the network's buffers are copied, not averaged). Its update reads its sample
count on the host, once per averaging interval (a host sync on an accelerator; a few per
hundred thousand timesteps).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

from marinenav.training.config import crossed

# the checkpoint entry holding the average (absent: the run averages nothing)
AVERAGE_KEY = "policy_average"


class PolicyAverage:
    """The uniform average of ``network``'s parameters, sampled every ``interval`` timesteps
    from timestep ``start`` on.

    Args:
        network: the acting network (its parameters are read, never written, except inside
            :meth:`acting`).
        start: first timestep whose network joins the average (host int, >= 0).
        interval: timesteps between samples (host int, > 0).
    """

    def __init__(self, network: nn.Module, start: int, interval: int) -> None:
        if start < 0 or interval <= 0:
            raise ValueError(f"policy average: start must be >= 0 and interval > 0, "
                             f"got start={start}, interval={interval}")  # fmt: skip
        self.network = network
        self.start, self.interval = start, interval
        self.average = AveragedModel(network, use_buffers=False)
        self.samples = 0  # host count of the networks in the average

    def due(self, before: int, after: int) -> bool:
        """Whether a sample is due for a batched step from timestep ``before`` to ``after``:
        a multiple of ``interval`` past ``start`` (``start`` itself included) lies in
        ``(before, after]``: the trainer's schedule rule,
        :func:`~marinenav.training.config.crossed`."""
        return crossed(before, after, self.interval, self.start)

    def observe(self, before: int, after: int) -> None:
        """Add the network as it is now when a sample is due (see :meth:`due`)."""
        if self.due(before, after):
            self.sample()

    def sample(self) -> None:
        """Add the network, as its weights are now, to the average."""
        # host: AveragedModel reads its sample count, once per averaging interval
        self.average.update_parameters(self.network)
        self.samples += 1

    @contextmanager
    def acting(self) -> Iterator[None]:
        """Within the block the network holds the averaged weights (nothing changes before
        the first sample); its own weights are put back after it, also on an exception."""
        if self.samples == 0:
            yield
            return
        parameters = list(self.network.parameters())
        own = [p.detach().clone() for p in parameters]
        with torch.no_grad():
            for p, averaged in zip(parameters, self.average.module.parameters(), strict=True):
                p.copy_(averaged)
        try:
            yield
        finally:
            with torch.no_grad():
                for p, kept in zip(parameters, own, strict=True):
                    p.copy_(kept)

    def state_dict(self) -> dict[str, Any]:
        """``{"samples": n, "network": the averaged network's state dict}`` (a checkpoint's
        :data:`AVERAGE_KEY` entry)."""
        return {"samples": self.samples, "network": self.average.module.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.average.module.load_state_dict(state["network"])
        self.samples = int(state["samples"])
        self.average.n_averaged.fill_(self.samples)


def averaged_network_state(state: dict[str, Any]) -> dict[str, Any] | None:
    """The averaged acting network's state dict a checkpoint ``state`` carries, or ``None``
    (no average, or one that holds no sample yet: the online network is the planner)."""
    average = state.get(AVERAGE_KEY)
    if average is None or average["samples"] == 0:
        return None
    return average["network"]
