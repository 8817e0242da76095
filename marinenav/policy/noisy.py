"""Factorised-Gaussian noisy layers (Fortunato et al. 2018), the parameter-noise exploration of
Rainbow's streams and of IQN's head with ``agent.noisy=true``.

:class:`NoisyLinear` is TorchRL's ``NoisyLinear`` (its parameters ``weight_mu``, ``weight_sigma``,
``bias_mu``, ``bias_sigma``, its noise buffers ``weight_epsilon``, ``bias_epsilon`` and its
initialisation ``mu ~ U(+-1/sqrt(in))``, ``sigma_w = std/sqrt(in)``, ``sigma_b = std/sqrt(out)``)
with the noise drawn from a given ``torch.Generator`` (``None``: the global random stream) and
switched on or off per call (TorchRL's switches on the exploration type).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torchrl.modules import NoisyLinear as TorchRLNoisyLinear

NOISY_STD = 0.05  # std_init of the noisy layers (Rainbow's, and IQN's with agent.noisy=true)


class NoisyLinear(TorchRLNoisyLinear):
    """TorchRL's factorised-Gaussian ``NoisyLinear`` with the noise drawn from a
    ``torch.Generator`` and switched per call.

    ``forward(x, noise)``: ``noise=True`` uses ``mu + sigma * eps``, ``False`` the mean weights
    ``mu``, ``None`` follows the module's training mode.
    """

    def __init__(self, in_features: int, out_features: int, std_init: float = NOISY_STD) -> None:
        super().__init__(in_features, out_features, std_init=std_init,
                         use_exploration_type=False)  # fmt: skip

    @torch.no_grad()
    def reset_noise(self, generator: torch.Generator | None = None) -> None:
        """Resample ``eps_w = f(e_out) f(e_in)^T`` and ``eps_b = f(e_out)``,
        ``f(x) = sign(x) sqrt|x|``, ``e ~ N(0, 1)`` (in-place: the buffers are made once)."""
        eps_in = self._factor(self.in_features, generator)
        eps_out = self._factor(self.out_features, generator)
        self.weight_epsilon.copy_(torch.outer(eps_out, eps_in))
        self.bias_epsilon.copy_(eps_out)

    def _factor(self, size: int, generator: torch.Generator | None) -> torch.Tensor:
        x = torch.randn(size, generator=generator, device=self.weight_mu.device,
                        dtype=self.weight_mu.dtype)  # fmt: skip
        return x.sign() * x.abs().sqrt()

    def forward(self, x: torch.Tensor, noise: bool | None = None) -> torch.Tensor:
        if noise is None:
            noise = self.training
        if noise:
            weight = self.weight_mu + self.weight_sigma * self.weight_epsilon
            bias = self.bias_mu + self.bias_sigma * self.bias_epsilon
            return F.linear(x, weight, bias)
        return F.linear(x, self.weight_mu, self.bias_mu)


class NoisyStream(nn.Module):
    """Noisy layers with ReLU between them; ``forward(x, noise)`` passes ``noise`` down."""

    def __init__(self, *sizes: int, std_init: float = NOISY_STD) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            NoisyLinear(n_in, n_out, std_init)
            for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True)
        )

    def forward(self, x: torch.Tensor, noise: bool | None = None) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x, noise)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


@torch.no_grad()
def reset_noise(module: nn.Module, generator: torch.Generator | None = None) -> None:
    """Resample the noise of every :class:`NoisyLinear` in ``module``, in module order."""
    for layer in module.modules():
        if isinstance(layer, NoisyLinear):
            layer.reset_noise(generator)


@torch.no_grad()
def reset_online_and_target_noise(
    network: nn.Module, target_params: Any, generator: torch.Generator | None = None
) -> None:
    """Fresh noise for a loss's online ``network``, then for its target network
    (``target_params``: the TorchRL loss's target parameters and buffers, swapped into
    ``network`` for the draw), from ``generator`` (``None``: the global stream): the order every
    update draws in. Nothing, and no draw, when ``network.noisy`` is false."""
    if not network.noisy:
        return
    network.reset_noise(generator)
    with target_params.to_module(network):
        network.reset_noise(generator)


__all__ = [
    "NOISY_STD",
    "NoisyLinear",
    "NoisyStream",
    "reset_noise",
    "reset_online_and_target_noise",
]
