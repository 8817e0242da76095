#!/usr/bin/env bash
# The checks that need a CUDA device, in one go, for a lent GPU machine (docs/benchmarks.md,
# "On a GPU"). Run from the repository root with the project's wheels for that machine's Python
# in .whl/ (benchmarks/device_wheels.sh, run here first; torch is the machine's own); each part
# writes $OUT/<part>.txt and a failing part does not stop the next.
#
#   OUT=/tmp/out bash benchmarks/device_check.sh [PART ...]
#   # parts: tests sim train run recipe compiled mixed
#
# XDIST=N runs the tests in N processes (pytest-xdist); AGENT (ac_iqn), SEED (0) and
# RECIPE_LIMIT (seconds, 330) set the recipe part's agent, seed and time limit.
set -u
out=${OUT:-/tmp/device_check}; mkdir -p "$out"
parts=${*:-tests sim train run}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
part() { echo "=== $1 $(date +%T)"; }
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
  python3 -c "import torch, torchrl, tensordict; print('torch', torch.__version__, 'torchrl', \
torchrl.__version__, 'tensordict', tensordict.__version__, torch.cuda.get_device_name())"
} 2>&1 | tee "$out/machine.txt"
for p in $parts; do
  part "$p"
  case $p in
    tests)  # every test marked cuda (skipped on a machine without one)
      timeout 200 python3 -m pytest -q -m cuda -p no:cacheprovider -rs ${XDIST:+-n $XDIST} \
        tests/test_no_host_sync.py tests/test_generation.py tests/test_nstep.py \
        tests/test_prioritized_sampler.py tests/test_agent_rainbow.py tests/test_env.py \
        tests/test_compile.py tests/test_training.py ;;
    sim)    # simulator robot-steps/s, eager, 5 robots 4 obstacles, no cores
      timeout 120 python3 benchmarks/sim_throughput.py --device cuda --envs 1024 8192 65536 \
        --cores 0 --paths eager --seconds 2 ;;
    train)  # AC-IQN's three tiers on one CPU core of the same machine, on the GPU, then on the
            # GPU with the env step and the update replayed as CUDA graphs
      timeout 60 python3 benchmarks/train_throughput.py --agent ac_iqn --envs 16 --seconds 4
      timeout 150 python3 benchmarks/train_throughput.py --agent ac_iqn --device cuda \
        --envs 16 256 4096 --seconds 4
      timeout 100 python3 benchmarks/train_throughput.py --agent ac_iqn --device cuda \
        --envs 256 4096 --seconds 4 --set cudagraphs=true ;;
    run)    # train.py end to end on the GPU: collect, update, evaluate, checkpoint (eager at
            # E = 256 did not finish 102,400 timesteps in 150 s on an H100: CUDA graphs)
      timeout 150 python3 train.py agent=ac_iqn device=cuda cudagraphs=true seed=0 env.num_envs=256 \
        training.total_timesteps=102400 evaluation.first=102400 evaluation.interval=102400 \
        checkpoint.interval=102400 logger.progress_bar=false hydra.run.dir=/tmp/gpu_run \
        && tail -3 /tmp/gpu_run/evaluations.jsonl | cut -c1-200 ;;
    recipe) # the default AC-IQN recipe end to end on the GPU, 320 environments (560,000 and
            # the evaluation interval are whole numbers of batched steps of 320; 256 is refused),
            # CUDA graphs. The run's small files (last four evaluated agents, best, evaluations,
            # log; no checkpoint) come back as $out/recipe_<agent>_seed<S>.tar.gz for the large-set
            # evaluation (scripts/collect_recipe_run.sh, after copying the last evaluated agent
            # to checkpoint.pt for the exporter)
      run=/tmp/gpu_recipe_${AGENT:-ac_iqn}_seed${SEED:-0}; TIMEFORMAT="recipe wall_s=%R cpu_s=%U+%S"
      time timeout "${RECIPE_LIMIT:-330}" python3 train.py agent="${AGENT:-ac_iqn}" seed="${SEED:-0}" \
        device=cuda cudagraphs=true env.num_envs=320 logger.progress_bar=false \
        hydra.run.dir="$run"
      echo "train.py rc=$?"
      if [ -d "$run/evaluated" ]; then
        tail -2 "$run/evaluations.jsonl" | cut -c1-300
        (cd "$run/evaluated" && ls | sort -n | head -n -4 | xargs -r rm -rf)
        tar czf "$out/recipe_${AGENT:-ac_iqn}_seed${SEED:-0}.tar.gz" --exclude=./checkpoint.pt \
          -C "$run" .
      fi ;;
    compiled) # the compiled simulator step, and compiled updates replayed as CUDA graphs, each
              # beside its uncompiled twin (the first steps compile: allow minutes; on an H200
              # E = 8192 compiled in 47 s and E = 65536 did not finish inside 150 s)
      timeout 300 python3 benchmarks/sim_throughput.py --device cuda --envs 8192 65536 \
        --cores 0 --paths eager compiled --seconds 2
      for extra in "" compile=true; do
        timeout 200 python3 benchmarks/train_throughput.py --agent ac_iqn --device cuda \
          --envs 320 --seconds 4 --set cudagraphs=true $extra
      done ;;
    mixed)  # the best mixed recipe's training loop (recipe=waters, docs/training.md):
            # Rainbow's update is not one CUDA graph (noisy layers draw from a generator of
            # their own), so eager and compile=true, at the recipe's 16 environments and at 256,
            # beside one CPU core of the same machine
      timeout 60 python3 benchmarks/train_throughput.py --agent rainbow --envs 16 --seconds 4 \
        --set recipe=waters
      timeout 100 python3 benchmarks/train_throughput.py --agent rainbow --device cuda \
        --envs 16 256 --seconds 4 --set recipe=waters
      timeout 200 python3 benchmarks/train_throughput.py --agent rainbow --device cuda \
        --envs 16 --seconds 4 --set recipe=waters compile=true ;;
  esac 2>&1 | tee "$out/$p.txt"
done
