"""``PolicyWrapper``: a batched acting module for any TorchRL environment.

It wraps one acting network and an action spec, and writes an action into a TensorDict of any
batch shape (unbatched ``[]``, ``[B]``, multi-agent ``[E, R]``), on the data's device, with
epsilon-greedy exploration drawn inside the spec. The network can be

* any ``nn.Module``: called on the tensors at ``in_keys`` (default ``["observation"]``); its
  output ``[*batch, F]`` becomes an action through a head built from the action spec
  (:class:`~marinenav.policy.action_space.ActionSpace`: argmax of ``n`` logits for
  ``Categorical`` / ``OneHot``, ``tanh`` squashed into ``[low, high]`` for ``Bounded``);
* a ``TensorDictModule`` (any ``TensorDictModuleBase``): called on the TensorDict, it writes
  the action at ``out_key`` itself (a stochastic actor samples as TorchRL's exploration type
  says); the wrapper adds epsilon-greedy on top;
* an :class:`~marinenav.policy.selectors.ActionSelector` (marinenav's agents, the preset): reads
  ``(self_state [..., 7], objects [..., 5, 5], objects_mask [..., 5])`` at the ``("agents",
  ...)`` keys of ``MarineNavEnv`` and an optional CVaR level, and acts in marinenav's spec (25
  indices, or a box ``[-1, 1]^2``) unless another is given.

Exploration: with probability ``epsilon`` (a tensor buffer) per batch element the action is
replaced by a uniform draw inside the spec, with one ``rand < epsilon`` mask and
``torch.where``: no ``item()`` read-back, no Python branch on tensor values, no loop. Actions
explore when TorchRL's exploration type is ``RANDOM``, or, outside any ``set_exploration_type``
context, when the module is in training mode (``policy.train()``); evaluation is deterministic
(``policy.eval()`` or ``set_exploration_type(ExplorationType.DETERMINISTIC)``).

Random numbers come from the wrapper's own ``torch.Generator`` on the batch's device, drawn in
the flattened batch order, so the same inputs and seed give the same actions whether the batch
is ``[E, R]`` or flattened to ``[E * R]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import nn
from torchrl.data import Bounded, Categorical, TensorSpec
from torchrl.envs.utils import ExplorationType, exploration_type

from marinenav.keys import ACTION_KEY, POLICY_IN_KEYS
from marinenav.policy.action_space import ActionSpace
from marinenav.policy.selectors import ActionSelector
from marinenav.sim.constants import NUM_DISCRETE_ACTIONS


def marinenav_action_spec(action_kind: Literal["discrete", "continuous"]) -> TensorSpec:
    """One robot's action spec in ``MarineNavEnv``: an index ``0..24`` or a box ``[-1, 1]^2``
    (docs/simulator.md, "The model in equations")."""
    if action_kind == "discrete":
        return Categorical(NUM_DISCRETE_ACTIONS, shape=(), dtype=torch.int64)
    return Bounded(-1.0, 1.0, shape=(2,), dtype=torch.float32)


def check_epsilon(value: float) -> None:
    """An exploration rate is a probability: ``ValueError`` outside [0, 1] (NaN included)."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {value}")


def check_cvar(value: float) -> None:
    """A CVaR level is a positive fraction: ``ValueError`` outside (0, 1] (NaN included)."""
    if not 0.0 < value <= 1.0:
        raise ValueError(f"cvar must be in (0, 1], got {value}")


