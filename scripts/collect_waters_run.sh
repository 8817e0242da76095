#!/usr/bin/env bash
# Collect a finished mixed-waters run (e.g. `python train.py agent=rainbow recipe=waters seed=N`)
# into a results folder, as the folders under results/recipes/mix/ are laid out; never a
# checkpoint.
#
#   scripts/collect_waters_run.sh RUN_DIR OUT_DIR LABEL [WATERS_DIR]
#
# Writes:
#   OUT_DIR/evaluations.jsonl            the run's validations (cpu_s: its CPU seconds)
#   OUT_DIR/sessions.jsonl               the code and machine of each session (when recorded)
#   OUT_DIR/traced_<MODEL>_model.pt      the last checkpoint's planner
#   OUT_DIR/imazu/<timestep>.md          every evaluated checkpoint on the 22 Imazu cases, in the
#                                        run's own conditions (`evaluate ... --scenario imazu`;
#                                        one already there is kept: evaluate them while it trains)
#   OUT_DIR/logs/*.csv, logs/imazu/*.csv the priced term's multiplier and cost, the pass and
#                                        check rewards, the episodes, the Imazu part's success
#   OUT_DIR/SOURCE.md                    the command, commit, machine and CPU minutes, to finish
#                                        by hand (what the run compares with)
# and the planner in every water: WATERS_DIR/LABEL__<water>.json and .md
# (scripts/waters_evaluate.sh; WATERS_DIR defaults to results/evaluations/waters).
set -euo pipefail
run=${1:?RUN_DIR}; out=${2:?OUT_DIR}; label=${3:?LABEL}
waters=${4:-results/evaluations/waters}
python=${PYTHON:-python}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$run/evaluations.jsonl" ] && [ -d "$run/evaluated" ] || {
  echo "error: $run is not a finished run with its evaluated checkpoints (checkpoint.keep_evaluated)" >&2
  exit 2
}
mkdir -p "$out/imazu" "$out/logs/imazu"
cp "$run/evaluations.jsonl" "$out/"
[ -f "$run/sessions.jsonl" ] && cp "$run/sessions.jsonl" "$out/"
"$python" -m marinenav.export "$run" --out "$out" > /dev/null
rm -rf "$out/best"        # a seed of many: the last checkpoint is what is claimed
find "$out" -name checkpoint.pt -delete
for t in $(ls "$run/evaluated" | sort -n); do   # a record already there (non-empty) is kept
  [ -s "$out/imazu/$t.md" ] && continue
  tmp="$out/imazu/.$t.md.$$.tmp"   # this process's own: another may evaluate the same one
  "$python" -m marinenav.evaluate "$run/evaluated/$t" --scenario imazu > "$tmp"
  mv "$tmp" "$out/imazu/$t.md"
done
train="$run/logs/scalars/train"
for name in multiplier_passed_ahead cost_passed_ahead episodes reward_passed_ahead \
            reward_give_way_check; do
  [ -f "$train/$name.csv" ] && cp "$train/$name.csv" "$out/logs/"
done
for name in success_rate episodes reward_passed_ahead reward_give_way_check; do
  [ -f "$train/imazu/$name.csv" ] && cp "$train/imazu/$name.csv" "$out/logs/imazu/"
done
planner=$(ls "$out"/traced_*_model.pt | head -n 1)
bash "$here/waters_evaluate.sh" "$label" "$waters" --planner "$planner"
"$python" - "$run" "$out" "$label" "$waters" <<'PY'
import json, sys
from pathlib import Path

import yaml

from marinenav.training.machine import read_sessions

run, out, label, waters = (Path(a) for a in sys.argv[1:])
overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text())
last = json.loads((run / "evaluations.jsonl").read_text().splitlines()[-1])
sessions = read_sessions(run)
lines = [f"# {label}", "", "    python train.py " + " ".join(overrides), ""]
for s in sessions:
    code = f"commit {s['commit']}" + (" (with uncommitted changes)" if s["dirty"] else "")
    lines.append(f"- from timestep {s['timestep']:,} at {s['time']}: {code}, {s['cpu']} "
                 f"({s['logical_cores']} logical cores, {s['threads']} torch threads), "
                 f"torch {s['torch']}, host {s['host']}")
if not sessions:
    lines.append("- (no sessions.jsonl: the run predates it; name the commit and machine here)")
lines += ["", f"{last['cpu_s'] / 60:.1f} CPU minutes to timestep {last['timestep']:,} (the last "
          "validation's `cpu_s`). The planner in every water: "
          f"`{waters}/{label}__*`.", ""]
(out / "SOURCE.md").write_text("\n".join(lines))
PY
echo "collected $run into $out (finish $out/SOURCE.md by hand)"
