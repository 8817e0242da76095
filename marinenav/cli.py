"""What the command-line modules (``evaluate``, ``export``, ``viz``) share: how they end, and the
argument types they refuse bad values with."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import NoReturn


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
