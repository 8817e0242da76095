"""Shared helpers for the agents' tests: random training batches, per-agent parameters."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from marinenav.training.updater import Updater


def agents_in_the_default_set(names, default: tuple[str, ...]) -> list:
    """``names`` as test parameters, those outside ``default`` marked ``slow``: a check repeated
    per agent runs for a few agents by default (one of each kind it can tell apart) and for
    every agent in the long set (``pytest -m slow``)."""
    unknown = set(default) - set(names)
    assert not unknown, f"not among the parameters: {sorted(unknown)}"
    return [pytest.param(name, marks=() if name in default else pytest.mark.slow) for name in names]


def observation(batch: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A random robot observation batch (robot frame, raw SI-like magnitudes)."""
    return {
        "self_state": torch.randn(batch, 7, generator=generator) * 5,
        "objects": torch.randn(batch, 5, 5, generator=generator) * 5,
        "objects_mask": torch.rand(batch, 5, generator=generator) > 0.4,
    }


def training_batch(batch: int, action_kind: str, seed: int = 0) -> TensorDict:
    """A random flat batch with the keys of ``marinenav.agents.base`` (some terminal, some
    truncated transitions)."""
    gen = torch.Generator().manual_seed(seed)
    if action_kind == "discrete":
        action = torch.randint(0, 25, (batch,), generator=gen)
    else:
        action = torch.rand(batch, 2, generator=gen) * 2 - 1
    terminated = torch.rand(batch, 1, generator=gen) < 0.25
    truncated = (torch.rand(batch, 1, generator=gen) < 0.25) & ~terminated
    nxt = TensorDict(
        {
            **observation(batch, gen),
            "reward": torch.randn(batch, 1, generator=gen),
            "terminated": terminated,
            "done": terminated | truncated,
        },
        batch_size=[batch],
    )
    return TensorDict({**observation(batch, gen), "action": action, "next": nxt}, [batch])


def step_norm_with_plain_sgd(agent, network: torch.nn.Module, group: str, kind: str) -> float:
    """The length of one update's step of ``network`` (parameter group ``group``) with its
    optimiser swapped for SGD with learning rate 1, i.e. the clipped gradient norm."""
    updater = Updater(agent)
    params = list(network.parameters())
    before = [p.detach().clone() for p in params]
    updater.optimizers[group] = torch.optim.SGD(params, lr=1.0)
    updater.update(training_batch(32, kind))
    pairs = zip(params, before, strict=True)
    return float(torch.sqrt(sum(((p.detach() - b) ** 2).sum() for p, b in pairs)))


def assert_terminated_do_not_bootstrap(target_quantiles, action_kind: str) -> None:
    """Quantile targets ``target_quantiles(batch, tau) -> [B, 8]`` equal the reward exactly
    for terminated transitions and bootstrap (differ from it) for truncated ones."""
    batch = training_batch(64, action_kind, seed=1)
    nxt = batch["next"]
    terminated = nxt["terminated"].squeeze(-1)
    truncated = nxt["done"].squeeze(-1) & ~terminated
    assert terminated.any() and truncated.any()
    target = target_quantiles(batch, torch.rand(64, 8))
    reward = nxt["reward"].expand(-1, 8)
    assert torch.equal(target[terminated], reward[terminated])
    assert (target[truncated] != reward[truncated]).all()


def observation_of(td) -> tuple[torch.Tensor, ...]:
    """``(self_state, objects, objects_mask)`` of a flat batch, in network argument order."""
    return tuple(td[key] for key in ("self_state", "objects", "objects_mask"))


def parameter_values(params) -> list[torch.Tensor]:
    """Detached copies of every leaf of a TensorDict of parameters."""
    return [p.detach().clone() for p in params.values(True, True)]


def all_equal(a, b) -> bool:
    """Whether two sequences of tensors are equal element by element."""
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def robot_observations(E: int, R: int, seed: int = 0) -> TensorDict:
    """Random observations in ``MarineNavEnv``'s layout: an ``("agents", ...)`` group
    ``[E, R]`` in a TensorDict ``[E]``."""
    obs = observation(E * R, torch.Generator().manual_seed(seed))
    return TensorDict({"agents": {k: v.reshape(E, R, *v.shape[1:]) for k, v in obs.items()}}, [E])


def planner_observation(rows: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Float64 planner inputs ``(self_state [N, 7], objects [N, 5, 5], mask [N, 5])`` in
    realistic ranges, drawn from ``generator``, as the original's node builds them: ``i % 6``
    objects present in row ``i``, first, the rest zero padded; masks 0/1."""
    f64 = torch.float64

    def uniform(low: float, high: float, *shape: int) -> torch.Tensor:
        return low + (high - low) * torch.rand(*shape, generator=generator, dtype=f64)

    self_state = torch.cat(
        (uniform(-30, 30, rows, 2), uniform(-1, 3, rows, 1), uniform(-1, 1, rows, 2),
         uniform(-500, 1000, rows, 2)), dim=-1,
    )  # fmt: skip
    objects = torch.cat(
        (uniform(-15, 15, rows, 5, 2), uniform(-2, 2, rows, 5, 2), uniform(0.5, 3, rows, 5, 1)),
        dim=-1,
    )
    mask = (torch.arange(5) < (torch.arange(rows) % 6).unsqueeze(-1)).to(f64)
    return self_state, objects * mask.unsqueeze(-1), mask
