"""What the command-line programs (``train.py``, ``evaluate``, ``export``, ``viz``) share: how they
end, an error as the one line they refuse with, and the argument types they refuse bad values
with."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

# lines of Hydra's and OmegaConf's messages that repeat the key or describe internals
NOISE = ("full_key:", "reference_type=", "object_type=", "To append", "Set the environment")


def one_line(error: BaseException) -> str:
    """An error and its cause as one line: Hydra's option lists joined by commas, OmegaConf's
    node details dropped."""
    parts: list[str] = []
    while error is not None:
        text, items = [], []
        for line in str(error).splitlines():
            if line.startswith("Config search path"):
                break
            if line.startswith("\t"):
                items.append(line.strip())
            elif line.strip() and not line.strip().startswith(NOISE):
                text.append(line.strip().rstrip(":."))
        if items:
            text[-1] = f"{text[-1] if text else 'choose one of'}: {', '.join(items)}"
        message = "; ".join(text) or type(error).__name__
        if not any(message in part for part in parts):
            parts.append(message)
        error = error.__cause__
    return ": ".join(parts)


def run_command(main: Callable[[], int], prog: str) -> NoReturn:
    """``sys.exit(main())``, with Ctrl-C ending the command in one line and exit status 130
    (128 + SIGINT, the shell's convention) instead of a traceback: every file written before
    it is whole and nothing is left half-written (:mod:`marinenav.files`)."""
    try:
        status = main()
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; files written before are whole, nothing else was written",
              file=sys.stderr, flush=True)  # fmt: skip
        sys.exit(128 + signal.SIGINT)
    sys.exit(status)


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low``, refused in one line otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def cvar_level(text: str) -> float:
    """An argparse type: a CVaR level in (0, 1] (``--cvar`` of ``evaluate``, ``export`` and the
    benchmarks), refused in one line otherwise (:func:`~marinenav.policy.wrapper.check_cvar`)."""
    from marinenav.policy.wrapper import check_cvar  # the policy package imports torch

    try:
        level = float(text)
        check_cvar(level)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return level
