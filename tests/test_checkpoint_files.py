"""Checkpoint files survive crashes: atomic writes keep the previous checkpoint, and a truncated
file is reported in one line naming it (resume, evaluate)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marinenav.evaluate import main as evaluate_main
from marinenav.files import FileWriteError
from marinenav.planner.export import main as export_main
from marinenav.training import checkpoint
from marinenav.training.checkpoint import CheckpointError, load_agent, write_checkpoint
from marinenav.training.trainer import Trainer
from tests.run_utils import tiny_config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run")
    Trainer(tiny_config("agent=dqn", "training.total_timesteps=80"), run).train()
    return run


def test_a_crash_during_a_write_keeps_the_previous_checkpoint(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "checkpoint.pt"
    write_checkpoint({"config": {}, "agent": {}, "value": torch.arange(5)}, path)

    def torn_save(state, f) -> None:  # the process dies half-way through the new file
        f.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint.torch, "save", torn_save)
    with pytest.raises(KeyboardInterrupt):
        write_checkpoint({"config": {}, "agent": {}, "value": torch.arange(7)}, path)
    assert torch.equal(checkpoint.load_checkpoint(path)["value"], torch.arange(5))


def test_an_unreadable_new_file_is_never_renamed_over_the_old(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "checkpoint.pt"
    write_checkpoint({"config": {}, "agent": {}, "value": torch.arange(5)}, path)
    monkeypatch.setattr(checkpoint.torch, "save", lambda state, f: f.write(b"not a zip"))
    with pytest.raises(FileWriteError, match=r"checkpoint\.pt: the written file does not read"):
        write_checkpoint({"config": {}, "agent": {}}, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no temporary file
    assert torch.equal(checkpoint.load_checkpoint(path)["value"], torch.arange(5))


def _truncated_copy(run: Path, target: Path) -> Path:
    target.mkdir()
    data = (run / "checkpoint.pt").read_bytes()
    (target / "checkpoint.pt").write_bytes(data[: len(data) // 2])
    (target / "eval_configs.json").write_bytes((run / "eval_configs.json").read_bytes())
    return target / "checkpoint.pt"


def test_a_truncated_checkpoint_is_one_line_naming_the_file(
    finished_run: Path, tmp_path: Path, capsys
) -> None:
    truncated = _truncated_copy(finished_run, tmp_path / "torn")
    with pytest.raises(CheckpointError) as error:
        load_agent(truncated.parent)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{truncated} is not a readable checkpoint (truncated or corrupt")

    with pytest.raises(CheckpointError, match="is not a readable checkpoint"):
        Trainer(tiny_config("agent=dqn", "resume=true"), truncated.parent)

    assert evaluate_main([str(truncated.parent)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(truncated) in err

    with pytest.raises(SystemExit) as exit_status:
        export_main([str(truncated.parent)])
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"python -m marinenav.export: error: {truncated} is not")


def _in_the_older_layout(state: dict) -> dict:
    """A checkpoint as written before the learner contract: the replay learner's state at the
    top and among the counters, the acting streams under ``policy_generators``."""
    learner = state.pop("learner")
    state["replay"], state["nstep"] = learner["replay"], learner["nstep"]
    state["counters"]["pending_updates"] = learner["pending_updates"]
    state["policy_generators"] = state.pop("agent_rng")
    return state


def test_a_checkpoint_in_the_older_layout_resumes_to_the_same_end(tmp_path: Path) -> None:
    # Rainbow: prioritized replay and n-step windows, the most learner state to carry over
    straight = Trainer(tiny_config("agent=rainbow", "training.total_timesteps=80"), tmp_path / "a")
    straight.train()
    older = tmp_path / "older"
    older.mkdir()
    state = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=False)
    assert state["learner"]["nstep"] is not None and state["learner"]["pending_updates"] == 0.5
    torch.save(_in_the_older_layout(state), older / "checkpoint.pt")
    ends = []
    for run in (tmp_path / "a", older):
        trainer = Trainer(tiny_config("agent=rainbow", "resume=true"), run)
        assert trainer.learner.pending_updates == 0.5 and trainer.learner.timesteps == 80
        trainer.train()
        ends.append(trainer)
    first, second = ends
    assert (first.timesteps, first.updates) == (second.timesteps, second.updates) == (160, 30)
    assert torch.equal(first.learner.replay.count, second.learner.replay.count)
    for (name, a), (_, b) in zip(
        first.agent.state_dict().items(), second.agent.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_a_checkpoint_from_before_an_agent_option_existed_loads_and_resumes(tmp_path: Path) -> None:
    """A Rainbow checkpoint whose config has no ``agent.prioritized`` / ``agent.noisy`` (written
    before those options): the key it lacks is not compared on resume, and loading it for
    evaluation or export builds the agent with the options' defaults."""
    run = tmp_path / "run"
    Trainer(tiny_config("agent=rainbow", "training.total_timesteps=80"), run).train()
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    for key in ("prioritized", "noisy"):
        del state["config"]["agent"][key]
    torch.save(state, run / "checkpoint.pt")
    agent, config = load_agent(run / "checkpoint.pt")
    assert "prioritized" not in config["agent"]
    assert agent.config.prioritized and agent.config.noisy  # the defaults: Rainbow as it was
    resumed = Trainer(tiny_config("agent=rainbow", "resume=true"), run)
    assert resumed.timesteps == 80
    resumed.train()
    assert resumed.timesteps == 160
