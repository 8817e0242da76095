"""The acting network's weight average (training.policy_average_start): when it samples, what
it holds, that evaluations and loaded planners act with it while learning keeps the online
network, and that a killed run resumes it exactly."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from marinenav.evaluate import main as evaluate_main
from marinenav.training.averaging import AVERAGE_KEY, PolicyAverage
from marinenav.training.checkpoint import load_agent
from marinenav.training.trainer import Trainer
from marinenav.training.validation import ConfigError
from tests.run_utils import benchmark_py, tiny_config, train_until_killed

AVERAGED = ("training.policy_average_start=0.5", "training.policy_average_interval=20")


def test_samples_fall_on_the_interval_from_the_start() -> None:
    average = PolicyAverage(nn.Linear(2, 1), start=100, interval=30)
    steps = [(0, 64), (64, 128), (128, 192), (192, 256)]
    # 100 (the start) lies in (64, 128], 130 and 160 in (128, 192], 190 as well, 220 and 250 ...
    assert [average.due(a, b) for a, b in steps] == [False, True, True, True]
    assert not average.due(100, 129) and average.due(100, 130)


def test_the_average_is_the_mean_of_the_sampled_networks_and_acting_swaps_it_in() -> None:
    torch.manual_seed(0)
    network = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    average = PolicyAverage(network, start=10, interval=10)
    sampled = []
    for timestep in range(0, 60, 5):  # steps of 5 timesteps to 60: samples at 10, 20, ..., 60
        with torch.no_grad():
            for p in network.parameters():
                p.add_(torch.randn_like(p))
        average.observe(timestep, timestep + 5)
        if average.due(timestep, timestep + 5):
            sampled.append([p.detach().clone() for p in network.parameters()])
    assert average.samples == len(sampled) == 6
    online = [p.detach().clone() for p in network.parameters()]
    expected = [torch.stack(ps).mean(0) for ps in zip(*sampled, strict=True)]
    with average.acting():
        for p, mean in zip(network.parameters(), expected, strict=True):
            torch.testing.assert_close(p, mean)
    for p, own in zip(network.parameters(), online, strict=True):
        assert torch.equal(p, own)  # the online weights are back
    with pytest.raises(RuntimeError, match="inside"), average.acting():
        raise RuntimeError("inside")
    for p, own in zip(network.parameters(), online, strict=True):
        assert torch.equal(p, own)  # ... also after an exception


def test_before_its_first_sample_the_average_leaves_the_network_alone() -> None:
    network = nn.Linear(2, 2)
    average = PolicyAverage(network, start=1000, interval=10)
    average.observe(0, 500)
    before = [p.detach().clone() for p in network.parameters()]
    with torch.no_grad():
        for p in network.parameters():
            p.mul_(3.0)
    with average.acting():
        for p, old in zip(network.parameters(), before, strict=True):
            assert torch.equal(p, 3.0 * old)
    assert average.samples == 0


def test_a_training_run_evaluates_and_exports_the_average_and_learns_with_the_online_network(
    tmp_path: Path,
) -> None:
    trainer = Trainer(tiny_config("agent=ac_iqn", *AVERAGED), tmp_path)
    trainer.train()
    average = trainer.policy_average
    assert average is not None and average.start == 80
    assert average.samples == 5  # timesteps 80, 100, 120, 140, 160
    online = dict(trainer.agent.policy.selector.named_parameters())
    averaged = dict(average.average.module.named_parameters())
    assert any(not torch.equal(online[name], averaged[name]) for name in online)
    # the checkpoint keeps the online networks for a resume, and the average beside them
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert state[AVERAGE_KEY]["samples"] == 5
    modules = state["agent"]["modules"]
    for name, value in online.items():
        assert torch.equal(modules[f"policy.selector.{name}"], value), name
    # what the evaluator, the exporter and marinenav.evaluate read acts with the average: the
    # actor the critic trains against (the same tensors) included
    for source in (tmp_path, tmp_path / "best"):
        loaded, _ = load_agent(source)
        for name, value in loaded.policy.selector.named_parameters():
            torch.testing.assert_close(value, averaged[name], msg=name)
        torch.testing.assert_close(
            loaded.actor.head[-1].weight, averaged["actor.head.4.weight"]
        )  # fmt: skip
    # asked for, the online network the checkpoint keeps (what the run learned with)
    online_loaded, _ = load_agent(tmp_path, average=False)
    for name, value in online_loaded.policy.selector.named_parameters():
        assert torch.equal(value, online[name]), name
    # and marinenav.evaluate --online scores it, saying so in its record
    out = tmp_path / "online.json"
    assert evaluate_main([str(tmp_path), "--online", "--max-steps", "5", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["acting"].startswith("online network")


def test_a_run_without_averaging_writes_no_average(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config("agent=dqn"), tmp_path)
    trainer.train()
    assert trainer.policy_average is None
    assert AVERAGE_KEY not in torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    with pytest.raises(ValueError, match="holds no weight average"):
        load_agent(tmp_path, average=False)
    assert evaluate_main([str(tmp_path), "--online"]) == 2  # refused in one line
    with pytest.raises(SystemExit):  # a baseline has one network: the flag is a mistake
        evaluate_main(["--baseline", "apf", "--online"])


def test_a_killed_run_resumes_its_average_exactly(tmp_path: Path, monkeypatch) -> None:
    overrides = ("agent=dqn", "training.policy_average_start=0.25",
                 "training.policy_average_interval=20")  # fmt: skip
    straight = Trainer(tiny_config(*overrides), tmp_path / "straight")
    straight.train()

    # killed after the first checkpoint (timestep 80)
    train_until_killed(tiny_config(*overrides), tmp_path / "killed", 100, monkeypatch)
    resumed = Trainer(tiny_config(*overrides, "resume=true"), tmp_path / "killed")
    assert resumed.policy_average.samples == 3  # 40, 60, 80 in the checkpoint of timestep 80
    resumed.train()
    assert resumed.policy_average.samples == straight.policy_average.samples == 7
    for (name, a), (_, b) in zip(
        straight.policy_average.average.module.state_dict().items(),
        resumed.policy_average.average.module.state_dict().items(), strict=True,
    ):  # fmt: skip
        torch.testing.assert_close(a, b, msg=name)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("training.policy_average_start=1.0", "policy_average_start must be in"),
        ("training.policy_average_start=-0.1", "policy_average_start must be in"),
        ("training.policy_average_interval=0", "policy_average_interval must be positive"),
    ],
)
def test_bad_average_settings_fail_before_training(
    override: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=message):
        Trainer(tiny_config("agent=dqn", override), tmp_path)
    assert not (tmp_path / "checkpoint.pt").exists()


def average_snapshots(*args: object) -> str:
    """benchmarks/average_snapshots.py run with ``args``: its output, after asserting it ran."""
    done = benchmark_py("average_snapshots.py", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def average_snapshots_refuses(*args: object) -> str:
    """benchmarks/average_snapshots.py run with ``args``: its error, after asserting it failed."""
    refused = benchmark_py("average_snapshots.py", *args)
    assert refused.returncode != 0, refused.stdout
    return refused.stderr


def assert_snapshot_acts_with(snapshot: Path, average: PolicyAverage) -> None:
    """The agent marinenav loads from ``snapshot`` acts with the weights ``average`` holds."""
    loaded, _ = load_agent(snapshot)
    kept = average.average.module.state_dict()
    for name, value in loaded.policy.selector.state_dict().items():
        torch.testing.assert_close(value, kept[name], msg=name)


@pytest.mark.slow  # the long set: three programs on a trained run
def test_averaging_evaluated_snapshots_after_the_fact_gives_the_runs_own_average(
    tmp_path: Path,
) -> None:
    """benchmarks/average_snapshots.py on a run whose samples fall on its evaluations (80, 160)
    writes the average that run kept, and marinenav's loader acts with it."""
    run = tmp_path / "run"
    cfg = tiny_config("agent=ac_iqn", "checkpoint.keep_evaluated=true",
                      "training.policy_average_start=0.5",
                      "training.policy_average_interval=80")  # fmt: skip
    trainer = Trainer(cfg, run)
    trainer.train()
    assert trainer.policy_average.samples == 2
    out = tmp_path / "averaged"
    assert "80, 160" in average_snapshots(run, "--last", "2", "--out", out)
    assert_snapshot_acts_with(out, trainer.policy_average)
    assert "holds 2 evaluated snapshots" in average_snapshots_refuses(
        run, "--last", "3", "--out", out
    )


