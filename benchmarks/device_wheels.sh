#!/usr/bin/env bash
# The project's dependencies as wheels for a lent GPU machine (docs/benchmarks.md, "On a GPU"):
# its Python is 3.12 with torch of its own, and it reaches no registry, so torchrl, tensordict,
# Hydra, gymnasium and what they need travel in .whl/ (ignored by git; `carry: [".whl"]`), and
# benchmarks/device_check.sh installs them there. Run here, from the repository root, with pip
# able to reach a registry:
#
#   bash benchmarks/device_wheels.sh
set -euo pipefail
dest=.whl
mkdir -p "$dest" .git/info
grep -qx "/$dest/" .git/info/exclude 2>/dev/null || echo "/$dest/" >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --dest "$dest" \
  --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  torchrl==0.14.1 tensordict==0.14.3 hydra-core==1.3.8 omegaconf==2.3.1 gymnasium==1.4.0 \
  farama-notifications==0.0.6 orjson==3.13.0 pyvers==0.2.3 importlib_metadata==10.2.0
# Hydra's parser runtime is published as a source archive only: build its (pure Python) wheel
python3 -m pip wheel -q --no-deps --wheel-dir "$dest" antlr4-python3-runtime==4.9.3
ls "$dest"
