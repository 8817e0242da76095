"""What turns collected environment steps into gradient updates: the trainer's learners.

The trainer acts, steps the environments and hands every batched step to a *learner*; the
learner decides what to keep and when to update the agent, through the trainer's
:class:`~marinenav.training.updater.Updater`. Which learner an agent gets is the agent's class
attribute ``learning`` (``marinenav.agents.base``), looked up in :data:`LEARNERS`:

* ``"replay"`` (:class:`ReplayLearner`): off-policy agents. Robot transitions go into a device
  replay (uniform, or prioritized and per-robot n-step as the agent's ``replay_options()``
  asks); once ``training.learning_starts`` timesteps are collected and the replay holds
  complete transitions it takes ``training.updates_per_timestep`` gradient updates per
  timestep (the fraction carried over), each on a sampled batch of ``training.batch_size``
  transitions.
* ``"rollout"`` (``marinenav.training.rollout.RolloutLearner``): on-policy agents (PPO).

A learner keeps its whole state in :meth:`Learner.state_dict` (replay, windows, counters), which
the trainer writes into checkpoints under ``"learner"``.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, Protocol

import torch
from omegaconf import DictConfig
from tensordict import TensorDict, TensorDictBase

from marinenav.agents import Agent
from marinenav.keys import (
    ACTION,
    ACTIVE_KEY,
    DONE,
    GROUP,
    OBSERVATION_KEYS,
    REWARD,
    REWARD_TERMS,
    TERMINATED,
)
from marinenav.training.constraint import PRICED, PricedTerm
from marinenav.training.nstep import NStepTransitions
from marinenav.training.prioritized import DevicePrioritizedSampler
from marinenav.training.replay import RobotReplay
from marinenav.training.updater import Updater

# Agent.learning -> "module:class"; imported on demand (one learner's dependencies only)
LEARNERS = {
    "replay": "marinenav.training.learners:ReplayLearner",
    "rollout": "marinenav.training.rollout:RolloutLearner",
}


class Learner(Protocol):
    """The interface the trainer drives (one learner per run), built with the run's agent, the
    :class:`~marinenav.training.updater.Updater` that learns with it, the run config and the
    device.

    ``observe`` is called with every batched environment step as one transition ``[E]`` in
    TorchRL's layout (:func:`marinenav.envs.transition`): ``("agents", ...)`` the
    input the policy acted on (observation, ``action``, ``active`` and what the policy wrote) and
    ``("next", "agents", ...)`` the step's result (next observation, reward, terminated, done),
    before any restart. ``learn`` is called right after, with the
    run's timestep count (``E`` more than at the previous call): it takes the gradient updates
    due now and returns the sum of their losses (a TensorDict of 0-dim device tensors, never
    read back here; ``None`` when no update was taken) and how many updates it took (each one
    ``updater.update``).
    """

    def __init__(
        self, agent: Agent, updater: Updater, cfg: DictConfig, device: torch.device
    ) -> None: ...

    def observe(self, transition: TensorDictBase) -> None: ...

    def learn(self, timesteps: int) -> tuple[TensorDict | None, int]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def make_learner(
    agent: Agent, updater: Updater, cfg: DictConfig, device: torch.device
) -> Learner:
    """The learner ``agent.learning`` names (see :data:`LEARNERS`), built for run ``cfg``."""
    if agent.learning not in LEARNERS:
        raise ValueError(
            f"agent {agent.name!r} asks for learning={agent.learning!r}; the trainer has "
            f"{', '.join(LEARNERS)}"
        )
    module, cls = LEARNERS[agent.learning].split(":")
    return getattr(importlib.import_module(module), cls)(agent, updater, cfg, device)


def robot_transitions(transition: TensorDictBase, extra: tuple[str, ...] = ()) -> TensorDict:
    """Flat ``[E * R]`` one-step robot transitions (views, no copy) in the agents' batch
    layout (``marinenav.agents.base``), from a batched step's transition ``[E]``; the keys of
    ``extra`` are taken from ``("next", "agents")`` as the reward is."""
    agents, nxt = transition.get(GROUP), transition.get(("next", GROUP))
    n = agents.batch_size.numel()
    flat = {key: agents.get(key).reshape(n, *agents.get(key).shape[2:]) for key in OBSERVATION_KEYS}
    action = agents.get(ACTION)
    flat[ACTION] = action.reshape(n, *action.shape[2:])
    for key in (*OBSERVATION_KEYS, REWARD, TERMINATED, DONE, *extra):
        value = nxt.get(key)
        flat[("next", key)] = value.reshape(n, *value.shape[2:])
    return TensorDict(flat, batch_size=[n])


class ReplayLearner:
    """Off-policy learning from a device replay of robot transitions.

    Built from the agent's :meth:`~marinenav.agents.base.Agent.replay_options`: a
    :class:`~marinenav.training.replay.RobotReplay` of ``training.replay_capacity``
    transitions, sampled uniformly or, when ``prioritized``, by a
    :class:`~marinenav.training.prioritized.DevicePrioritizedSampler` (``alpha = 1``: the
    agent's priorities already carry its exponent; ``beta`` from the options), fed with one-step
    transitions of the robots that acted or, when ``n_step > 1``, with per-robot n-step
    transitions (:class:`~marinenav.training.nstep.NStepTransitions`). Each update is
    ``updater.update(batch)``; a ``"priority"`` entry of what it reports goes back to the sampler
    at the batch's ``"index"``.

    Updates: none before ``training.learning_starts`` timesteps nor before the replay holds
    complete transitions (:attr:`ready`: ``n`` batched steps stored, so that with many
    environments, where one batched step passes ``learning_starts``, no update samples rows
    that were never written); from then on ``updates_per_timestep`` per new timestep, the
    fractional part carried over (``pending_updates``), so E environments per step do not
    change how much learning each transition gets.

    With a priced reward term (:meth:`price`, ``training.constraint``) each transition keeps
    that term apart (``("next", PRICED)``, n-step discounted like the reward) and every sampled
    batch is re-priced at the multiplier of the moment before its update
    (``marinenav.training.constraint``).
    """

    def __init__(
        self, agent: Agent, updater: Updater, cfg: DictConfig, device: torch.device
    ) -> None:
        training = cfg.training
        options = agent.replay_options()
        self.updater = updater
        self.learning_starts = int(training.learning_starts)
        self.updates_per_timestep = training.updates_per_timestep
        self.save_replay = bool(cfg.checkpoint.save_replay)
        self.nstep = (
            NStepTransitions(options.n_step, agent.config.gamma) if options.n_step > 1 else None
        )
        sampler = None
        if options.prioritized:
            sampler = DevicePrioritizedSampler(
                training.replay_capacity + 1, alpha=1.0, beta=options.beta, device=device,
                seed=cfg.seed,
            )  # fmt: skip
        self.replay = RobotReplay(
            training.replay_capacity, device, training.batch_size, sampler, seed=cfg.seed
        )
        self.timesteps = 0  # the run's timestep count at the last learn() (host counter)
        self.pending_updates = 0.0  # fraction of an update carried to the next step
        # batched steps stored since the replay was last empty (host counter, capped at n):
        # after n of them every robot that acted in the first has a complete transition stored
        self.steps_stored = 0
        self.steps_to_complete = options.n_step
        self.priced: PricedTerm | None = None

    def price(self, priced: PricedTerm) -> None:
        """Learn with ``priced``'s term at its multiplier (call before the first step)."""
        if self.steps_stored:
            raise RuntimeError("a reward term can be priced only before the first step")
        self.priced = priced
        if self.nstep is not None:
            self.nstep = NStepTransitions(self.nstep.n, self.nstep.gamma, extra_returns=(PRICED,))

    def _keep_priced_term(self, transition: TensorDictBase) -> None:
        """Put the priced term of the step, ``[E, R, 1]``, beside its reward."""
        nxt = transition.get(("next", GROUP))
        index = self.priced.index
        nxt.set(PRICED, nxt.get(REWARD_TERMS)[..., index : index + 1].to(nxt.get(REWARD).dtype))

    def observe(self, transition: TensorDictBase) -> None:
        """Store the step's transitions of the robots that acted (n-step: those it
        completes)."""
        self.steps_stored = min(self.steps_stored + 1, self.steps_to_complete)
        extra = ()
        if self.priced is not None:
            self._keep_priced_term(transition)
            extra = (PRICED,)
        if self.nstep is None:
            valid = transition.get(ACTIVE_KEY).reshape(-1)
            self.replay.extend(robot_transitions(transition, extra), valid)
            return
        transitions = self.nstep.push(transition)
        self.replay.extend(transitions.exclude("valid"), transitions.get("valid"))

    @property
    def ready(self) -> bool:
        """Whether the replay holds complete transitions to sample: ``n`` batched steps (``n``
        of the n-step returns, 1 for one-step) were stored since it was last empty. Every
        environment starts with active robots, and a robot that acts in a step completes its
        transition within ``n`` steps (or at its episode's end, earlier), so from then on the
        sampler draws written rows only, whatever the number of environments. A host counter:
        no device read."""
        return self.steps_stored >= self.steps_to_complete

    def learn(self, timesteps: int) -> tuple[TensorDict | None, int]:
        """Take the updates due for the timesteps since the last call (see the class
        docstring); returns the summed losses (device tensors) and the update count."""
        new_timesteps = timesteps - self.timesteps
        self.timesteps = timesteps
        if timesteps < self.learning_starts or not self.ready:
            return None, 0
        self.pending_updates += new_timesteps * self.updates_per_timestep
        count = math.floor(self.pending_updates)
        self.pending_updates -= count
        loss_sums = None
        for _ in range(count):
            batch = self.replay.sample()
            if self.priced is not None:
                self.priced.reprice(batch)
            losses = self.updater.update(batch)
            priority = losses.pop("priority", None)
            if priority is not None:
                self.replay.update_priority(batch.get("index"), priority)
            loss_sums = losses if loss_sums is None else loss_sums + losses
        return loss_sums, count

    def state_dict(self) -> dict[str, Any]:
        """Replay (unless ``checkpoint.save_replay`` is off), n-step windows and counters."""
        return {
            "replay": self.replay.state_dict() if self.save_replay else None,
            "nstep": self.nstep.state_dict() if self.nstep is not None else None,
            "timesteps": self.timesteps,
            "pending_updates": self.pending_updates,
            "steps_stored": self.steps_stored,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`. A checkpoint written without its replay
        (``checkpoint.save_replay=false``) leaves the replay empty, so updates wait for
        complete transitions again (:attr:`ready`)."""
        if state["replay"] is not None:
            self.replay.load_state_dict(state["replay"])
        if self.nstep is not None and state["nstep"] is not None:
            self.nstep.load_state_dict(state["nstep"])
        self.timesteps = state["timesteps"]
        self.pending_updates = state["pending_updates"]
        # checkpoints of earlier versions lack the count: their replay was filled long before
        stored = state.get("steps_stored", self.steps_to_complete)
        self.steps_stored = stored if state["replay"] is not None else 0