@pytest.mark.slow  # the long set: two training runs and a program
def test_an_average_read_since_a_later_snapshot_is_the_run_started_there(
    tmp_path: Path,
) -> None:
    """``average_snapshots.py --since 80`` on a run averaging every 20 timesteps from 80 gives
    the average that the same run started at 100 keeps (the samples 100-160), since the
    average does not change what the run learns; a snapshot that is not before the last, or
    a run without an average, is refused in one line."""
    keep = ("agent=dqn", "checkpoint.keep_evaluated=true", "training.policy_average_interval=20")
    run, later = tmp_path / "run", tmp_path / "later"
    Trainer(tiny_config(*keep, "training.policy_average_start=0.5"), run).train()
    started_later = Trainer(tiny_config(*keep, "training.policy_average_start=0.625"), later)
    started_later.train()
    assert started_later.policy_average.samples == 4  # 100, 120, 140, 160
    out = tmp_path / "since"
    assert "its 4 samples after timestep 80" in average_snapshots(
        run, "--since", "80", "--out", out
    )
    assert_snapshot_acts_with(out, started_later.policy_average)
    assert "before the last" in average_snapshots_refuses(run, "--since", "160", "--out", out)
    plain = tmp_path / "plain"
    Trainer(tiny_config("agent=dqn", "checkpoint.keep_evaluated=true"), plain).train()
    refusal = average_snapshots_refuses(plain, "--since", "80", "--out", out)
    assert "hold no weight average" in refusal


