"""The old path of :mod:`marinenav.planner.elementary_atan`: importing it gives that module
itself (docs/migrating.md, "Old module paths")."""

import sys

from marinenav.planner import elementary_atan

sys.modules[__name__] = elementary_atan
