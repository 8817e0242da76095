"""The checkpoint layout, written (:func:`run_state`, :func:`write_checkpoint`) and read
(:func:`load_checkpoint`, :func:`load_agent`) in one place.

A run directory (``hydra.run.dir``) holds ``checkpoint.pt`` (written by the trainer: config,
agent networks and the updater's optimisers, the agent's acting random streams, the learner's
state (replay, n-step windows, update counters), simulator state, counters) and
``eval_configs.json`` (the fixed
evaluation set in the original's layout). ``best/checkpoint.pt`` holds the agent of the best
evaluation (ties: the later), and with ``checkpoint.keep_evaluated`` ``evaluated/<timestep>/
checkpoint.pt`` every evaluated agent: policy snapshots (config, agent, counters, evaluations,
``"snapshot": True``; no replay or simulator state), which :func:`load_agent` reads like a
checkpoint and the trainer refuses to resume from. A run that averages its acting network's
weights (``training.policy_average_start``) adds the average to both, and :func:`load_agent`
acts with it (:mod:`marinenav.training.averaging`). Older checkpoints are read in today's layout
(:func:`current_layout`).

Checkpoints are written atomically (:func:`write_checkpoint`, through :mod:`marinenav.files`):
to a temporary file beside the old one, flushed to disk, read back, and only then renamed over
it, so a crash at any moment leaves either the previous checkpoint or the new one, never a torn
file.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import torch

from marinenav.agents import Agent
from marinenav.files import FileWriteError, atomic_path, describe
from marinenav.keys import device_named
from marinenav.run_files import CHECKPOINT_NAME
from marinenav.training.averaging import AVERAGE_KEY, averaged_network_state
from marinenav.training.factory import build_agent
from marinenav.training.seeds import seed_job_hint
from marinenav.training.updater import Updater

BEST_DIR = "best"  # the agent of the best evaluation so far, beside the last checkpoint
EVALUATED_DIR = "evaluated"  # evaluated/<timestep>/: every evaluated agent (keep_evaluated)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read (truncated, corrupt, or not a checkpoint)."""


def _unreadable(path: Path, error: Exception) -> CheckpointError:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return CheckpointError(
        f"{path} is not a readable checkpoint (truncated or corrupt: {reason}); "
        "resume from an earlier copy or start a new run"
    )