def test_export_online_at_a_cvar_level_writes_the_online_networks_tail(
        tmp_path: Path, capsys) -> None:  # fmt: skip
    """``export --online --cvar 0.25`` of a Rainbow run that averaged: the file's probabilities
    are the online network's lower quarter (renormalised), its record says the level; without
    ``--online`` the file is the average's; ``--cvar`` on an agent without a return
    distribution and ``--online`` on a run without an average are refused in one line."""
    from marinenav.agents.rainbow import lower_tail
    from marinenav.planner.export import main as export_main
    from marinenav.planner.load import load_planner

    run = tmp_path / "run"
    Trainer(tiny_config("agent=rainbow", *AVERAGED), run).train()
    online = [str(run), "--online", "--cvar", "0.25", "--out", str(tmp_path / "o")]
    assert export_main(online) == 0
    assert export_main([str(run), "--out", str(tmp_path / "a")]) == 0
    gen = torch.Generator().manual_seed(5)
    state = (torch.randn(6, 7, generator=gen, dtype=torch.float64) * 5,
             torch.randn(6, 5, 5, generator=gen, dtype=torch.float64) * 5,
             (torch.rand(6, 5, generator=gen) < 0.6).double())  # fmt: skip
    for directory, average, level in (("o", False, 0.25), ("a", True, 1.0)):
        path = tmp_path / directory / "traced_Rainbow_model.pt"
        module, agent_type, metadata = load_planner(path)
        assert agent_type == "rainbow" and metadata["cvar_alpha"] == level
        agent, _ = load_agent(run, average=average)
        network = copy.deepcopy(agent.network).double()
        with torch.no_grad():
            expected = lower_tail(network(*state, noise=False).exp(), level)
            torch.testing.assert_close(module(state), expected, rtol=1e-12, atol=1e-12)

    dqn = tmp_path / "dqn"
    Trainer(tiny_config("agent=dqn"), dqn).train()
    for arguments, message in (([str(dqn), "--cvar", "0.5"], "--cvar is for agents that act"),
                               ([str(dqn), "--online"], "holds no weight average")):  # fmt: skip
        capsys.readouterr()
        with pytest.raises(SystemExit):
            export_main([*arguments, "--out", str(tmp_path / "x")])
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
