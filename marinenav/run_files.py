"""Names of the files in a run directory that the trainer writes and other parts read.

The trainer (:mod:`marinenav.training`) writes them; the pictures (:mod:`marinenav.viz`) and
the statistics across runs (:mod:`marinenav.aggregate`) read them. They are named here, below
all three, so that reading a run does not import the trainer. The run directory's layout:
docs/training.md, "Logs and the run directory".
"""

from __future__ import annotations

CHECKPOINT_NAME = "checkpoint.pt"  # the run's latest state (training/checkpoint.py)
EVALUATIONS_NAME = "evaluations.jsonl"  # one line per evaluation on the validation set
# the last checkpoint's large-set metrics, when present (python -m marinenav.evaluate RUN
# --set large --out RUN/evaluation_large.json, or scripts/collect_recipe_run.sh)
LARGE_NAME = "evaluation_large.json"
