"""The agent contract (``marinenav.agents.base``), for every registered agent: declared
capabilities and objectives, seeding, the original's parameter counts, an update through the
learner the agent's class names and the trainer's ``Updater`` (moves every optimised network,
never a target until ``update_targets``, reads nothing back to the host), a checkpoint round
trip (``training_state_dict``, the updater's ``state_dict`` and ``rng_state``) and an export
round trip (export, ``load_planner``, the planner's action equal to the agent's
``planner_action`` on the live network). Algorithm-specific checks stay in
``tests/test_agent_<name>.py``."""

from __future__ import annotations

import copy
import dataclasses
import inspect
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictParams
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents import AGENT_NAMES, agent_class, make_agent
from marinenav.agents.base import Agent, AgentConfig, Objective, ReplayOptions
from marinenav.planner import PlannerPolicy, load_planner
from marinenav.planner.convention import (
    EXTRA_INPUT_EXAMPLES,
    agent_type_name,
    input_names,
    planner_file_name,
    rule_options,
)
from marinenav.planner.export import export_torchscript
from marinenav.training.learners import LEARNERS
from marinenav.training.trainer import Trainer
from marinenav.training.updater import Updater
from tests.agent_utils import planner_observation, robot_observations
from tests.run_utils import tiny_config
from tests.sync_utils import count_read_backs

# The original's trainable parameter counts of each network, by the agent's attribute name
SPEC_PARAMETER_COUNTS = {
    "ac_iqn": {"actor": 50_354, "critic": 67_249},
    "ddpg": {"actor": 50_354, "critic": 50_609},
    "td3": {"actor": 50_354},  # the DDPG actor; its two stacked critics: not counted
    "sac": {"actor": 50_612},  # the two stacked critics: tests/test_agent_sac.py
    "iqn": {"network": 69_961},
    "dqn": {"network": 53_321},
    "rainbow": {"network": 540_428},  # noisy layers count mu and sigma
}
F64 = torch.float64


def snapshot(tensors) -> list[torch.Tensor]:
    return [t.detach().clone() for t in tensors]


def target_pairs(agent: Agent) -> list[tuple[str, TensorDictParams, TensorDictParams]]:
    """``(name, online, target)`` parameter TensorDicts of the agent's loss module (TorchRL's
    ``<name>_params`` / ``target_<name>_params``), found by their names (not through
    ``agent.target_pairs()``, which this test checks)."""
    children = dict(agent.loss_module.named_children())
    pairs = []
    for attribute, target in children.items():
        if attribute.startswith("target_") and attribute.endswith("_params"):
            online = children.get(attribute.removeprefix("target_"))
            if isinstance(online, TensorDictParams):
                pairs.append((attribute, online, target))
    return pairs


def trainable_leaves(online: TensorDictParams, target: TensorDictParams) -> tuple[list, list]:
    keys = [key for key, value in online.items(True, True) if value.requires_grad]
    return [online.get(key) for key in keys], [target.get(key) for key in keys]


