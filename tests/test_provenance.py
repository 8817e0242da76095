"""Where a run's values come from: ``python train.py ... --explain KEY`` and the run's
``.hydra/sources.yaml``, checked against the files of ``conf/`` and the agents' dataclasses."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from marinenav.training.config import register_configs
from marinenav.training.provenance import COMMAND_LINE, Setting, value_sources
from tests.run_utils import ROOT, TINY, compose_config, train_py

CONF = ROOT / "conf"


def sources(*overrides: str) -> dict[str, list[Setting]]:
    register_configs()
    return value_sources(list(overrides), config_dir=CONF)


def test_each_layer_that_sets_a_key_in_merge_order() -> None:
    chains = sources("agent=sac")
    # SAC's lr: the dataclass default, then the fast recipe's part for SAC
    assert chains["agent.lr"] == [
        Setting("marinenav/agents/sac.py (SACConfig)", 1e-4),
        Setting("conf/recipe_agent/fast_sac.yaml", 3e-4),
    ]
    # the budget: the paper's in conf/config.yaml, the fast recipe's, SAC's part of it
    assert [(s.source, s.value) for s in chains["training.total_timesteps"]] == [
        ("conf/config.yaml", 6_000_000),
        ("conf/recipe/fast.yaml", 800_000),
        ("conf/recipe_agent/fast_sac.yaml", 480_000),
    ]
    # a value stated once: the agent's yaml file repeats none of its dataclass
    assert [s.source for s in chains["agent.grad_clip_norm"]] == [
        "marinenav/agents/sac.py (SACConfig)"
    ]


def test_the_command_line_comes_last_and_a_group_choice_is_not_a_value() -> None:
    chains = sources("agent=ac_iqn", "agent.lr=0.01", "recipe=paper", "scenario=harbour")
    assert chains["agent.lr"][-1] == Setting(COMMAND_LINE, 0.01)
    assert [s.source for s in chains["agent.lr"][:-1]] == [
        "marinenav/agents/ac_iqn.py (ACIQNConfig)"  # recipe=paper has no part for AC-IQN
    ]
    assert "agent" not in chains and "recipe" in chains
    assert chains["env.obstacle_slots"][-1] == Setting("conf/scenario/harbour.yaml", 6)
    assert chains["scenario.channel_width"] == [
        Setting("marinenav/scenarios/harbour.py (HarbourConfig)", 24.0)
    ]


def test_every_key_of_the_composed_config_has_a_source() -> None:
    for overrides in (
        ["agent=ac_iqn"],
        ["agent=dqn", "recipe=paper", "scenario=mix"],  # the mix's rule_parts: an empty mapping
        ["agent=rainbow", "scenario=mix", "scenario.give_way_check_penalty=5",
         "+scenario.rule_parts.give_way_check_penalty=[imazu]"],
    ):  # fmt: skip
        final = compose_config(*overrides)
        leaves = {
            key for key, _ in _flat(OmegaConf.to_container(final, resolve=False))
        }  # fmt: skip
        assert leaves == set(sources(*overrides)), overrides


def _flat(node, prefix=""):
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _flat(value, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix, node


def test_explain_command(tmp_path: Path) -> None:
    result = train_py("agent=sac", "agent.gamma=0.9", "--explain", "agent.gamma", "seed",
                      cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "agent.gamma = 0.9    set by command line (over 0.995 in "
        "conf/recipe_agent/fast_sac.yaml; 0.99 in marinenav/agents/sac.py (SACConfig))",
        "seed = 0    set by conf/config.yaml",
    ]
    node = train_py("agent=dqn", "--explain", "agent", cwd=tmp_path)
    keys = [line.split(" = ")[0] for line in node.stdout.splitlines()]
    assert "agent.double_q" in keys and all(k.startswith("agent.") for k in keys)
    assert not list(tmp_path.iterdir())  # explaining trains nothing, makes no run directory


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--explain", "agent.nothing"], "error: unknown key agent.nothing: the config has agent"),
        pytest.param(["agent=nope", "--explain", "agent"], "Could not find 'agent/nope'",
                     marks=pytest.mark.slow),  # the long set: Hydra's refusal, as in test_bad_input
        (["--explain"], "error: --explain needs a key"),
    ],
)
def test_explain_refuses_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = train_py(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_run_records_where_its_values_came_from(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = train_py(*TINY, "agent=dqn", "agent.lr=0.001", f"hydra.run.dir={run_dir}",
                      cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    recorded = OmegaConf.load(run_dir / ".hydra" / "sources.yaml")
    assert recorded["agent.lr"] == COMMAND_LINE
    assert recorded["agent.gamma"] == "marinenav/agents/dqn.py (DQNConfig)"
    assert recorded["training.total_timesteps"] == COMMAND_LINE
    assert recorded["env.robot_slots"] == "conf/env/default.yaml"
