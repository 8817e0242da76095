"""The training progress: a tqdm bar on a terminal, a few plain lines a minute otherwise
(``nohup``, Slurm, a pipe), so a log file holds lines rather than megabytes of carriage
returns."""

from __future__ import annotations

import io

from omegaconf import OmegaConf

from marinenav.training.loggers import PlainProgress, progress_bar
from tests.run_utils import TINY, train_py


class FakeClock:
    """A clock the test moves by hand (s)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_progress_writes_a_line_at_most_every_interval() -> None:
    """Ten minutes of updates every second, interval 30 s: 20 lines plus the closing one, each
    a plain line, none with a carriage return."""
    stream, clock = io.StringIO(), FakeClock()
    progress = PlainProgress(total=600 * 16, initial=0, stream=stream, interval=30, clock=clock)
    progress.set_description("training")
    for _ in range(600):
        clock.now += 1.0
        progress.update(16)  # 16 environments: 16 timesteps a second
    progress.close()
    progress.close()  # a second close writes nothing
    text = stream.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == 600 // 30 + 1
    # the first line after 30 s: 480 of 9,600 timesteps, 570 s left at this pace
    assert lines[0] == "training: 480 / 9,600 steps (5%), 0:00:30 elapsed, 0:09:30 left"
    assert lines[-1] == "training: 9,600 / 9,600 steps (100%), 0:10:00 elapsed"


def test_plain_progress_line_shows_the_postfix_and_a_resumed_pace() -> None:
    """A run resumed at 500,000 of 560,000: the time left is paced on this session's steps."""
    stream, clock = io.StringIO(), FakeClock()
    progress = PlainProgress(total=560_000, initial=500_000, stream=stream, interval=20,
                             clock=clock)  # fmt: skip
    progress.set_postfix({"steps/s": "500", "success": "0.45"}, refresh=False)
    clock.now += 19.9
    progress.update(9_950)
    assert stream.getvalue() == ""  # not yet 20 s
    clock.now += 0.1
    progress.update(50)
    assert stream.getvalue() == (
        "510,000 / 560,000 steps (91%), 0:00:20 elapsed, 0:01:40 left; steps/s=500, success=0.45\n"
    )


def test_progress_bar_is_plain_off_a_terminal_and_tqdm_on_one() -> None:
    from tqdm.auto import tqdm

    on, off = OmegaConf.create({"progress_bar": True}), OmegaConf.create({"progress_bar": False})
    assert isinstance(progress_bar(on, 100, 0, stream=io.StringIO()), PlainProgress)
    bar = progress_bar(on, 100, 0, stream=Terminal())
    assert isinstance(bar, tqdm)
    bar.close()
    assert progress_bar(off, 100, 0, stream=Terminal()) is None


def test_training_under_nohup_writes_plain_progress_lines(tmp_path) -> None:
    """``train.py`` with its stderr a file (as under nohup or Slurm): the progress comes as
    plain lines, the last one at the run's end, and no carriage return anywhere."""
    overrides = [o for o in TINY if not o.startswith("logger.progress_bar")]
    result = train_py(*overrides, "agent=dqn", "logger.progress_bar=true",
                      f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "\r" not in result.stderr
    last = [line for line in result.stderr.splitlines() if " / 160 steps " in line][-1]
    assert last.startswith("training: 160 / 160 steps (100%), ")
