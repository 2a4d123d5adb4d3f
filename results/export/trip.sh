#!/usr/bin/env bash
# The export trip on the 120 shipped held-out pairs: j1-135m judged locally (fp32), then exported as GGUF
# (F16 and Q8_0), served by llama.cpp's server and judged through it with --judge; verdicts compared per
# order. Needs the llamacpp extra (make test-engine builds it). About 30 min on 2 busy cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-runs/export-trip}
DATA=src/j1/assets/data/heldout_mismatch.jsonl
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
.venv/bin/j1 eval --benchmark generic --data $DATA --out "$OUT/local" --no_progress
for type in F16 Q8_0; do
  .venv/bin/j1 export judge j1-135m --gguf "$OUT/j1-135m-$type.gguf" --gguf_type $type
  .venv/bin/python -m llama_cpp.server --model "$OUT/j1-135m-$type.gguf" --model_alias j1-135m --port 8391 \
    --n_ctx 4096 --n_threads 1 > "$OUT/server-$type.log" 2>&1 &
  server=$!
  until curl -sf http://127.0.0.1:8391/v1/models > /dev/null; do sleep 1; done
  .venv/bin/j1 eval --benchmark generic --data $DATA --base-url http://127.0.0.1:8391/v1 --judge j1-135m \
    --concurrency 2 --out "$OUT/served-$type" --no_progress
  kill $server; wait $server || true
  .venv/bin/python results/export/agreement.py "$OUT/local" "$OUT/served-$type" > "$OUT/agreement-$type.json"
done
# A merged export (bf16) judged locally, against the adapter it came from.
.venv/bin/j1 export judge j1-135m --out "$OUT/merged" --merged
.venv/bin/j1 eval --benchmark generic --data $DATA --model "$OUT/merged" --out "$OUT/local-merged" --no_progress
.venv/bin/python results/export/agreement.py "$OUT/local" "$OUT/local-merged" > "$OUT/agreement-merged.json"
