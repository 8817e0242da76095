"""Gradient updates wait until the replay holds complete transitions, whatever the number of
environments: with n-step returns the first complete transitions are stored
at the n-th batched step, but 1,000 or more environments pass ``training.learning_starts`` in
the first one, and the sampler then read storage rows that were never written (a critic loss of
1e26, or DQN indexing its action table at 9e13)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from marinenav.agents import AGENT_NAMES, agent_class
from marinenav.training.trainer import Trainer
from marinenav.training.validation import expected_updates
from tests.agent_utils import agents_in_the_default_set
from tests.run_utils import tiny_config

REPLAY_AGENTS = [name for name in AGENT_NAMES if agent_class(name).learning == "replay"]
N_STEP = 3  # what every fast recipe uses


def _spy_on_samples(trainer: Trainer) -> list[tuple[int, torch.Tensor, int]]:
    """Record ``(timestep, sampled rows, replay fill count)`` of every batch the learner
    samples."""
    samples: list[tuple[int, torch.Tensor, int]] = []
    replay = trainer.learner.replay
    sample = replay.sample

    def recorded():
        batch = sample()
        samples.append((trainer.timesteps, batch.get("index").clone(), int(replay.count)))
        return batch

    replay.sample = recorded
    return samples


def _many_environments(agent: str, num_envs: int, learning_starts: int, steps: int, *extra: str):
    """A run of ``steps`` batched steps of ``num_envs`` environments, n-step returns, a few
    updates per batched step, one evaluation and checkpoint at the end (no replay saved)."""
    total = num_envs * steps
    return tiny_config(
        f"agent={agent}", f"env.num_envs={num_envs}", "env.robot_slots=2",
        f"training.total_timesteps={total}", f"training.learning_starts={learning_starts}",
        f"training.updates_per_timestep={4 / num_envs}", "training.batch_size=8",
        f"training.replay_capacity={num_envs * 2 * 5}", f"evaluation.first={total}",
        f"evaluation.interval={total}", f"checkpoint.interval={total}",
        f"logger.interval={total}", "checkpoint.save_replay=false", *extra,
    )  # fmt: skip


# by default a one-step and a prioritized n-step learner; every replay agent in the long set
@pytest.mark.parametrize("agent", agents_in_the_default_set(REPLAY_AGENTS, ("dqn", "rainbow")))
def test_4096_environments_update_only_from_complete_transitions(
    agent: str, tmp_path: Path
) -> None:
    extra = ["agent.num_tau_act=4"] if agent == "iqn" else []  # acting width: seconds saved
    cfg = _many_environments(agent, 4096, 2000, 4, f"agent.n_step={N_STEP}", *extra)
    trainer = Trainer(cfg, tmp_path)
    samples = _spy_on_samples(trainer)
    trainer.train()
    # learning_starts (2,000) is passed at the first batched step, complete 3-step transitions
    # exist from the third: the first update comes then, and every sampled row was written
    assert samples and min(timestep for timestep, _, _ in samples) == N_STEP * 4096
    for timestep, index, count in samples:
        assert count > 0 and int(index.max()) < count, (timestep, count)
    assert trainer.updates == len(samples) == expected_updates(cfg) == 8
    finals = trainer.evaluations[-1]
    assert math.isfinite(finals["eval/return"])


def test_learning_from_the_start_waits_for_complete_transitions(tmp_path: Path) -> None:
    """``training.learning_starts=0`` at 16 environments: the same wait, n batched steps."""
    cfg = _many_environments("dqn", 16, 0, 5, f"agent.n_step={N_STEP}")
    trainer = Trainer(cfg, tmp_path)
    samples = _spy_on_samples(trainer)
    trainer.train()
    assert min(timestep for timestep, _, _ in samples) == N_STEP * 16
    assert trainer.updates == len(samples) == expected_updates(cfg) == 12
    assert all(int(index.max()) < count for _, index, count in samples)


def test_a_resume_without_its_replay_waits_again(tmp_path: Path) -> None:
    """A checkpoint written with ``checkpoint.save_replay=false`` resumes with an empty replay:
    the first updates after the resume wait for complete transitions too."""
    first = Trainer(_many_environments("dqn", 16, 0, 4, f"agent.n_step={N_STEP}"), tmp_path)
    first.train()
    resumed = Trainer(
        _many_environments("dqn", 16, 0, 4, f"agent.n_step={N_STEP}", "resume=true",
                           "training.total_timesteps=128"), tmp_path,
    )  # fmt: skip
    samples = _spy_on_samples(resumed)
    resumed.train()
    assert min(timestep for timestep, _, _ in samples) == 64 + N_STEP * 16
    assert all(int(index.max()) < count for _, index, count in samples)


def test_a_run_that_would_take_no_update_says_so_at_the_start(tmp_path: Path, capsys) -> None:
    """A budget that ends before the first update (here 2 batched steps of 3-step returns)
    finished with the untrained agent and exit 0, without a word."""
    cfg = _many_environments("dqn", 16, 0, 2, f"agent.n_step={N_STEP}")
    assert expected_updates(cfg) == 0
    Trainer(cfg, tmp_path).train()
    assert capsys.readouterr().err.splitlines()[0] == (
        "marinenav: warning: this run takes no gradient update: training.total_timesteps=32 "
        "ends before the first (updates start once training.learning_starts=0 timesteps are "
        "collected and the replay holds complete 3-step transitions, at "
        "training.updates_per_timestep=0.25); the agent stays untrained"
    )
