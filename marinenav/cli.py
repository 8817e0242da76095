"""What the command-line modules (``evaluate``, ``export``, ``viz``) share: how they end."""

from __future__ import annotations

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
