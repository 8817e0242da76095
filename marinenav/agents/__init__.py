"""The six agents of the paper, TD3 (DDPG with TD3's changes) and the two on-policy PPO agents
(MAPPO, IPPO), the last three not in the paper, one module each, and their registry."""

from __future__ import annotations

import importlib

from marinenav.agents.base import Agent, AgentConfig

# name -> "module:class"; imported on demand so one agent's dependencies do not load the others
_REGISTRY = {
    "ac_iqn": "marinenav.agents.ac_iqn:ACIQNAgent",
    "iqn": "marinenav.agents.iqn:IQNAgent",
    "ddpg": "marinenav.agents.ddpg:DDPGAgent",
    "dqn": "marinenav.agents.dqn:DQNAgent",
    "sac": "marinenav.agents.sac:SACAgent",
    "rainbow": "marinenav.agents.rainbow:RainbowAgent",
    "td3": "marinenav.agents.td3:TD3Agent",
    "mappo": "marinenav.agents.ppo:MAPPOAgent",
    "ippo": "marinenav.agents.ppo:IPPOAgent",
}
AGENT_NAMES = tuple(_REGISTRY)


def agent_class(name: str) -> type[Agent]:
    """The agent class registered as ``name`` (one of ``AGENT_NAMES``)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(AGENT_NAMES)}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_agent(name: str, **overrides) -> Agent:
    """Build agent ``name`` with its default config updated by ``overrides``."""
    cls = agent_class(name)
    return cls(cls.config_class(**overrides))


__all__ = ["AGENT_NAMES", "Agent", "AgentConfig", "agent_class", "make_agent"]