class PolicyWrapper(TensorDictModuleBase):
    """Acting module: observations in, actions out, for a batch of any shape.

    Args:
        selector: the acting network: an ``nn.Module``, a ``TensorDictModuleBase`` or an
            ``ActionSelector`` (see the module docstring). Kept under this name for every kind.
        action_spec: the action spec: ``env.full_action_spec`` (or ``env.action_spec`` of an
            unbatched env), a ``Composite`` holding one ``Categorical`` / ``OneHot`` /
            ``Bounded`` leaf (multi-agent groups included), or the leaf of one unbatched action.
            Default: marinenav's spec for an ``ActionSelector``; required otherwise.
        in_keys: the network's inputs: default ``["observation"]`` for a plain module,
            ``module.in_keys`` for a TensorDict module, the ``("agents", ...)`` keys of
            ``MarineNavEnv`` for a selector (three keys: self state, objects, object mask).
        out_key: where the action goes; default the leaf's key in a ``Composite`` spec,
            ``"action"`` for a leaf spec, ``("agents", "action")`` for a selector.
        cvar_key: selectors only: optional key of a CVaR level ``[...]`` in (0, 1]
            (risk-sensitive IQN acting); absent entries use the wrapper's level (1.0;
            :meth:`set_cvar`).
        epsilon: initial exploration rate in [0, 1] (a buffer; change it with
            :meth:`set_epsilon`).
        seed: seed of the wrapper's random stream.
    """

    def __init__(
        self,
        selector: nn.Module,
        action_spec: TensorSpec | None = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey | None = None,
        cvar_key: NestedKey | None = "cvar",
        epsilon: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        is_selector = isinstance(selector, ActionSelector)
        if action_spec is None:
            if not is_selector:
                raise ValueError("give the action spec (e.g. env.full_action_spec)")
            action_spec = marinenav_action_spec(selector.action_kind)
            out_key = ACTION_KEY if out_key is None else out_key
        self.space = ActionSpace(action_spec, out_key)
        out_key = self.space.key if out_key is None else out_key
        if isinstance(selector, TensorDictModuleBase):
            in_keys = list(selector.in_keys) if in_keys is None else list(in_keys)
            out_keys = [*(k for k in selector.out_keys if k != out_key), out_key]
        else:
            default = POLICY_IN_KEYS if is_selector else ("observation",)
            in_keys = list(default if in_keys is None else in_keys)
            out_keys = [out_key]
        if is_selector and len(in_keys) != 3:
            raise ValueError("a selector's in_keys must name (self_state, objects, objects_mask)")
        self.selector = selector
        self.in_keys = in_keys
        self.out_keys = out_keys
        self.action_key = out_key
        self.cvar_key = cvar_key
        check_epsilon(epsilon)
        self.register_buffer("epsilon", torch.tensor(float(epsilon)))
        self.register_buffer("cvar", torch.tensor(1.0))
        # the level while exploring (collection); set with the other by set_cvar, not saved
        self.register_buffer("explore_cvar", torch.tensor(1.0), persistent=False)
        self.seed = seed
        self._generators: dict[torch.device, torch.Generator] = {}

    @property
    def action_kind(self) -> Literal["discrete", "continuous"]:
        return "discrete" if self.space.discrete else "continuous"

    def set_epsilon(self, value: float | torch.Tensor) -> None:
        """Change the exploration rate in place (no recompilation, no host read). A Python
        number must be in [0, 1] (checked on the host, free); a tensor is copied unread (the
        caller keeps it in range)."""
        if isinstance(value, torch.Tensor):
            self.epsilon.copy_(value)
        else:
            check_epsilon(value)
            self.epsilon.fill_(value)

    def set_cvar(self, level: float, *, exploring: float | None = None) -> None:
        """Change the CVaR level a selector acts at when the input has no ``cvar_key`` entry
        (quantile selectors draw ``tau ~ U(0, level)``; 1 is risk neutral), in place.

        Args:
            level: the level of greedy acting (evaluation, deployment), in (0, 1].
            exploring: the level while exploring (training's collection, where
                :meth:`exploring` is true), in (0, 1]; ``None``: ``level``. Not part of the
                state dict: the owner sets it from its config.
        Both are checked on the host.
        """
        exploring = level if exploring is None else exploring
        check_cvar(level)
        check_cvar(exploring)
        self.cvar.fill_(level)
        self.explore_cvar.fill_(exploring)

    def set_seed(self, seed: int) -> None:
        """Restart the random stream on every device."""
        self.seed = seed
        for generator in self._generators.values():
            generator.manual_seed(seed)

    def generator(self, device: torch.device) -> torch.Generator:
        """The wrapper's random stream on ``device`` (made once per device)."""
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[device]

    def exploring(self) -> bool:
        """Whether actions are exploratory now (see the module docstring)."""
        mode = exploration_type()
        if mode is None:
            return self.training
        return mode == ExplorationType.RANDOM

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        explore = self.exploring()
        with torch.no_grad():
            if isinstance(self.selector, ActionSelector):
                action = self._select(tensordict, explore)
            elif isinstance(self.selector, TensorDictModuleBase):
                action = self.selector(tensordict).get(self.action_key)
            else:
                inputs = [tensordict.get(key) for key in self.in_keys]
                action = self.space.head(self.selector(*inputs))
            if explore:
                action = self._epsilon_greedy(action)
        tensordict.set(self.action_key, action)
        return tensordict

    def _select(self, tensordict: TensorDictBase, explore: bool) -> torch.Tensor:
        """A selector's action ``[*batch, *event]`` from the flattened observations ``[N, ...]``."""
        self_state = tensordict.get(self.in_keys[0])
        objects = tensordict.get(self.in_keys[1])
        objects_mask = tensordict.get(self.in_keys[2])
        batch = self_state.shape[:-1]
        flat = (
            self_state.reshape(-1, self_state.shape[-1]),
            objects.reshape(-1, *objects.shape[-2:]),
            objects_mask.reshape(-1, objects_mask.shape[-1]),
        )
        n = flat[0].shape[0]
        cvar = tensordict.get(self.cvar_key, None) if self.cvar_key is not None else None
        level = self.explore_cvar if explore else self.cvar
        cvar = level.expand(n) if cvar is None else cvar.reshape(n).to(level.dtype)
        generator = self.generator(self_state.device)
        action = self.selector(*flat, explore=explore, cvar=cvar, generator=generator)
        return action.reshape(batch + action.shape[1:])

    def _epsilon_greedy(self, action: torch.Tensor) -> torch.Tensor:
        """``action [*batch, *event]`` with each batch element replaced, with probability
        ``epsilon``, by a uniform draw inside the spec."""
        event_dims = len(self.space.event_shape)
        batch = action.shape[: action.dim() - event_dims]
        generator = self.generator(action.device)
        draw = torch.rand(batch, generator=generator, device=action.device)
        random_action = self.space.sample(batch, generator, action.dtype)
        take = (draw < self.epsilon).reshape((*batch, *([1] * event_dims)))
        return torch.where(take, random_action, action)


def module_device(module: nn.Module) -> torch.device:
    """The device of a module's first parameter (CPU for a module without parameters)."""
    return next((p.device for p in module.parameters()), torch.device("cpu"))
