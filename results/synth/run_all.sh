#!/bin/bash
# The real runs of issue 4 (results/synth/README.md): chat pairs, math pairs, then the mix, one after
# another under ONE hold of the heavy-job lock, one torch thread, the embedded model (SmolLM2-135M).
# Each step is time-boxed with --max_minutes (no new chunk starts after it; a started chunk is
# finished, so a step can run a few minutes past its box) and resumable: rerun to extend it.
# STOP_AT (UTC) is when everything should have ended: chat goes first (it feeds training), math gets
# the time that is left. Usage: results/synth/run_all.sh   (env: OUT, STOP_AT, THREADS, LIMIT)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -n "${J1_LOCKED:-}" ] || exec env J1_LOCKED=1 flock /tmp/j1-heavy.lock "$0" "$@"
OUT=${OUT:-runs/synth2}
STOP_AT=${STOP_AT:-10:55}
LIMIT=${LIMIT:-200}
export OMP_NUM_THREADS=${THREADS:-1}
minutes_left() { echo $(( ($(date -u -d "$STOP_AT" +%s) - $(date -u +%s)) / 60 )); }
mkdir -p "$OUT"
echo "started $(date -u +%H:%M:%S), $(minutes_left) min to $STOP_AT"

# chat: a 16-prompt chunk takes ~5 min on one thread; leave math at least ~15 min
chat_box=$(( $(minutes_left) - 20 )); [ "$chat_box" -ge 3 ] || chat_box=3
set -x
.venv/bin/j1 synth chat --source ../shared/data/alpaca_en_demo_llamafactory.json --limit "$LIMIT" \
  --temperature 0.7 --top_p 0.95 --max_new_tokens 160 \
  --rewrite_samples 3 --rewrite_temperature 0.8 --rewrite_max_new_tokens 80 \
  --batch_rows 32 --chunk_size 16 --seed 0 --max_minutes "$chat_box" --progress false \
  --out "$OUT/chat.jsonl"
{ set +x; } 2>/dev/null
# math: a 16-row batch (4 problems x 4 samples) takes ~2-3 min; the mix ~1 min
math_box=$(( $(minutes_left) - 5 )); [ "$math_box" -ge 2 ] || math_box=2
set -x
.venv/bin/j1 synth math --source ../shared/data/gsm8k_train.jsonl --limit "$LIMIT" \
  --samples 4 --temperature 0.8 --top_p 0.95 --max_new_tokens 200 --batch_rows 16 --seed 0 \
  --max_minutes "$math_box" --progress false --out "$OUT/math.jsonl"
.venv/bin/j1 synth mix --inputs "$OUT/chat.jsonl:all" "$OUT/math.jsonl:all" \
  --out_dir "$OUT" --heldout_fraction 0.2 --seed 0
{ set +x; } 2>/dev/null
echo "done $(date -u +%H:%M:%S)"
