"""The quantile-Huber loss shared by IQN and AC-IQN.

For one transition with predicted quantiles ``z_i = Z(s, a; tau_i)`` (``i = 1..N``) and target
samples ``T_j`` (``j = 1..N'``):

* TD matrix ``delta_ij = T_j - z_i``;
* Huber ``L_kappa(d) = d^2 / 2`` if ``|d| <= kappa``, else ``kappa (|d| - kappa / 2)``;
* ``rho_ij = |tau_i - 1{delta_ij < 0}| L_kappa(delta_ij) / kappa``;
* ``loss = sum_i mean_j rho_ij`` (sum over predicted quantiles, mean over target samples).

The agents average the per-transition losses over the batch (optionally weighted by the
importance weights ``_weight`` of a prioritized replay). With ``kappa = 1`` (the original's only
value) ``L_kappa`` is ``|d| - 1/2`` beyond 1.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from marinenav.keys import REWARD, TERMINATED


def quantile_huber_loss(
    pred: torch.Tensor, target: torch.Tensor, tau: torch.Tensor, kappa: float = 1.0
) -> torch.Tensor:
    """Quantile-Huber loss per transition.

    Args:
        pred: predicted quantiles ``z_i`` ``[B, N]`` (carries the gradient).
        target: target samples ``T_j`` ``[B, N']`` (should be detached by the caller).
        tau: quantile fractions of ``pred`` ``[B, N]`` in [0, 1].
        kappa: Huber threshold (> 0).

    Returns:
        ``[B]``: ``sum_i mean_j |tau_i - 1{delta_ij < 0}| L_kappa(delta_ij) / kappa``.
    """
    delta = target.unsqueeze(-2) - pred.unsqueeze(-1)  # [B, N, N']: delta_ij = T_j - z_i
    abs_delta = delta.abs()
    huber = torch.where(abs_delta <= kappa, 0.5 * delta.pow(2), kappa * (abs_delta - 0.5 * kappa))
    weight = (tau.unsqueeze(-1) - (delta.detach() < 0).to(pred.dtype)).abs()  # [B, N, N']
    return (weight * huber / kappa).mean(dim=-1).sum(dim=-1)


def batch_mean(per_sample: torch.Tensor, batch: TensorDictBase) -> torch.Tensor:
    """Mean of ``per_sample [B]`` over the batch, weighted by ``batch["_weight"] [B]`` when the
    batch carries importance weights (a key check, no values read)."""
    weight = batch.get("_weight", None)
    if weight is None:
        return per_sample.mean()
    return (per_sample * weight.reshape(per_sample.shape).to(per_sample.dtype)).mean()


def bootstrap_factor(batch: TensorDictBase, gamma: float) -> torch.Tensor:
    """``discount (1 - terminated)`` as ``[B, 1]``: ``discount`` is ``batch["discount"]`` when
    present (n-step returns), otherwise ``gamma``. Truncated transitions bootstrap."""
    terminated = batch.get(("next", TERMINATED))
    not_terminal = (~terminated.bool()).to(batch.get(("next", REWARD)).dtype)
    discount = batch.get("discount", None)
    if discount is None:
        return gamma * not_terminal
    return discount.to(not_terminal.dtype) * not_terminal
