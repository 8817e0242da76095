"""``RolloutLearner``: the on-policy learner of agents with ``learning = "rollout"`` (MAPPO, IPPO).

The trainer acts with ``agent.policy`` (which writes the action, the latent Gaussian sample and
its log-probability), steps the environments, and hands each batched step to :meth:`observe`;
after every step it calls :meth:`learn`. The learner keeps one rollout of ``T =
agent.config.rollout_steps`` batched steps in preallocated device buffers ``[E, T, R, ...]``
(time is the last batch dimension, as TorchRL's value estimators expect) and writes step ``t``
into column ``t`` in place: no allocation and no host read per step. When ``T`` steps are in,
:meth:`learn` asks the agent for values and GAE advantages of the whole rollout
(``agent.estimate_advantages``), takes ``epochs x minibatches`` updates (``updater.update``,
the trainer's :class:`~marinenav.training.updater.Updater`) on random, equal minibatches of
``(environment, step)`` rows, each with all its robot slots (the centralised critic needs them
together), and starts the next rollout.

Rollout layout (``E`` environments, ``T`` steps, ``R`` robot slots):

* from the step input (the policy's output): ``("agents", "self_state" | "objects" |
  "objects_mask")`` ``[E, T, R, ...]``, ``("agents", "active")`` ``[E, T, R]`` (the robot acted:
  learning data), ``("agents", "latent_action")`` ``[E, T, R, 2]`` and
  ``("agents", "action_log_prob")`` ``[E, T, R]``;
* from the step output (before any restart, so terminal observations are kept):
  ``("next", "agents", "self_state" | "objects" | "objects_mask" | "active")`` and
  ``("next", "agents", "reward" | "done" | "terminated")`` ``[E, T, R, 1]``.

Environments restart inside a rollout (the step output holds the terminal observation, the next
step input the new episode's first); a robot's ``done`` cuts its GAE recursion there.

The replay keys of the run config (``training.learning_starts``, ``updates_per_timestep``,
``batch_size``, ``replay_capacity``, ``checkpoint.save_replay``) are not read: learning starts
with the first full rollout, its size is ``env.num_envs x agent.rollout_steps`` environment
steps, a minibatch is ``1 / agent.minibatches`` of it, and a checkpoint always holds the rollout
so far. The update count per rollout is ``agent.epochs x agent.minibatches``, whatever the
run's timestep count (:meth:`RolloutLearner.learn` takes it only to fit the ``Learner``
protocol).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from marinenav.keys import (
    ACTIVE,
    DONE,
    GROUP,
    OBJECTS,
    OBJECTS_MASK,
    REWARD,
    SELF_STATE,
    TERMINATED,
    dtype_named,
)
from marinenav.sim.constants import MAX_OBJECTS, OBJECT_DIM, SELF_STATE_DIM

ACTION_DIM = 2
INPUT_FIELDS = (SELF_STATE, OBJECTS, OBJECTS_MASK, ACTIVE, "latent_action",
                "action_log_prob")  # fmt: skip
NEXT_FIELDS = (SELF_STATE, OBJECTS, OBJECTS_MASK, ACTIVE, REWARD, DONE, TERMINATED)


def rollout_buffer(
    num_envs: int, steps: int, robot_slots: int, device: torch.device, dtype: torch.dtype
) -> TensorDict:
    """Zeroed rollout storage ``[E, T]`` with the ``("agents", ...)`` group ``[E, T, R]`` (the
    layout of the module docstring)."""
    E, T, R = num_envs, steps, robot_slots

    def observation(**extra: torch.Tensor) -> TensorDict:
        return TensorDict(
            {
                SELF_STATE: torch.zeros(E, T, R, SELF_STATE_DIM, dtype=dtype, device=device),
                OBJECTS: torch.zeros(E, T, R, MAX_OBJECTS, OBJECT_DIM, dtype=dtype,
                                       device=device),
                OBJECTS_MASK: torch.zeros(E, T, R, MAX_OBJECTS, dtype=torch.bool,
                                            device=device),
                ACTIVE: torch.zeros(E, T, R, dtype=torch.bool, device=device),
                **extra,
            },
            batch_size=[E, T, R], device=device,
        )  # fmt: skip

    agents = observation(
        latent_action=torch.zeros(E, T, R, ACTION_DIM, dtype=dtype, device=device),
        action_log_prob=torch.zeros(E, T, R, dtype=dtype, device=device),
    )
    next_agents = observation(
        reward=torch.zeros(E, T, R, 1, dtype=dtype, device=device),
        done=torch.zeros(E, T, R, 1, dtype=torch.bool, device=device),
        terminated=torch.zeros(E, T, R, 1, dtype=torch.bool, device=device),
    )
    return TensorDict(
        {GROUP: agents, "next": TensorDict({GROUP: next_agents}, batch_size=[E, T])},
        batch_size=[E, T], device=device,
    )  # fmt: skip


class RolloutLearner:
    """On-policy learner over ``[E, T]`` rollouts (see the module docstring).

    Args:
        agent: an agent with ``learning = "rollout"``: ``config.rollout_steps``,
            ``config.epochs``, ``config.minibatches``, ``update_keys`` (what a minibatch
            holds) and ``estimate_advantages(rollout)``.
        updater: the :class:`~marinenav.training.updater.Updater` that learns with ``agent``:
            ``update(minibatch) -> TensorDict`` of 0-dim losses.
        cfg: the run config: ``env.num_envs`` (``E``), ``env.robot_slots`` (``R``),
            ``env.dtype`` and ``seed`` (the minibatch shuffling stream) are read.
        device: where the rollout lives (the environment's and the agent's device).
    """

    def __init__(self, agent, updater, cfg, device: torch.device | str) -> None:
        self.agent = agent
        self.updater = updater
        self.device = torch.device(device)
        self.num_envs = int(cfg.env.num_envs)
        self.robot_slots = int(cfg.env.robot_slots)
        acfg = agent.config
        self.rollout_steps = int(acfg.rollout_steps)
        self.epochs = int(acfg.epochs)
        self.minibatches = int(acfg.minibatches)
        rows = self.num_envs * self.rollout_steps
        if rows % self.minibatches:
            # equal minibatches: one shape for every update (what torch.compile and CUDA graphs
            # of the update need)
            raise ValueError(
                f"agent.minibatches={self.minibatches} must divide the {rows} rows of a rollout "
                f"(env.num_envs x agent.rollout_steps)"
            )
        dtype = dtype_named(cfg.env.get("dtype", "float32"))
        self.buffer = rollout_buffer(
            self.num_envs, self.rollout_steps, self.robot_slots, self.device, dtype
        )
        self.step = 0  # batched steps stored in the current rollout (host counter)
        self.generator = torch.Generator(device=self.device).manual_seed(int(cfg.seed))

    def observe(self, transition: TensorDictBase) -> None:
        """Store one batched step in column ``step`` of the rollout (in place, no host read).

        Args:
            transition: the step ``[E]`` (:func:`marinenav.envs.transition`): the policy's
                output in ``("agents", ...)`` ``[E, R]`` (observations, ``active``,
                ``latent_action``, ``action_log_prob``) and the environment's step output
                (before any restart) in ``("next", "agents", ...)``: next observations,
                ``active``, ``reward``, ``done`` and ``terminated``.
        """
        if self.step >= self.rollout_steps:
            raise RuntimeError(
                f"the rollout already holds {self.rollout_steps} steps: call learn() after "
                "every observe()"
            )
        agents, next_agents = transition.get(GROUP), transition.get(("next", GROUP))
        expected = torch.Size([self.num_envs, self.robot_slots])
        if agents.batch_size != expected or next_agents.batch_size != expected:
            raise ValueError(
                f"the learner was built for [E, R] = {list(expected)} (env.num_envs, "
                f"env.robot_slots), got a step of {list(agents.batch_size)}"
            )
        E = self.num_envs
        row = TensorDict(
            {GROUP: agents.select(*INPUT_FIELDS),
             "next": TensorDict({GROUP: next_agents.select(*NEXT_FIELDS)}, batch_size=[E])},
            batch_size=[E],
        )  # fmt: skip
        self.buffer[:, self.step] = row
        self.step += 1

    def learn(self, timesteps: int) -> tuple[TensorDict | None, int]:
        """After every batched step: when the rollout is full, learn from it and start the
        next one. Returns the sum of the updates' losses (0-dim tensors, on the device) and the
        number of updates (``epochs x minibatches``), or ``(None, 0)`` while the rollout fills.

        Args:
            timesteps: the run's timestep count, as the ``Learner`` protocol passes it; not
                used: a rollout is counted in the batched steps given to :meth:`observe`, and
                there is no learning start (the first full rollout is learned from).
        """
        if self.step < self.rollout_steps:
            return None, 0
        self.step = 0
        agent = self.agent
        agent.estimate_advantages(self.buffer)
        rows = self.buffer.select(*agent.update_keys).reshape(-1)  # [E * T], agents [E * T, R]
        total: TensorDict | None = None
        updates = 0
        for _ in range(self.epochs):
            order = torch.randperm(rows.shape[0], generator=self.generator, device=self.device)
            for index in order.chunk(self.minibatches):
                losses = self.updater.update(rows[index])
                total = losses if total is None else total + losses
                updates += 1
        return total, updates

    def state_dict(self) -> dict[str, Any]:
        """The rollout so far (copies), its step counter and the shuffling stream."""
        observed = [(GROUP, k) for k in INPUT_FIELDS] + [("next", GROUP, k) for k in NEXT_FIELDS]
        return {
            "buffer": self.buffer.select(*observed).clone(),
            "step": self.step,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        buffer = state["buffer"]
        if buffer.batch_size != self.buffer.batch_size or (
            buffer.get(GROUP).batch_size != self.buffer.get(GROUP).batch_size
        ):
            raise ValueError(
                f"rollout of {list(buffer.get(GROUP).batch_size)} [E, T, R] cannot load into "
                f"this learner's {list(self.buffer.get(GROUP).batch_size)}"
            )
        self.buffer.update_(buffer.to(self.device))
        self.step = int(state["step"])
        self.generator.set_state(state["generator"])
