"""The old path of :mod:`marinenav.planner.export`, kept as the export's short command line:
``python -m marinenav.export RUN_DIR [--out DIR] [--format ...]`` runs
:func:`marinenav.planner.export.main`, and importing it gives that module itself
(docs/migrating.md, "Old module paths")."""

import sys

from marinenav.planner import export

if __name__ == "__main__":
    from marinenav.cli import run_command

    run_command(export.main, "python -m marinenav.export")
else:
    sys.modules[__name__] = export
