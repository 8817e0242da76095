"""Bad input gets one clear line and a non-zero exit, and nothing starts: config errors (Hydra's
and ours), sizes that cannot fit in memory, float64 training, and a run that diverges."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from marinenav.training import config as config_module
from marinenav.training.config import ConfigError, memory_estimate, validate
from marinenav.training.trainer import Trainer, TrainingDiverged
from tests.test_training import ROOT, _train_py, tiny_config

# what Hydra offers for agent=: the yaml files of conf/agent, sorted (a new agent adds its own)
AGENT_CHOICES = ", ".join(sorted(path.stem for path in (ROOT / "conf" / "agent").glob("*.yaml")))


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("+foo=1", "error: unknown key foo: the config has agent, checkpoint, compile, cudagraphs"),
        ("agent=ac_iqn_schema",
         "error: In 'config': Could not find 'agent/ac_iqn_schema'; Available options in "
         f"'agent': {AGENT_CHOICES}"),
        ("training.batchsize=3",
         "error: Could not override 'training.batchsize': Key 'batchsize' not in 'TrainingConf'"),
        ("training.batch_size=0", "error: training.batch_size must be positive, got 0"),
        ("curriculum.num_robots=[0]",
         "error: curriculum.num_robots[0] must be at least 1 (every episode needs a robot), got 0"),
    ],
)  # fmt: skip
def test_a_bad_command_line_is_one_line_and_leaves_no_run_directory(
    override: str, line: str, tmp_path: Path
) -> None:
    result = _train_py(
        "agent=dqn", "curriculum=stage0", override, "device=cpu",
        f"hydra.run.dir={tmp_path}/outputs/day/run", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(line), result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "outputs" / "day").exists()


def test_schemas_are_not_choices(tmp_path: Path) -> None:
    result = _train_py("agent=foo", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{AGENT_CHOICES}\n" in result.stderr
    assert "schema" not in result.stderr


def test_sizes_that_cannot_fit_are_refused_with_the_estimate(monkeypatch) -> None:
    cfg = tiny_config("agent=dqn", "env.robot_slots=1000", "training.replay_capacity=10000")
    estimate = memory_estimate(cfg)
    # 2 training + 2 evaluation environments x 1000 robot slots x 1004 objects, plus the replay
    assert estimate == 4 * 1000 * 1004 * config_module.PAIR_BYTES + 10000 * 400
    monkeypatch.setattr(config_module, "available_memory", lambda device: 4 * 2**30)
    with pytest.raises(ConfigError) as error:
        validate(cfg)
    assert str(error.value) == (
        "env.num_envs=2, env.robot_slots=1000 and training.replay_capacity=10000 need about "
        f"{estimate / 2**30:.1f} GiB, more than half of the 4.0 GiB free on the device: "
        "lower them"
    )
    validate(tiny_config("agent=dqn"))  # the tiny run fits


def test_float64_training_is_refused_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="env.dtype=float64 cannot train"):
        Trainer(tiny_config("agent=dqn", "env.dtype=float64"), tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("broken", ["loss", "parameter"])
def test_a_diverging_run_stops_and_keeps_the_last_good_checkpoint(
    broken: str, tmp_path: Path, monkeypatch
) -> None:
    # a poisoned parameter is caught before the next checkpoint even between logs
    log = "logger.interval=40" if broken == "loss" else "logger.interval=1000"
    trainer = Trainer(tiny_config("agent=dqn", log), tmp_path)
    update = trainer.agent.update

    def poisoned_update(batch):
        losses = update(batch)
        if trainer.timesteps > 100:
            if broken == "loss":
                losses.set("loss_q", torch.full_like(losses.get("loss_q"), math.nan))
            else:
                with torch.no_grad():
                    next(trainer.agent.parameters()).fill_(math.inf)
        return losses

    monkeypatch.setattr(trainer.agent, "update", poisoned_update)
    with pytest.raises(TrainingDiverged) as error:
        trainer.train()
    stopped_at = 120 if broken == "loss" else 160  # the next log (loss) or checkpoint (params)
    what = "loss_q is nan" if broken == "loss" else "a network parameter is not finite"
    assert str(error.value) == (
        f"training diverged by timestep {stopped_at}: {what}; stopped, the last good "
        f"checkpoint {tmp_path / 'checkpoint.pt'} is kept (try a lower agent.lr or "
        "agent.grad_clip_norm)"
    )
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert state["counters"]["timesteps"] == 80
    assert all(torch.isfinite(v).all() for v in state["agent"]["modules"].values())
