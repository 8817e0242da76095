"""Where the reference recordings of the original simulator are: ``tests/data/reference`` (kept
in the repository, so the parity tests run on any clone), or ``$MARINENAV_REFERENCE_DIR``."""

from __future__ import annotations

import os
from pathlib import Path

IN_REPOSITORY = Path(__file__).resolve().parent / "data" / "reference"
REFERENCE_DIR = Path(os.environ.get("MARINENAV_REFERENCE_DIR", IN_REPOSITORY))
