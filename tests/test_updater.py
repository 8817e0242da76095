"""The trainer's ``Updater`` (marinenav/training/updater.py), the seam between what an agent
declares (objectives, parameter groups, target networks) and what the trainer owns: one fused
Adam per parameter group at its rate, target copies and Polyak steps, the batch check before any
step, and refusals of malformed declarations. How each agent's objectives step its networks:
tests/test_agent_<name>.py; every agent's parameters against the recording:
tests/test_update_parity.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from marinenav.agents import AGENT_NAMES, agent_class, make_agent
from marinenav.agents.base import Objective, ParameterGroup
from marinenav.agents.ddpg import DDPGAgent
from marinenav.agents.dqn import DQNAgent
from marinenav.agents.sac import SACAgent, SACConfig
from marinenav.training.updater import Updater
from tests.agent_utils import training_batch

REPLAY_AGENTS = [name for name in AGENT_NAMES if agent_class(name).learning == "replay"]


def target_leaves(agent) -> dict[str, torch.Tensor]:
    """Copies of every target parameter of the agent's loss module, by state-dict key."""
    return {
        key: value.detach().clone()
        for key, value in agent.loss_module.state_dict().items()
        if key.startswith("target_") and value.is_floating_point()
    }


def test_one_fused_adam_per_parameter_group_in_the_objectives_order() -> None:
    agent = SACAgent(SACConfig(learn_alpha=True, lr=3e-4))
    updater = Updater(agent)
    groups = [group for objective in agent.objectives() for group in objective.groups]
    assert list(updater.optimizers) == [g.name for g in groups] == ["critics", "actor", "alpha"]
    for group in groups:
        optimizer = updater.optimizers[group.name]
        assert isinstance(optimizer, torch.optim.Adam) and optimizer.defaults["fused"]
        (params,) = (g["params"] for g in optimizer.param_groups)
        assert [id(p) for p in params] == [id(p) for p in group.parameters]
        assert optimizer.param_groups[0]["lr"] == 3e-4


def test_a_group_with_its_own_rate_gets_it() -> None:
    class SlowCriticDDPG(DDPGAgent):
        def objectives(self) -> tuple[Objective, ...]:
            critic, actor = super().objectives()
            slow = ParameterGroup("critic", self.critic.parameters(), lr=1e-6)
            return dataclasses.replace(critic, groups=slow), actor

    updater = Updater(SlowCriticDDPG())
    rates = {name: opt.param_groups[0]["lr"] for name, opt in updater.optimizers.items()}
    assert rates == {"critic": 1e-6, "actor": 1e-4}
    updater.set_lr_fraction(0.5)
    rates = {name: opt.param_groups[0]["lr"] for name, opt in updater.optimizers.items()}
    assert rates == {"critic": 0.5e-6, "actor": 0.5e-4}


@pytest.mark.parametrize("target_tau", [None, 0.25])
@pytest.mark.parametrize("name", REPLAY_AGENTS)
def test_building_an_updater_leaves_the_agents_targets_as_they_are(
    name: str, target_tau: float | None
) -> None:
    """An agent restored from a checkpoint keeps its targets (TorchRL's updaters copy the online
    parameters into them when they are built)."""
    agent = make_agent(name)
    with torch.no_grad():
        for key, value in agent.loss_module.state_dict(keep_vars=True).items():
            if key.startswith("target_") and value.is_floating_point():
                value.add_(0.5)
    before = target_leaves(agent)
    Updater(agent, target_tau=target_tau)
    after = target_leaves(agent)
    assert before.keys() == after.keys() and before
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_hard_copies_wait_for_update_targets_and_polyak_steps_follow_every_update() -> None:
    hard, soft = DQNAgent(), DQNAgent()
    updaters = Updater(hard), Updater(soft, target_tau=0.25)
    batch = training_batch(16, "discrete", seed=1)
    targets = target_leaves(hard), target_leaves(soft)
    for updater in updaters:
        updater.update(batch)
    online = hard.loss_module.value_network_params.flatten_keys(".")
    assert all(torch.equal(v, targets[0][k]) for k, v in target_leaves(hard).items())
    updaters[0].update_targets()
    moved = target_leaves(hard)
    assert all(torch.equal(moved[k], online[k.removeprefix("target_value_network_params.")])
               for k in moved)  # fmt: skip
    online = soft.loss_module.value_network_params.flatten_keys(".")
    for key, value in target_leaves(soft).items():
        source = online[key.removeprefix("target_value_network_params.")]
        expected = 0.75 * targets[1][key] + 0.25 * source
        torch.testing.assert_close(value, expected, rtol=0, atol=1e-7)  # the online moved


def test_an_agent_without_targets_takes_no_target_steps() -> None:
    agent = make_agent("mappo")
    assert agent.target_pairs() == ()
    updater = Updater(agent, target_tau=0.1)
    assert updater.targets is None and not updater.soft_targets
    updater.update_targets()  # nothing to move


def test_a_batch_with_a_missing_key_is_refused_before_any_step() -> None:
    agent = DQNAgent()
    updater = Updater(agent)
    before = [p.detach().clone() for p in agent.parameters()]
    with pytest.raises(ValueError, match="training batch is missing 'objects'"):
        updater.update(training_batch(8, "discrete").exclude("objects"))
    assert all(torch.equal(p, b) for p, b in zip(agent.parameters(), before, strict=True))
    assert updater.updates == 0


def test_malformed_objectives_are_refused() -> None:
    agent = DQNAgent()
    group = ParameterGroup("q", agent.network.parameters())
    with pytest.raises(ValueError, match="objective 'q' needs a loss to minimise and a group"):
        Objective("q", agent.q_loss, (), group)
    with pytest.raises(ValueError, match="objective 'q': every must be at least 1"):
        Objective("q", agent.q_loss, "loss_q", group, every=0)

    class TwiceNamed(DQNAgent):
        def objectives(self) -> tuple[Objective, ...]:
            (objective,) = super().objectives()
            return objective, dataclasses.replace(objective, name="again")

    with pytest.raises(ValueError, match="agent dqn: two parameter groups named 'q'"):
        Updater(TwiceNamed())
