#!/usr/bin/env bash
# Evaluate one planner, run or baseline in every water of docs/results.md ("Real waters").
#
#   scripts/waters_evaluate.sh LABEL OUT_DIR SOURCE...
#
# SOURCE is what `python -m marinenav.evaluate` takes first: a run directory, `--planner FILE`
# (with its options) or `--baseline NAME --variant V --planning-period P`. Writes, per water,
# OUT_DIR/LABEL__<water>.json (the metrics) and .md (the printed tables):
#   large      the paper's six stages, 600 episodes (open water)
#   harbour    the harbour layout, 100 episodes
#   currents4  the six stages with 4 vortex cores per episode, 300 episodes
#   currents8  the same with 8, 300 episodes
#   imazu      the 22 Imazu cases with their COLREGs checks
# `python benchmarks/waters_table.py OUT_DIR` prints the table. JOBS=N in the environment
# evaluates N waters at a time (default 1; each process one torch thread); a failed one fails
# the script.
set -euo pipefail
label=${1:?LABEL}; out=${2:?OUT_DIR}; shift 2
python=${PYTHON:-python}
jobs=${JOBS:-1}
mkdir -p "$out"
pids=()
while read -r water args; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 "$python" -m marinenav.evaluate "$@" $args \
    --out "$out/${label}__${water}.json" > "$out/${label}__${water}.md" &
  pids+=($!)
done <<'WATERS'
large --scenario random --set large
harbour --scenario harbour --set large
currents4 --scenario random --set currents4
currents8 --scenario random --set currents8
imazu --scenario imazu
WATERS
for pid in "${pids[@]}"; do wait "$pid"; done