def run_state(
    config: dict[str, Any],
    agent: Agent,
    updater: Updater,
    counters: dict[str, Any],
    evaluations: list[dict[str, Any]],
    run: dict[str, Any] | None = None,
    average: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The checkpoint layout, written in one place. Always: ``config`` (the run config as a
    plain dict), ``agent`` (networks, targets and any other state of the agent:
    ``agent.training_state_dict()``, with the updater's optimiser states under
    ``"optimizers"``), ``counters`` (``timesteps``, ``updates``: the updater's count too,
    ``wall_clock_s``) and ``evaluations`` (every evaluation's metrics so far). A resumable
    checkpoint adds ``run``'s entries (the trainer gives ``learner``, ``simulator``,
    ``trackers`` and ``constraint``: the priced term's multiplier, or ``None``) and the random
    streams (``agent_rng``: the agent's acting streams; ``torch_rng``, ``cuda_rng``: the global
    ones); without ``run`` the state is a policy snapshot (``"snapshot": True``: ``best/``,
    ``evaluated/<timestep>/``). Either adds, for a run that averages its acting network's
    weights, ``average`` as ``"policy_average"``
    (:meth:`marinenav.training.averaging.PolicyAverage.state_dict`)."""
    learned = {**agent.training_state_dict(), "optimizers": updater.state_dict()["optimizers"]}
    state = {"config": config, "agent": learned, "counters": counters, "evaluations": evaluations}
    if average is not None:
        state[AVERAGE_KEY] = average
    if run is None:
        state["snapshot"] = True
        return state
    state.update(run)
    state["agent_rng"] = agent.rng_state()
    state["torch_rng"] = torch.get_rng_state()
    state["cuda_rng"] = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    return state


def restore_agent(state: dict[str, Any], agent: Agent, updater: Updater) -> None:
    """Put back what :func:`run_state` saved of the agent and its updater: networks, targets,
    the agent's other state, the optimisers' states and the update count (the run's
    ``counters.updates``; TD3's ``critic_updates`` of older checkpoints held the same count)."""
    agent.load_training_state_dict(state["agent"])
    updater.load_state_dict(
        {"optimizers": state["agent"]["optimizers"], "updates": state["counters"]["updates"]}
    )


def restore_random_streams(state: dict[str, Any], agent: Agent) -> None:
    """Put back the random streams :func:`run_state` saved: the agent's and the global ones."""
    agent.load_rng_state(state["agent_rng"])
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])


def refuse_snapshot(path: str | Path, state: dict[str, Any]) -> None:
    """A policy snapshot cannot be resumed from: raise ``ValueError`` saying so in one line."""
    if state.get("snapshot"):
        raise ValueError(
            f"{path} is a policy snapshot ({BEST_DIR}/ or {EVALUATED_DIR}/: no replay or "
            "simulator state); resume from the run directory's own checkpoint.pt"
        )


def checkpoint_path(path: str | Path) -> Path:
    """The checkpoint file of a run directory (or the file itself); raises if missing."""
    path = Path(path)
    hint = ""
    if path.is_dir():
        path, hint = path / CHECKPOINT_NAME, seed_job_hint(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}{hint}")
    return path


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """The raw checkpoint dict (see ``Trainer.save_checkpoint``); raises
    :class:`CheckpointError` (one line naming the file) for a truncated or corrupt file, and
    ``ValueError`` for a ``device`` this machine lacks (before reading: torch's error for it
    would read as a corrupt file)."""
    device = device_named(device)
    path = checkpoint_path(path)
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except Exception as error:  # torch raises zip, pickle and EOF errors alike
        raise _unreadable(path, error) from error
    if not isinstance(state, dict) or "config" not in state or "agent" not in state:
        raise CheckpointError(f"{path} is not a marinenav checkpoint (no config or agent)")
    return current_layout(state)


def peek_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint's config, counters and snapshot flag, read without loading its tensors
    (memory mapped): what a resume checks before it writes anything. Raises like
    :func:`load_checkpoint`."""
    path = checkpoint_path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    except Exception:  # a file torch cannot map (the legacy format): read it whole
        state = load_checkpoint(path)
    if not isinstance(state, dict) or "config" not in state or "agent" not in state:
        raise CheckpointError(f"{path} is not a marinenav checkpoint (no config or agent)")
    return {"config": state["config"], "counters": state.get("counters", {}),
            "snapshot": bool(state.get("snapshot"))}  # fmt: skip


def current_layout(state: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint dict in today's layout. Checkpoints written before the learner contract
    kept the replay learner's state at the top (``"replay"``, ``"nstep"``, and
    ``"pending_updates"`` among the counters) and the acting policy's streams under
    ``"policy_generators"``; they move to ``"learner"`` (with the timestep count the learner
    last saw: the checkpoint's) and ``"agent_rng"``. Today's checkpoints pass unchanged."""
    if "learner" not in state and "replay" in state:
        counters = state["counters"]
        state["learner"] = {
            "replay": state.pop("replay"),
            "nstep": state.pop("nstep", None),
            "timesteps": counters["timesteps"],
            "pending_updates": counters.pop("pending_updates"),
        }
    if "agent_rng" not in state and "policy_generators" in state:
        state["agent_rng"] = state.pop("policy_generators")
    return state


def write_checkpoint(state: dict[str, Any], path: str | Path) -> Path:
    """Write ``state`` to ``path`` atomically (:func:`marinenav.files.atomic_path`): a
    temporary file beside it, flushed and read back (memory mapped, so verifying costs no
    second copy), then renamed over ``path``. The previous file stays intact until the rename;
    a failed write (a full disk, a file that does not read back) raises
    :class:`~marinenav.files.FileWriteError` naming ``path`` and why, in one line."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            torch.save(state, f)
        try:
            torch.load(tmp, map_location="cpu", weights_only=False, mmap=True)
        except Exception as error:
            raise FileWriteError(
                errno.EIO, f"cannot write {path}: the written file does not read back "
                f"({describe(error)})"
            ) from error  # fmt: skip
    return path


def load_agent(
    path: str | Path, device: torch.device | str = "cpu", average: bool = True
) -> tuple[Agent, dict]:
    """The trained agent of a run (networks and targets restored, on ``device``) and the run's
    config as a plain dict. A run that averaged its acting network's weights
    (``training.policy_average_start``) acts with the average, as its evaluations did; with
    ``average=False`` it acts with the online network the checkpoint keeps beside it (what
    the run learned with), and a run without an average is refused then, in one line."""
    state = load_checkpoint(path, device)
    config = state["config"]
    agent = build_agent(config["agent"], device, run_seed=config.get("seed"))
    agent.load_state_dict(state["agent"]["modules"])
    averaged = averaged_network_state(state)
    if not average and averaged is None:
        raise ValueError(
            f"{path}: the online network was asked for, but this checkpoint holds no weight "
            "average (training.policy_average_start was off or had no sample yet); its "
            "planner is the online network already"
        )
    if averaged is not None and average:  # the run's planner is its weight average
        agent.policy.selector.load_state_dict(averaged)
    agent.eval()
    return agent, config
