#!/usr/bin/env bash
# The loop closed: start `j1 serve` on the shipped judge, wait for /health, train the embedded policy
# with GRPO against it (results/serve/closed_loop.py), then stop the server with SIGTERM.
#   bash results/serve/closed_loop.sh [OUT] [extra closed_loop.py flags, e.g. --steps 2]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-results/serve/closed_loop}
shift || true
PORT=${PORT:-8765}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
.venv/bin/j1 serve --model j1-135m --port "$PORT" --max_batch 32 >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" || true' EXIT
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { echo "j1 serve exited; see $OUT/serve.log" >&2; exit 1; }
  sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { echo "j1 serve did not answer /health" >&2; exit 1; }
.venv/bin/python results/serve/closed_loop.py --serve-url "http://127.0.0.1:$PORT" --out "$OUT" "$@"