def train_until_first_update(name: str, run_dir: Path) -> tuple[Trainer, dict, TensorDict]:
    """A tiny run driven as the trainer drives it (act, step, observe, learn) until the learner
    takes its first updates. Returns the trainer, snapshots taken just before that learn call
    (optimised parameters per optimiser, trainable target leaves), and the losses it returned;
    read-backs of every learn call are counted into ``snapshots["read_backs"]``."""
    trainer = Trainer(tiny_config(f"agent={name}"), run_dir)
    updater, read_backs = trainer.updater, 0
    for _ in range(500):
        trainer.step_environments()
        trainer.timesteps += trainer.env.num_envs
        before = {
            "optimised": {
                k: snapshot(p for group in opt.param_groups for p in group["params"])
                for k, opt in updater.optimizers.items()
            },
            "targets": {
                a: snapshot(trainable_leaves(o, t)[1]) for a, o, t in target_pairs(trainer.agent)
            },
        }
        with count_read_backs() as counts:
            losses, count = trainer.learner.learn(trainer.timesteps)
        read_backs += sum(counts.values())
        if count:
            return trainer, {**before, "read_backs": read_backs, "count": count}, losses
    raise AssertionError(f"{name}: no update in 500 batched steps")


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_capabilities_are_declared(name: str) -> None:
    cls = agent_class(name)
    assert cls.name == name and cls.action_kind in ("discrete", "continuous")
    assert dataclasses.is_dataclass(cls.config_class) and issubclass(cls.config_class, AgentConfig)
    assert cls.learning in LEARNERS and isinstance(cls.epsilon_greedy, bool)
    agent = make_agent(name)
    assert isinstance(agent.replay_options(), ReplayOptions)
    # the objectives name their steps and parameter groups once each, and together the groups
    # hold every trainable parameter of the online networks, each once
    objectives = agent.objectives()
    assert objectives and all(isinstance(o, Objective) for o in objectives)
    assert len({o.name for o in objectives}) == len(objectives)
    groups = [g for o in objectives for g in o.groups]
    assert len({g.name for g in groups}) == len(groups)
    stepped = [p for g in groups for p in g.parameters]
    assert len({id(p) for p in stepped}) == len(stepped)
    trainable = {id(p) for p in agent.parameters() if p.requires_grad}
    assert {id(p) for p in stepped} == trainable
    # the declared target pairs are the loss module's target parameter sets
    assert [t for _, t in agent.target_pairs()] == sorted(a for a, _, _ in target_pairs(agent))
    # the original's file-name spelling leads back to the agent
    assert agent_type_name(cls.model_type) == name
    assert planner_file_name(name) == f"traced_{cls.model_type}_model.pt"
    assert len(cls.export_outputs) >= 1 and all(isinstance(o, str) for o in cls.export_outputs)
    assert set(cls.export_extra_inputs) <= set(EXTRA_INPUT_EXAMPLES)
    # the options the action rule declares are the keyword parameters it takes, no more
    parameters = inspect.signature(cls.planner_action).parameters.values()
    keywords = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    assert isinstance(cls.planner_options, tuple)
    assert sorted(cls.planner_options) == sorted(k for k in keywords if k != "outputs")


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_same_seed_same_networks_and_actions(name: str) -> None:
    first, second, other = (
        make_agent(name, seed=3),
        make_agent(name, seed=3),
        make_agent(name, seed=4),
    )
    a, b, c = first.state_dict(), second.state_dict(), other.state_dict()
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    obs = robot_observations(4, 3, seed=1)
    actions = []
    for agent in (first, second):
        if agent.epsilon_greedy:
            agent.policy.set_epsilon(0.5)
        with set_exploration_type(ExplorationType.RANDOM):
            actions.append(agent.policy(obs.clone())["agents", "action"])
    assert torch.equal(*actions)


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_parameter_counts_match_the_spec(name: str) -> None:
    if name not in SPEC_PARAMETER_COUNTS:
        pytest.skip(f"no original parameter counts for {name}")
    agent = make_agent(name)
    for attribute, count in SPEC_PARAMETER_COUNTS[name].items():
        assert sum(p.numel() for p in getattr(agent, attribute).parameters()) == count, attribute


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_update_moves_the_optimised_networks_only_and_reads_nothing_back(
    name: str, tmp_path: Path
) -> None:
    trainer, before, losses = train_until_first_update(name, tmp_path)
    agent, updater = trainer.agent, trainer.updater
    assert before["read_backs"] == 0
    assert before["count"] >= 1
    assert all(v.dim() == 0 and not v.requires_grad for v in losses.values())
    assert "priority" not in losses.keys()  # the learner hands priorities to its sampler
    # every optimiser moved its network
    for key, optimizer in updater.optimizers.items():
        now = [p for group in optimizer.param_groups for p in group["params"]]
        assert any(
            not torch.equal(p, b) for p, b in zip(now, before["optimised"][key], strict=True)
        ), key
    # targets stay until update_targets, which then copies the online parameters exactly
    for attribute, online, target in target_pairs(agent):
        online_leaves, target_leaves = trainable_leaves(online, target)
        assert all(
            torch.equal(t, b)
            for t, b in zip(target_leaves, before["targets"][attribute], strict=True)
        ), attribute
        assert any(not torch.equal(o, t) for o, t in zip(online_leaves, target_leaves, strict=True))
    updater.update_targets()
    for attribute, online, target in target_pairs(agent):
        online_leaves, target_leaves = trainable_leaves(online, target)
        assert all(torch.equal(o, t) for o, t in zip(online_leaves, target_leaves, strict=True)), (
            attribute
        )


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_checkpoint_round_trip(name: str, tmp_path: Path) -> None:
    trainer, _, _ = train_until_first_update(name, tmp_path)
    agent, updater = trainer.agent, trainer.updater
    state = copy.deepcopy(agent.training_state_dict())  # state_dict() tensors alias live ones
    learned = copy.deepcopy(updater.state_dict())
    rng = copy.deepcopy(agent.rng_state())
    assert rng  # the policy has acted: its stream is part of the state

    restored = make_agent(name, seed=12345)  # other initial networks and stream
    restored_updater = Updater(restored)
    restored.load_training_state_dict(state)
    restored_updater.load_state_dict(learned)
    restored.load_rng_state(rng)
    live, back = agent.state_dict(), restored.state_dict()
    assert live.keys() == back.keys() and all(torch.equal(live[k], back[k]) for k in live)
    assert restored_updater.updates == updater.updates > 0
    for key, optimizer in updater.optimizers.items():
        saved = optimizer.state_dict()["state"]
        loaded = restored_updater.optimizers[key].state_dict()["state"]
        assert saved.keys() == loaded.keys() and saved
        for index, moments in saved.items():
            for moment, value in moments.items():
                assert torch.equal(loaded[index][moment], value), (key, index, moment)
    # both continue with the same exploration draws
    obs = robot_observations(4, 3, seed=2)
    actions = []
    for policy in (agent.policy, restored.policy):
        with set_exploration_type(ExplorationType.RANDOM):
            actions.append(policy(obs.clone())["agents", "action"])
    assert torch.equal(*actions)


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_export_round_trip(name: str, tmp_path: Path) -> None:
    cls = agent_class(name)
    agent = make_agent(name, seed=7)
    path = export_torchscript(agent, tmp_path / planner_file_name(name))
    module, loaded_name, metadata = load_planner(path)
    assert loaded_name == name
    assert metadata["inputs"] == list(input_names(name))
    assert metadata["outputs"] == list(cls.export_outputs)

    rows = 12
    state = planner_observation(rows, torch.Generator().manual_seed(5))
    midpoints = ((torch.arange(32, dtype=F64) + 0.5) / 32).expand(rows, 32)
    extra = (midpoints,) if cls.export_extra_inputs else ()
    live = copy.deepcopy(agent.export_network()).double().eval()
    with torch.no_grad():
        exported_outputs = module(state, *extra)
        live_outputs = live(state, *extra)
    exported_tuple = (
        exported_outputs if isinstance(exported_outputs, tuple) else (exported_outputs,)
    )
    live_tuple = live_outputs if isinstance(live_outputs, tuple) else (live_outputs,)
    assert len(exported_tuple) == len(cls.export_outputs)
    for got, want in zip(exported_tuple, live_tuple, strict=True):
        assert got.dtype == F64
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-10)

    options = rule_options(cls, metadata)
    assert options == rule_options(cls, agent.export_metadata())  # the record carries them
    expected = cls.planner_action(live_outputs, **options)
    policy = PlannerPolicy(module, loaded_name, metadata, sac_action="mean", taus="midpoints")
    action = policy.act(*state)
    assert action.shape[0] == rows
    if cls.action_kind == "discrete":
        assert action.dtype == torch.int64 and torch.equal(action, expected)
    else:
        assert action.shape == (rows, 2) and (action.abs() < 1).all()
        torch.testing.assert_close(action, expected, rtol=0, atol=1e-12)
