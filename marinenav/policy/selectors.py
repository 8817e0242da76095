"""Action selectors: how each kind of agent turns a flat batch of observations into actions.

A selector is an ``nn.Module`` called as
``selector(self_state [N, 7], objects [N, 5, 5], objects_mask [N, 5], *, explore, cvar [N],
generator)`` and returns int64 indices ``[N]`` or continuous actions ``[N, 2]``. It holds
references to the agent's online networks (shared parameters, nothing copied). Random numbers
(quantile fractions, policy noise) come from ``generator``, in flat batch order.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from torch import nn

from marinenav.policy.networks import (
    DeterministicActor,
    GaussianActor,
    ImplicitQuantileNetwork,
    QNetwork,
    squash,
)


class ActionSelector(nn.Module):
    """Base class; subclasses set ``action_kind`` and implement ``forward``."""

    action_kind: ClassVar[Literal["discrete", "continuous"]]
    # whether the selector reads its ``cvar`` level (one acting on a return distribution)
    acts_on_cvar: ClassVar[bool] = False

    def forward(
        self,
        self_state: torch.Tensor,
        objects: torch.Tensor,
        objects_mask: torch.Tensor,
        *,
        explore: bool,
        cvar: torch.Tensor,
        generator: torch.Generator,
    ) -> torch.Tensor:
        raise NotImplementedError


class DeterministicSelector(ActionSelector):
    """``mu(s)`` of a deterministic actor (AC-IQN, DDPG); exploration is epsilon-uniform only."""

    action_kind = "continuous"

    def __init__(self, actor: DeterministicActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, self_state, objects, objects_mask, *, explore, cvar, generator):
        return self.actor(self_state, objects, objects_mask)


class GaussianSelector(ActionSelector):
    """SAC: ``(2/pi) atan(z)`` with ``z ~ N(mu, sigma)`` when exploring, ``z = mu`` otherwise.

    Deviation: the original samples at evaluation too (docs/training.md, "Deviations from the
    original trainer and agents"); evaluation here is the
    deterministic mean action, the standard choice.
    """

    action_kind = "continuous"

    def __init__(self, actor: GaussianActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, self_state, objects, objects_mask, *, explore, cvar, generator):
        mean, log_std = self.actor(self_state, objects, objects_mask)
        if explore:
            noise = torch.randn(mean.shape, generator=generator, device=mean.device,
                                dtype=mean.dtype)  # fmt: skip
            mean = mean + log_std.exp() * noise
        return squash(mean)


class GreedyQSelector(ActionSelector):
    """``argmax_a Q(s, a)`` (DQN)."""

    action_kind = "discrete"

    def __init__(self, network: QNetwork) -> None:
        super().__init__()
        self.network = network

    def forward(self, self_state, objects, objects_mask, *, explore, cvar, generator):
        return self.network(self_state, objects, objects_mask).argmax(dim=-1)


class QuantileSelector(ActionSelector):
    """IQN: ``argmax_a`` of the mean over ``num_tau`` quantiles at ``tau ~ U(0, cvar)``.

    ``cvar = 1`` is risk neutral (the original always uses 1); a smaller level averages only the
    lower tail, a risk-averse choice (CVaR). A noisy head (``agent.noisy=true``) explores as
    Rainbow's streams do: exploring, its noise is resampled from ``generator`` at every call (one
    sample for the whole batch) and the noisy weights are used; otherwise the mean weights.
    """

    action_kind = "discrete"
    acts_on_cvar = True

    def __init__(self, network: ImplicitQuantileNetwork, num_tau: int = 32) -> None:
        super().__init__()
        self.network = network
        self.num_tau = num_tau
        self.noisy = bool(getattr(network, "noisy", False))  # a noisy head: noise per call

    def forward(self, self_state, objects, objects_mask, *, explore, cvar, generator):
        noise = {}
        if self.noisy:  # one noise sample for the batch, drawn before the fractions
            if explore:
                self.network.reset_noise(generator)
            noise["noise"] = bool(explore)
        n = self_state.shape[0]
        tau = torch.rand((n, self.num_tau), generator=generator, device=self_state.device,
                         dtype=self_state.dtype)  # fmt: skip
        tau = tau * cvar.to(tau.dtype).unsqueeze(-1)
        quantiles = self.network(self_state, objects, objects_mask, tau, **noise)  # [N, K, 25]
        return quantiles.mean(dim=-2).argmax(dim=-1)
