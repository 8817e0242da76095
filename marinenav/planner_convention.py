"""The old path of :mod:`marinenav.planner.convention`: importing it gives that module itself
(docs/migrating.md, "Old module paths")."""

import sys

from marinenav.planner import convention

sys.modules[__name__] = convention
