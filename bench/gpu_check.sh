#!/usr/bin/env bash
# The GPU check of issue 42 (bench/GPU_SMOKE.md): tests, GRPO step, decoding and serving on one GPU against
# their goals, with no network and no weights; results in OUT/gpu.md and OUT/gpu.json.
#   bash bench/gpu_check.sh --prepare WHEELHOUSE   # here, with PyPI: wheels + the model's shape (no weights)
#   bash bench/gpu_check.sh WHEELHOUSE OUT         # on the GPU machine (python3 3.12 with torch+CUDA)
#   bash bench/gpu_check.sh --self-test OUT        # here, on the CPU, tiny shapes (checks the script)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: bash bench/gpu_check.sh --prepare WHEELHOUSE | WHEELHOUSE OUT | --self-test OUT"
case "${1:?$usage}" in
  --prepare)
    W=$(mkdir -p "${2:?$usage}" && cd "$2" && pwd)
    PY=${PYTHON:-$REPO/.venv/bin/python}
    # The GPU image's Python: 3.12, manylinux x86_64; --no-deps: the list is complete (the image has the rest).
    grep -v '^#' "$REPO/bench/gpu_wheels.txt" > "$W/.wheels.txt"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$W" -r "$W/.wheels.txt"
    rm -f "$W/.wheels.txt"
    cd "$REPO"
    exec "$PY" bench/gpu_check.py prepare --wheelhouse "$W"
    ;;
  --self-test)
    OUT=${2:?$usage}
    mkdir -p "$OUT" && : > "$OUT/setup.log"
    cd "$REPO"
    # 3 minutes at most on 2 cores; the steps share 170 s (gpu_check.py --budget).
    exec timeout -k 10 180 env OMP_NUM_THREADS=1 "${PYTHON:-$REPO/.venv/bin/python}" bench/gpu_check.py run \
      --self-test --out "$OUT"
    ;;
  *)
    W=$(cd "$1" && pwd)
    OUT=${2:?$usage}
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    SITE=$(mktemp -d /tmp/j1-site.XXXXXX)
    # The image keeps its torch (with CUDA); the wheels add j1's pinned stack in front of the rest.
    python3 -m pip install -q --no-index --no-deps --target "$SITE" "$W"/*.whl > "$OUT/setup.log" 2>&1 \
      || { echo "pip install from $W failed: see $OUT/setup.log" >&2; exit 1; }
    export PYTHONPATH="$SITE:$REPO/src" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    cd "$REPO"
    # 8 minutes for the steps (each under its own timeout), a little more for building the models.
    exec timeout -k 10 540 python3 bench/gpu_check.py run --wheelhouse "$W" --out "$OUT" --budget 480
    ;;
esac
