"""Bad input gets one clear line and a non-zero exit, and nothing starts: config errors (Hydra's
and ours), sizes that cannot fit in memory, float64 training, and a run that diverges."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from marinenav.agents import agent_class
from marinenav.cli import one_line
from marinenav.training import validation as validation_module
from marinenav.training.trainer import Trainer, TrainingDiverged
from marinenav.training.validation import ConfigError, memory_estimate, validate
from tests.run_utils import ROOT, compose_config, tiny_config, train_py

# what Hydra offers for agent=: the yaml files of conf/agent, sorted (a new agent adds its own)
AGENT_CHOICES = ", ".join(sorted(path.stem for path in (ROOT / "conf" / "agent").glob("*.yaml")))


# each bad command line and the start of the one line it is refused with
BAD_COMMAND_LINES = [
    ("+foo=1", "error: unknown key foo: the config has agent, checkpoint, compile, cudagraphs"),
    ("agent=ac_iqn_schema",
     "error: In 'config': Could not find 'agent/ac_iqn_schema'; Available options in "
     f"'agent': {AGENT_CHOICES}"),
    ("training.batchsize=3",
     "error: Could not override 'training.batchsize': Key 'batchsize' not in 'TrainingConf'"),
    ("agent=ppo",  # the on-policy agents are mappo and ippo
     "error: In 'config': Could not find 'agent/ppo'; Available options in 'agent': "
     f"{AGENT_CHOICES}"),
    ("training.batch_size=many",
     "error: Error merging override training.batch_size=many: Value 'many' of type 'str' could "
     "not be converted to Integer"),
    ("training.batch_size=0", "error: training.batch_size must be positive, got 0"),
    ("agent.gamma=1.5", "error: agent.gamma must be in [0, 1], got 1.5"),
    ("logger.backend=mysql",
     "error: logger.backend must be one of csv, tensorboard, wandb, mlflow, got 'mysql'"),
    ("logger=wandb",  # the backend is a key, not a group of its own
     "error: In 'config': Could not find 'logger/wandb'; Available options in 'logger': "
     "default"),
    ("curriculum.num_robots=[0]",
     "error: curriculum.num_robots[0] must be at least 1 (every episode needs a robot), got 0"),
    # torch used to say "Overflow when unpacking long long", naming nothing
    ("seed=100000000000000000000",
     "error: seed must be an integer in [0, 2**62], got 100000000000000000000"),
    ("evaluation.seed=-1", "error: evaluation.seed must be an integer in [0, 2**62], got -1"),
    # nan passed the "not negative" check and the run crashed at its first update
    ("training.updates_per_timestep=nan",
     "error: training.updates_per_timestep must be finite, got nan"),
]  # fmt: skip
COMMAND_LINE = ("agent=dqn", "curriculum=stage0", "device=cpu")


@pytest.mark.parametrize(("override", "line"), BAD_COMMAND_LINES)
def test_a_bad_command_line_is_one_line_naming_the_problem(
    override: str, line: str, tmp_path: Path
) -> None:
    """What ``python train.py`` prints for each bad command line, made in this process as
    train.py makes it: Hydra's composition or the trainer's start-up refusal, ``error: `` and
    the error in one line (:func:`marinenav.cli.one_line`). The test below runs the program
    itself on one of each kind."""
    with pytest.raises(Exception) as error:  # noqa: PT011 (Hydra's errors have no one type)
        Trainer(compose_config(*COMMAND_LINE, override), tmp_path / "run")
    printed = f"error: {one_line(error.value)}"
    assert printed.startswith(line) and "\n" not in printed, printed
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("override", "fresh"),
    [("+foo=1", False), ("agent=ac_iqn_schema", False), ("training.batchsize=3", False),
     ("training.updates_per_timestep=nan", True)],
    ids=["our-key-check", "hydra-choice", "hydra-key", "validation"],
)  # fmt: skip
def test_train_py_refuses_in_that_line_with_status_2_and_no_run_directory(
    override: str, fresh: bool, tmp_path: Path
) -> None:
    """The program itself, one refusal of each kind; the last (the deepest: past Hydra, into the
    trainer's checks) in a new interpreter, where nothing printed while importing (a warning)
    may break the line."""
    line = dict(BAD_COMMAND_LINES)[override]
    result = train_py(*COMMAND_LINE, override, f"hydra.run.dir={tmp_path}/outputs/day/run",
                      cwd=tmp_path, fresh=fresh)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(line), result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "outputs" / "day").exists()


@pytest.mark.parametrize(
    ("agent", "override", "message"),
    [
        ("dqn", "agent.gamma=-0.1", "agent.gamma must be in [0, 1], got -0.1"),
        ("dqn", "agent.lr=0", "agent.lr must be positive, got 0.0"),
        ("dqn", "agent.lr=inf", "agent.lr must be finite, got inf"),
        ("dqn", "agent.grad_clip_norm=-1", "agent.grad_clip_norm must be positive, got -1.0"),
        ("dqn", "agent.n_step=0", "agent.n_step must be at least 1, got 0"),
        ("iqn", "agent.num_tau_act=0", "agent.num_tau_act must be at least 1, got 0"),
        ("iqn", "agent.kappa=0", "agent.kappa must be positive, got 0.0"),
        ("ac_iqn", "agent.num_tau_actor=0", "agent.num_tau_actor must be at least 1, got 0"),
        ("ac_iqn", "agent.kappa=nan", "agent.kappa must be finite, got nan"),
        ("ddpg", "agent.gamma=1.01", "agent.gamma must be in [0, 1], got 1.01"),
        ("sac", "agent.alpha=0", "agent.alpha must be positive, got 0.0"),
        ("sac", "agent.target_entropy=-inf", "agent.target_entropy must be finite, got -inf"),
        ("td3", "agent.policy_noise=-0.1", "agent.policy_noise must not be negative, got -0.1"),
        ("td3", "agent.policy_delay=0", "agent.policy_delay must be at least 1, got 0"),
        ("rainbow", "agent.atoms=1", "agent.atoms must be at least 2, got 1"),
        ("rainbow", "agent.v_max=-80",
         "agent.v_max must be above agent.v_min, got v_min=-75.0, v_max=-80.0"),
        ("rainbow", "agent.noisy_std=-0.1", "agent.noisy_std must not be negative, got -0.1"),
        ("rainbow", "agent.priority_exponent=2",
         "agent.priority_exponent must be in [0, 1], got 2.0"),
        ("rainbow", "agent.importance_beta=-1",
         "agent.importance_beta must be in [0, 1], got -1.0"),
        ("iqn", "agent.priority_exponent=1.5",
         "agent.priority_exponent must be in [0, 1], got 1.5"),
        ("iqn", "agent.noisy_std=-0.1", "agent.noisy_std must not be negative, got -0.1"),
        ("mappo", "agent.clip_epsilon=0", "agent.clip_epsilon must be positive, got 0.0"),
        ("mappo", "agent.entropy_coeff=-0.01",
         "agent.entropy_coeff must not be negative, got -0.01"),
        ("ippo", "agent.gae_lambda=1.5", "agent.gae_lambda must be in [0, 1], got 1.5"),
        ("ippo", "agent.epochs=0", "agent.epochs must be at least 1, got 0"),
        ("ippo", "agent.initial_log_std=nan", "agent.initial_log_std must be finite, got nan"),
    ],
)  # fmt: skip
def test_agent_options_out_of_range_are_refused_at_start_up(
    agent: str, override: str, message: str, tmp_path: Path
) -> None:
    cfg = tiny_config(f"agent={agent}", override)
    with pytest.raises(ConfigError) as error:
        validate(cfg)
    assert str(error.value) == message
    with pytest.raises(ConfigError):
        Trainer(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before the run directory is made
    key = override.removeprefix("agent.").split("=")[0]
    with pytest.raises(ValueError) as direct:  # direct users of the config classes
        agent_class(agent).config_class(**{key: cfg.agent[key]})
    assert str(direct.value) == message


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("env.num_envs=100000", "training.total_timesteps=2000"),
         "training.total_timesteps=2000 is less than one batched step of env.num_envs=100000 "
         "timesteps; raise training.total_timesteps or lower env.num_envs"),
        (("env.num_envs=256", "training.total_timesteps=1000000"),
         "training.total_timesteps=1000000 is not a whole number of batched steps of "
         "env.num_envs=256 timesteps; use 999936 or 1000192, or env.num_envs=250 or 320"),
        (("env.num_envs=2", "training.total_timesteps=161"),
         "training.total_timesteps=161 is not a whole number of batched steps of "
         "env.num_envs=2 timesteps; use 160 or 162, or env.num_envs=1 or 7"),
    ],
)  # fmt: skip
def test_a_budget_of_part_of_a_batched_step_is_refused(
    overrides: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    cfg = tiny_config("agent=dqn", *overrides)
    with pytest.raises(ConfigError) as error:
        Trainer(cfg, tmp_path / "run")
    assert str(error.value) == message
    assert not (tmp_path / "run").exists()
    validate(tiny_config("agent=dqn", "env.num_envs=2", "training.total_timesteps=162"))


def test_schemas_are_not_choices(tmp_path: Path) -> None:
    result = train_py("agent=foo", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{AGENT_CHOICES}\n" in result.stderr
    assert "schema" not in result.stderr


def test_sizes_that_cannot_fit_are_refused_with_the_estimate(monkeypatch) -> None:
    cfg = tiny_config("agent=dqn", "env.robot_slots=1000", "training.replay_capacity=10000")
    estimate = memory_estimate(cfg)
    # 2 training + 2 evaluation environments x 1000 robot slots x 1004 objects, plus the replay
    assert estimate == 4 * 1000 * 1004 * validation_module.PAIR_BYTES + 10000 * 400
    monkeypatch.setattr(validation_module, "available_memory", lambda device: 4 * 2**30)
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
    update = trainer.updater.update

    def poisoned_update(batch):
        losses = update(batch)
        if trainer.timesteps > 100:
            if broken == "loss":
                losses.set("loss_q", torch.full_like(losses.get("loss_q"), math.nan))
            else:
                with torch.no_grad():
                    next(trainer.agent.parameters()).fill_(math.inf)
        return losses

    monkeypatch.setattr(trainer.updater, "update", poisoned_update)
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


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_a_cuda_device_without_cuda_is_one_line_wherever_it_is_asked_for(capsys) -> None:
    """``MarineNavEnv(device="cuda")`` failed inside torch, and ``evaluate --device
    cuda`` called a healthy checkpoint "truncated or corrupt"."""
    from marinenav.envs import MarineNavEnv
    from marinenav.evaluate import main as evaluate_main

    with pytest.raises(ValueError) as error:
        MarineNavEnv(2, "discrete", device="cuda")
    assert str(error.value) == "device cuda: CUDA is not available on this machine (use cpu)"
    with pytest.raises(ConfigError) as refused:
        validate(tiny_config("agent=dqn", "device=cuda"))
    assert str(refused.value) == "device=cuda: CUDA is not available on this machine (use cpu)"
    from marinenav.training.checkpoint import load_agent

    with pytest.raises(ValueError) as loading:
        load_agent("any_run", "cuda")  # not "truncated or corrupt"
    assert str(loading.value) == "device cuda: CUDA is not available on this machine (use cpu)"
    with pytest.raises(SystemExit) as exited:
        evaluate_main(["any_run", "--device", "cuda"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m marinenav.evaluate: error: --device cuda: CUDA is not available on this "
        "machine (use cpu)"
    )


def test_a_device_name_torch_does_not_know_is_one_line() -> None:
    from marinenav.envs import MarineNavEnv

    with pytest.raises(ValueError) as error:
        MarineNavEnv(2, "discrete", device="gpu0")
    assert str(error.value) == "device gpu0: not a device name (cpu, cuda, cuda:N)"


def test_a_cuda_device_without_an_index_gets_the_current_ones(monkeypatch) -> None:
    """Tensors on ``cuda`` report ``cuda:0``, and ``torch.device("cuda") != torch.device(
    "cuda:0")``: a simulator that kept the bare name refused its own actions on a GPU. The
    device every component goes through carries the index (a machine with two CUDA devices,
    the second current, stood in for by its torch.cuda answers)."""
    from marinenav.keys import device_named

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert device_named("cuda") == torch.device("cuda", 1)
    assert device_named("cuda:0") == torch.device("cuda", 0)
    assert device_named("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="this machine has 2 CUDA device"):
        device_named("cuda:2")
