#!/usr/bin/env bash
# The lever table of docs/results.md ("Levers, one at a time") from the collected runs in
# results/recipes/: each --lever is NAME, the runs with the change, the runs without it
# (comma-separated, paired by the seed<N> their names end in).
#
#   scripts/lever_table.sh            # prints the Markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python}
A=results/recipes/ac_iqn
C=$A/candidates
L=$A/levers
seeds() { # seeds PREFIX N...: PREFIX0,PREFIX1,... for the given seeds
  local prefix=$1; shift; local out=""
  for s in "$@"; do out+="${out:+,}${prefix}${s}"; done
  echo "$out"
}
"$python" benchmarks/lever_table.py --min-seeds 3 \
  --lever "AC-IQN: Polyak targets, tau 0.005 (vs hard copies every 10k), the default" \
    "$(seeds $A/seed 0 1 2)" "$(seeds $L/hard_copies_seed 0 1 2)" \
  --lever "AC-IQN: learning rate decaying to a tenth (vs constant 3e-4), the default" \
    "$(seeds $A/seed 0 1 2)" "$(seeds $L/constant_lr_seed 0 1 2)" \
  --lever "AC-IQN: scaled inputs (vs raw), the default" \
    "$(seeds $A/seed 0 1 2)" "$(seeds $L/raw_inputs_default_seed 0 1 2)" \
  --lever "AC-IQN: Adam 3e-4 (vs 1e-4), risk neutral, 800k" \
    "$L/lr3e-4_seed0" "$C/adam1e-4_800k_seed0" \
  --lever "AC-IQN: raw inputs (vs scaled), Adam 1e-4, risk neutral, 800k" \
    "$L/raw_inputs_seed0" "$C/adam1e-4_800k_seed0" \
  --lever "AC-IQN: CVaR 0.25 actor (vs risk neutral), 480k" \
    "$(seeds $C/cvar0.25_480k_seed 0 1 2)" "$(seeds $C/lr3e-4_480k_seed 0 1 2)" \
  --lever "AC-IQN: CVaR 0.5 actor (vs risk neutral), 480k" \
    "$(seeds $C/cvar0.5_480k_seed 0 1 2)" "$(seeds $C/lr3e-4_480k_seed 0 1 2)" \
  --lever "AC-IQN: discount 0.995 (vs 0.99), CVaR 0.25, 480k" \
    "$(seeds $C/g0.995_480k_seed 0 1 2)" "$(seeds $C/cvar0.25_480k_seed 0 1 2)" \
  --lever "AC-IQN: last stage 240k (vs 160k), i.e. 560k (vs 480k), the default" \
    "$(seeds $A/seed 0 1 2)" "$(seeds $C/g0.995_480k_seed 0 1 2)" \
  --lever "AC-IQN: last stage 320k (vs 160k), i.e. 640k (vs 480k), risk neutral" \
    "$(seeds $C/lr3e-4_640k_seed 0 1 2)" "$(seeds $C/lr3e-4_480k_seed 0 1 2)" \
  --lever "AC-IQN: last stage 160k (vs 480k), i.e. 480k (vs 800k), risk neutral" \
    "$C/lr3e-4_480k_seed0" "$L/lr3e-4_seed0" \
  --lever "AC-IQN fifteen-minute: the weight average over the last stage (vs its last network), H vs G" \
    "$(seeds $L/fifteen_H_seed 0 1 2 3 4 5 6 7 8 9)" "$(seeds $L/fifteen_G_seed 0 1 2 3 4 5 6 7 8 9)" \
  --lever "AC-IQN fifteen-minute: the average sampled every 1,000 timesteps (vs at the 7 evaluations), I vs H" \
    "$(seeds $L/fifteen_I_seed 0 1 2 3 4 5 6 7 8 9)" "$(seeds $L/fifteen_H_seed 0 1 2 3 4 5 6 7 8 9)" \
  --lever "AC-IQN: the Optuna study's best, trial 0 (Adam 2.5e-4, raw inputs, lr to 0.73, tau 0.0125; vs the default's values), 560k" \
    "$(seeds $L/optuna_trial0_seed 0 1 2)" "$(seeds $A/seed 0 1 2)" \
  --lever "AC-IQN: trial 0's values with scaled inputs (vs raw, trial 0 itself), 560k" \
    "$(seeds $L/optuna_trial0_scaled_seed 0 1 2)" "$(seeds $L/optuna_trial0_seed 0 1 2)" \
  --lever "AC-IQN: trial 0's values with scaled inputs (vs the default's values), 560k" \
    "$(seeds $L/optuna_trial0_scaled_seed 0 1 2)" "$(seeds $A/seed 0 1 2)" \
  --lever "AC-IQN: 320 environments (vs 16), the default, one CPU core" \
    "$(seeds $L/e320_seed 0 1 2)" "$(seeds $A/seed 0 1 2)" \
  --lever "AC-IQN, 320 environments: trained on an H200 with CUDA graphs (vs one CPU core), the default" \
    "$(seeds $A/gpu/h200_e320_seed 0 1)" "$(seeds $L/e320_seed 0 1)" \
  --lever "SAC: 3-step returns (vs one-step), 480k" \
    "$(seeds results/recipes/sac/seed 0 1 2)" "$(seeds results/recipes/sac/candidates/lr3e-4_g0.995_480k_seed 0 1 2)" \
  --lever "DDPG: the weight average over the last stage (vs its last network), the fast part" \
    "$(seeds results/recipes/ddpg/averaged_seed 2 3 4)" "$(seeds results/recipes/ddpg/seed 2 3 4)" \
  --lever "SAC: the weight average over the last stage (vs its last network), the fast part" \
    "$(seeds results/recipes/sac/averaged_seed 2 3 4)" "$(seeds results/recipes/sac/seed 2 3 4)" \
  --lever "DQN: the weight average over the last third, from 533,333 (vs its last network), the fast part" \
    "$(seeds results/recipes/dqn/averaged_seed 2 3 4)" "$(seeds results/recipes/dqn/seed 2 3 4)" \
  --lever "Rainbow: the weight average over the last stage (vs its last network), the fast part" \
    "$(seeds results/recipes/rainbow/averaged_seed 2 3 4)" "$(seeds results/recipes/rainbow/seed 2 3 4)" \
  --lever "IQN: the weight average over the last third, from 533,333 (vs its last network), the fast part" \
    "$(seeds results/recipes/iqn/averaged_seed 2 3 4)" "$(seeds results/recipes/iqn/seed 2 3 4)" \
  --lever "Rainbow: acting on CVaR 0.25 (vs the mean), the fast part's last networks as planners (float64, noise seed 253)" \
    "$(seeds results/recipes/rainbow/cvar0.25/seed 0 1 2 3 4)" "$(seeds results/recipes/rainbow/cvar0.25/mean_seed 0 1 2 3 4)" \
  --lever "IQN: collecting on the mean (vs on CVaR 0.25 too), acting on CVaR 0.25, the fast part (its recipe since 2026-11-27)" \
    "$(seeds results/recipes/iqn/collect_mean/seed 0 1 2 3 4)" "$(seeds results/recipes/iqn/seed 0 1 2 3 4)" \
  --lever "IQN collecting on the mean: acting on CVaR 0.25 (vs the mean), the same last networks" \
    "$(seeds results/recipes/iqn/collect_mean/seed 0 1 2 3 4)" "$(seeds results/recipes/iqn/collect_mean/mean_seed 0 1 2 3 4)" \
  --lever "IQN: the quick recipe, 400k, 64 environments, the last stage's weight average (vs the fast part's 800k, its last network)" \
    "$(seeds results/recipes/iqn/quick/seed 0 1 2 3 4 5 6)" "$(seeds results/recipes/iqn/collect_mean/seed 0 1 2 3 4 5 6)" \
  --lever "IQN on the quick recipe: the weight average over the last stage (vs its last network)" \
    "$(seeds results/recipes/iqn/quick/seed 0 1 2 3 4 5 6 7 8 9)" "$(seeds results/recipes/iqn/quick/online_seed 0 1 2 3 4 5 6 7 8 9)" \
  --lever "DDPG: 480k (vs 800k)" \
    "$(seeds results/recipes/ddpg/seed 0 1 2)" "$(seeds results/recipes/ddpg/candidates/800k_seed 0 1 2)"
