"""A training process killed with SIGKILL 20 times, at random moments and in the middle of
checkpoint writes, and resumed each time, ends exactly where an uninterrupted run does: same
counters, evaluations, replay and parameters.

Every kill is tied to progress the child reports, not to wall time: a child killed "at a random
moment" reports when it reaches a drawn timestep and stalls at a later drawn one, so the kill
lands between the two however busy the machine is, and never after the run's last timestep."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest
import torch

from marinenav.training.trainer import Trainer
from tests.run_utils import tiny_config

TOTAL = 800
FAULT = [
    "agent=dqn",
    f"training.total_timesteps={TOTAL}",
    "checkpoint.interval=16",  # a write every 8 batched steps: kills often land in one
    "evaluation.interval=160",
]
KILLS = 20


def _train_child(run_dir: Path, phase: str, ready, reached, report_at: int, stall_at: int) -> None:
    """One training process: resumes when a checkpoint exists; ``phase`` stalls its first
    checkpoint write half-written (``torn``) or just before the rename (``rename``), or
    (``random``) sets ``reached`` from timestep ``report_at`` on and stalls at ``stall_at``
    (before the budget's end): the parent kills it in between."""
    torch.set_num_threads(1)
    resume = "true" if (run_dir / "checkpoint.pt").is_file() else "null"
    trainer = Trainer(tiny_config(*FAULT, f"resume={resume}"), run_dir)
    if phase == "random":
        step = trainer.step_environments

        def step_and_report() -> None:
            if trainer.timesteps >= report_at:
                reached.set()
            if trainer.timesteps >= stall_at:
                time.sleep(600)  # until killed: the run never reaches its last timestep
            step()

        trainer.step_environments = step_and_report
    elif phase == "torn":
        real_save = torch.save

        def torn_save(state, f) -> None:
            buffer = io.BytesIO()
            real_save(state, buffer)
            f.write(buffer.getvalue()[: buffer.tell() // 2])
            f.flush()
            reached.set()
            time.sleep(600)  # until killed

        torch.save = torn_save
    elif phase == "rename":

        def stalled_replace(src, dst) -> None:
            reached.set()
            time.sleep(600)  # until killed

        os.replace = stalled_replace
    ready.set()
    trainer.train()


def without_clock(record: dict) -> dict:
    """A counters or evaluation record without its clocks (``wall_clock_s``, ``cpu_s``: seconds
    differ per run)."""
    return {key: value for key, value in record.items() if key not in ("wall_clock_s", "cpu_s")}


# the long set: a drill of nine killed trainings (the default set kills one: test_training)
@pytest.mark.slow
def test_sigkill_at_random_moments_and_during_writes_resumes_exactly(tmp_path: Path) -> None:
    straight = Trainer(tiny_config(*FAULT), tmp_path / "straight")
    straight.train()

    run_dir = tmp_path / "killed"
    context = multiprocessing.get_context("fork")  # the parent's imports: no start-up per run
    draw = random.Random(0)
    phases = [("torn", "rename", "random", "random")[k % 4] for k in range(KILLS)] + ["finish"]
    resumed_from = []
    for phase in phases:
        resumed_from.append(
            torch.load(run_dir / "checkpoint.pt", weights_only=False)["counters"]["timesteps"]
            if (run_dir / "checkpoint.pt").is_file() else 0
        )  # fmt: skip
        # a random moment: between a drawn timestep and a later one, before the last
        report_at = min(resumed_from[-1] + 2 * draw.randint(0, 40), TOTAL - 4)
        stall_at = min(report_at + 2 * draw.randint(1, 40), TOTAL - 2)
        ready, reached = context.Event(), context.Event()
        child = context.Process(
            target=_train_child, args=(run_dir, phase, ready, reached, report_at, stall_at)
        )
        child.start()
        if phase == "finish":
            child.join(timeout=600)
            assert child.exitcode == 0
            break
        assert ready.wait(timeout=300)
        assert reached.wait(timeout=300)  # in the write (torn, rename), or at report_at
        if phase == "random":
            time.sleep(draw.uniform(0.0, 0.3))  # lands anywhere up to stall_at
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL
    # the run made progress between kills and never lost its checkpoint once it had one
    assert resumed_from == sorted(resumed_from) and resumed_from[-1] > 0

    final = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    expected = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=False)
    # equal but for the wall clock (seconds of training, which differ from run to run)
    assert without_clock(final["counters"]) == without_clock(expected["counters"])
    assert [without_clock(e) for e in final["evaluations"]] == [
        without_clock(e) for e in expected["evaluations"]
    ]
    # evaluation clocks are rounded to 0.1 s and the checkpoint's is not: compare rounded
    clocks = [e["wall_clock_s"] for e in final["evaluations"]]
    assert clocks == sorted(clocks)
    assert 0 < clocks[-1] <= round(final["counters"]["wall_clock_s"], 1)
    lines = (run_dir / "evaluations.jsonl").read_text().splitlines()
    assert [without_clock(json.loads(line)) for line in lines] == json.loads(
        json.dumps([without_clock(e) for e in expected["evaluations"]])
    )
    replay, expected_replay = final["learner"]["replay"], expected["learner"]["replay"]
    assert torch.equal(replay["count"], expected_replay["count"])
    for key, value in expected_replay["storage"].items(True, True):
        torch.testing.assert_close(replay["storage"].get(key), value, msg=str(key))
    for name, value in expected["agent"]["modules"].items():
        torch.testing.assert_close(final["agent"]["modules"][name], value, msg=name)
    # the temporary files of the writes killed half-way were removed by the next start
    assert not list(run_dir.glob(".checkpoint.pt.*")) and not list(run_dir.glob("*.tmp"))
