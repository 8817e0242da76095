"""The agents' networks: shared observation encoder, cosine quantile embedding, actor and
critic heads. Every module accepts any leading batch shape ``[...]``.

Observation of one robot (robot frame, raw SI values as in the original: no normalisation):
``self_state [..., 7]``, ``objects [..., 5, 5]`` (nearest first), ``objects_mask [..., 5]``.
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn

from marinenav.policy.noisy import NoisyStream, reset_noise
from marinenav.sim.constants import MAX_OBJECTS, NUM_DISCRETE_ACTIONS, OBJECT_DIM, SELF_STATE_DIM

SELF_FEATURES = 56
OBJECT_FEATURES = 40
FEATURES = SELF_FEATURES + MAX_OBJECTS * OBJECT_FEATURES  # 256
HIDDEN = 128
COSINES = 64  # cosine features cos(pi i tau), i = 0..63
ACTION_DIM = 2


@contextlib.contextmanager
def seeded(seed: int | None):
    """Initialise parameters from ``torch.manual_seed(seed)`` without disturbing the global
    random state (the original seeds every network constructor)."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def squash(x: torch.Tensor) -> torch.Tensor:
    """``(2 / pi) atan(x)``: the original's squashing into ``(-1, 1)``."""
    return (2.0 / math.pi) * torch.atan(x)


# Optional input scales: positions / 10 m, velocities and radii as they are, thrusts / 1000 N.
SELF_STATE_SCALE = (0.1, 0.1, 1.0, 1.0, 1.0, 1e-3, 1e-3)
OBJECT_SCALE = (0.1, 0.1, 1.0, 1.0, 1.0)


class ObservationEncoder(nn.Module):
    """Shared trunk: ``Linear(7, 56)`` + ReLU on the self state, ``Linear(5, 40)`` + ReLU on
    each object slot with shared weights, padded slots zeroed, concatenated in slot order:
    ``[..., 256]``. Not permutation invariant: the slot carries the distance rank.

    ``normalize=True`` multiplies the inputs by fixed scales (``SELF_STATE_SCALE``,
    ``OBJECT_SCALE``) first. The original feeds raw SI values (thrusts up to 1000 N), which
    makes learning slow; the option is off by default and adds no parameters.
    """

    def __init__(self, normalize: bool = False) -> None:
        super().__init__()
        self.self_layer = nn.Linear(SELF_STATE_DIM, SELF_FEATURES)
        self.object_layer = nn.Linear(OBJECT_DIM, OBJECT_FEATURES)
        self.normalize = normalize
        self.register_buffer("self_scale", torch.tensor(SELF_STATE_SCALE))
        self.register_buffer("object_scale", torch.tensor(OBJECT_SCALE))

    def forward(
        self, self_state: torch.Tensor, objects: torch.Tensor, objects_mask: torch.Tensor
    ) -> torch.Tensor:
        if self.normalize:
            self_state = self_state * self.self_scale.to(self_state.dtype)
            objects = objects * self.object_scale.to(objects.dtype)
        own = torch.relu(self.self_layer(self_state))
        slots = torch.relu(self.object_layer(objects))  # [..., 5, 40]
        slots = slots * (objects_mask.unsqueeze(-1) > 0.5).to(slots.dtype)  # ReLU(bias) != 0
        return torch.cat((own, slots.flatten(-2)), dim=-1)


def mlp(*sizes: int, final_activation: bool = False) -> nn.Sequential:
    """``Linear`` layers with ReLU between them."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2 or final_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class CosineEmbedding(nn.Module):
    """Quantile embedding: ``ReLU(Linear(64, 256)(cos(pi i tau)))`` for ``i = 0..63``."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(COSINES, FEATURES)
        self.register_buffer("frequencies", math.pi * torch.arange(COSINES, dtype=torch.float32))

    def forward(self, tau: torch.Tensor) -> torch.Tensor:
        """``tau [..., n]`` in [0, 1] -> ``[..., n, 256]``."""
        cosines = torch.cos(tau.unsqueeze(-1) * self.frequencies.to(tau.dtype))
        return torch.relu(self.layer(cosines))


class QNetwork(nn.Module):
    """DQN: trunk, two hidden layers of 128, 25 Q-values. 53,321 parameters."""

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.head = mlp(FEATURES, HIDDEN, HIDDEN, NUM_DISCRETE_ACTIONS)

    def forward(self, self_state, objects, objects_mask) -> torch.Tensor:
        """Q-values ``[..., 25]``."""
        return self.head(self.encoder(self_state, objects, objects_mask))


