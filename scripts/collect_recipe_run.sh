#!/usr/bin/env bash
# Collect a finished recipe run's small results into results/recipes/<agent>/seed<N>/.
#
#   scripts/collect_recipe_run.sh RUN_DIR OUT_DIR [LAST_K]
#
# Writes, never a checkpoint:
#   OUT_DIR/evaluations.jsonl            the run's validation evaluations (with wall_clock_s)
#   OUT_DIR/traced_<MODEL>_model.pt      the last checkpoint's planner (the original's naming)
#   OUT_DIR/best/traced_<MODEL>_model.pt the best validation checkpoint's planner
#   OUT_DIR/large/<timestep>.json        the large set (600 episodes) for the last LAST_K
#                                        (default 4) evaluated agents in RUN_DIR/evaluated/
#   OUT_DIR/large/best.json              the large set for the best validation checkpoint
# and evaluation_large.json (the last one), which `viz time-to-quality` reads, in both.
# With BEST=0 in the environment the best checkpoint is neither evaluated nor kept (a seed of
# many, where only the last checkpoint is claimed: about 1 CPU minute and 0.3 MB less per run).
set -euo pipefail
run=${1:?RUN_DIR}; out=${2:?OUT_DIR}; last_k=${3:-4}; best=${BEST:-1}
python=${PYTHON:-python}
mkdir -p "$out/large"
cp "$run/evaluations.jsonl" "$out/evaluations.jsonl"
"$python" -m marinenav.export "$run" --out "$out"
find "$out" -name checkpoint.pt -delete   # the exporter writes planners only; be sure
for t in $(ls "$run/evaluated" | sort -n | tail -n "$last_k"); do
  "$python" -m marinenav.evaluate "$run/evaluated/$t" --set large --out "$out/large/$t.json" \
    > "$out/large/$t.md"
done
if [ "$best" = 1 ]; then
  "$python" -m marinenav.evaluate "$run/best" --set large --out "$out/large/best.json" > "$out/large/best.md"
else
  rm -rf "$out/best"
fi
last=$(ls "$run/evaluated" | sort -n | tail -n 1)
cp "$out/large/$last.json" "$run/evaluation_large.json"
cp "$out/large/$last.json" "$out/evaluation_large.json"   # viz time-to-quality reads it
