"""Building a run's parts from its config: the one place the trainer, ``evaluate``, ``export``
and ``viz`` construct agents, environments and evaluators.

Read top to bottom, a run is::

    layout = layout_of(cfg)                          # where episodes start (config.py)
    agent = build_agent(cfg.agent, device, run_seed=cfg.seed)
    env = build_env(cfg, agent.action_kind, layout, device)
    evaluator = build_evaluator(cfg, agent, device)  # its set: EvaluationSet.of_run(cfg)

and a trained agent comes back with :func:`marinenav.training.checkpoint.load_agent`, which
uses :func:`build_agent` on the checkpoint's config. The conventions a run's parts share live
here once: the agent seed is the run seed + 100 and its acting stream the run seed (the
original seeds its networks apart from its environments); the slot counts are one
:class:`~marinenav.sim.scenario.Slots` (:func:`~marinenav.training.config.slots_of`); what an
evaluation runs is one :class:`~marinenav.training.evaluation.EvaluationSet`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from marinenav.agents import Agent, make_agent
from marinenav.envs import MarineNavEnv
from marinenav.keys import dtype_named
from marinenav.scenarios import ScenarioLayout
from marinenav.training.config import slots_of
from marinenav.training.evaluation import EvaluationSet, Evaluator

AGENT_SEED_OFFSET = 100  # agent (network) seed = run seed + 100, as in the original


def build_agent(
    agent_config: Mapping[str, Any] | DictConfig,
    device: torch.device | str = "cpu",
    run_seed: int | None = None,
) -> Agent:
    """The agent an ``agent`` config node (or a checkpoint's plain dict of it) describes, on
    ``device``.

    Args:
        agent_config: ``name`` and the agent's options (its ``config_class`` fields).
        device: where its networks live.
        run_seed: the run's seed: the networks are seeded with ``run_seed + 100`` and the
            acting stream with ``run_seed`` (a checkpoint's agent is built the same way before
            its parameters are loaded). ``None`` keeps the agent config's own ``seed``.
    """
    if isinstance(agent_config, DictConfig):
        values = OmegaConf.to_container(agent_config, resolve=True)
    else:
        values = dict(agent_config)
    if run_seed is not None:
        values["seed"] = run_seed + AGENT_SEED_OFFSET
    agent = make_agent(values.pop("name"), **values).to(device)
    if run_seed is not None:
        agent.policy.set_seed(run_seed)
    return agent


def build_env(
    cfg: DictConfig, action_kind: str, layout: ScenarioLayout, device: torch.device
) -> MarineNavEnv:
    """The run's batched training environment: ``env.num_envs`` environments of ``layout``'s
    scenarios, the run's slots, precision, seed and step limit, no validation (the trainer's
    hot loop) and the run's accelerators (``compile``, ``cudagraphs``)."""
    e = cfg.env
    slots = slots_of(e)
    return MarineNavEnv(
        e.num_envs, action_kind, layout=layout, robot_slots=slots.robots,
        obstacle_slots=slots.obstacles, core_slots=slots.cores, device=device,
        dtype=dtype_named(e.dtype), seed=cfg.seed, max_episode_steps=e.max_episode_steps,
        validate=False, compile_step=cfg.compile, cudagraph_step=cfg.cudagraphs,
    )  # fmt: skip


def build_evaluator(cfg: DictConfig, agent: Agent, device: torch.device) -> Evaluator:
    """The :class:`Evaluator` that runs ``agent``'s policy on the run's own evaluation set
    (:meth:`EvaluationSet.of_run`: ``evaluation.set``, or the curriculum's episodes per stage
    from ``evaluation.seed``, in the run's slots, precision, noise seed and step cap), all of it
    at once; the set is ``evaluator.evaluation_set``."""
    return Evaluator(EvaluationSet.of_run(cfg), agent.action_kind, agent.config.gamma, device)