class ImplicitQuantileNetwork(nn.Module):
    """IQN: trunk times the cosine embedding of ``tau``, two hidden layers, 25 quantile
    values per ``tau``. 69,961 parameters.

    ``noisy_std`` (default ``None``: plain ``Linear`` layers, the original) makes the head's
    three layers factorised-Gaussian noisy layers of that ``std_init``
    (:class:`~marinenav.policy.noisy.NoisyStream`, as Rainbow's streams; 122,594 parameters,
    ``mu`` and ``sigma``); the encoder and the embedding stay plain.
    """

    def __init__(
        self, seed: int | None = None, normalize: bool = False, noisy_std: float | None = None
    ) -> None:
        super().__init__()
        self.noisy = noisy_std is not None
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.embedding = CosineEmbedding()
            if noisy_std is None:
                self.head = mlp(FEATURES, HIDDEN, HIDDEN, NUM_DISCRETE_ACTIONS)
            else:
                self.head = NoisyStream(
                    FEATURES, HIDDEN, HIDDEN, NUM_DISCRETE_ACTIONS, std_init=noisy_std
                )

    def forward(
        self, self_state, objects, objects_mask, tau: torch.Tensor, noise: bool | None = None
    ) -> torch.Tensor:
        """Quantiles ``[..., n, 25]`` at ``tau [..., n]``; ``noise`` (a noisy head only; see
        :class:`~marinenav.policy.noisy.NoisyLinear`): ``True`` the current noise sample,
        ``False`` the mean weights, ``None`` the module's training mode."""
        features = self.encoder(self_state, objects, objects_mask).unsqueeze(-2)
        embedded = features * self.embedding(tau)
        if self.noisy:
            return self.head(embedded, noise)
        return self.head(embedded)

    @torch.no_grad()
    def reset_noise(self, generator: torch.Generator | None = None) -> None:
        """Resample the noisy head's noise from ``generator`` (``None``: the global stream);
        nothing, and no random draw, without one."""
        reset_noise(self, generator)


class DeterministicActor(nn.Module):
    """AC-IQN and DDPG actor: trunk, two hidden layers, 2 outputs squashed by
    ``(2/pi) atan`` into ``(-1, 1)``. 50,354 parameters."""

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.head = mlp(FEATURES, HIDDEN, HIDDEN, ACTION_DIM)

    def forward(self, self_state, objects, objects_mask) -> torch.Tensor:
        """Action ``[..., 2]`` in (-1, 1)."""
        return squash(self.head(self.encoder(self_state, objects, objects_mask)))


class GaussianActor(nn.Module):
    """SAC actor: trunk, two hidden layers, heads for the mean and the log standard
    deviation (clamped to [-20, 2]) of a Gaussian in the pre-squash space. 50,612 parameters."""

    LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.body = mlp(FEATURES, HIDDEN, HIDDEN, final_activation=True)
            self.mean = nn.Linear(HIDDEN, ACTION_DIM)
            self.log_std = nn.Linear(HIDDEN, ACTION_DIM)

    def forward(self, self_state, objects, objects_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [..., 2], log_std [..., 2])`` of the pre-squash Gaussian."""
        h = self.body(self.encoder(self_state, objects, objects_mask))
        return self.mean(h), self.log_std(h).clamp(self.LOG_STD_MIN, self.LOG_STD_MAX)


class LocScale(nn.Module):
    """``(mean, standard deviation)`` of a Gaussian actor that returns ``(mean, log_std)``
    (SAC's :class:`GaussianActor`, PPO's actor): the ``loc`` and ``scale`` a TorchRL
    ``ProbabilisticActor`` reads. Shares the actor's parameters."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, self_state, objects, objects_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loc [..., 2], scale [..., 2])`` in the pre-squash space."""
        loc, log_std = self.actor(self_state, objects, objects_mask)
        return loc, log_std.exp()


class QCritic(nn.Module):
    """DDPG / SAC critic: ``h = ReLU(Linear(256, 128)(trunk)) * ReLU(Linear(2, 128)(a))``,
    then ``Linear(128, 128)`` + ReLU and ``Linear(128, 1)``. 50,609 parameters."""

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.state_layer = nn.Linear(FEATURES, HIDDEN)
            self.action_layer = nn.Linear(ACTION_DIM, HIDDEN)
            self.head = mlp(HIDDEN, HIDDEN, 1)

    def forward(self, self_state, objects, objects_mask, action) -> torch.Tensor:
        """Q-value ``[..., 1]``."""
        h = torch.relu(self.state_layer(self.encoder(self_state, objects, objects_mask)))
        return self.head(h * torch.relu(self.action_layer(action)))


class QuantileCritic(nn.Module):
    """AC-IQN critic: trunk times the cosine embedding, ``Linear(256, 128)`` + ReLU times the
    action embedding ``ReLU(Linear(2, 128)(a))``, ``Linear(128, 128)`` + ReLU, ``Linear(128, 1)``.
    67,249 parameters."""

    def __init__(self, seed: int | None = None, normalize: bool = False) -> None:
        super().__init__()
        with seeded(seed):
            self.encoder = ObservationEncoder(normalize)
            self.embedding = CosineEmbedding()
            self.state_layer = nn.Linear(FEATURES, HIDDEN)
            self.action_layer = nn.Linear(ACTION_DIM, HIDDEN)
            self.head = mlp(HIDDEN, HIDDEN, 1)

    def forward(self, self_state, objects, objects_mask, action, tau) -> torch.Tensor:
        """Quantiles ``[..., n]`` of the return of ``action [..., 2]`` at ``tau [..., n]``."""
        features = self.encoder(self_state, objects, objects_mask).unsqueeze(-2)
        h = torch.relu(self.state_layer(features * self.embedding(tau)))  # [..., n, 128]
        h = h * torch.relu(self.action_layer(action)).unsqueeze(-2)
        return self.head(h).squeeze(-1)
