#!/usr/bin/env bash
# j1 consistency on the untrained base and on the shipped judge, over the shipped response sets
# (src/j1/assets/data/consistency_gsm8k.jsonl: the first 8 GSM8K prompts, the first 4 of their 6
# responses), then j1 compare. Run from the repository root; CPU, one thread per process.
set -euo pipefail
export OMP_NUM_THREADS=1
OUT=${OUT:-runs/eval2}
PREFILL=$(printf '<think>I compare both responses with the request.</think>\n<answer>[[')

# The shipped judge: its judge.json sets pav, the digest wording, the prefill above and 8 new tokens.
.venv/bin/j1 consistency --model j1-135m --responses 4 --limit 8 --out "$OUT/consistency-j1-135m" --progress false
# The base model as a plain judge (pav, full wording, it writes its own thought; 256 new tokens).
.venv/bin/j1 consistency --model smollm2-135m --responses 4 --limit 8 --max_new_tokens 256 \
  --out "$OUT/consistency-smollm2-135m" --progress false
# The base model asked exactly as the shipped judge is (same wording, prefill, budget): the weights alone differ.
.venv/bin/j1 consistency --model smollm2-135m --template digest --assistant_prefill "$PREFILL" --max_new_tokens 8 \
  --responses 4 --limit 8 --out "$OUT/consistency-smollm2-135m-prefill" --progress false

.venv/bin/j1 compare "$OUT/consistency-smollm2-135m" "$OUT/consistency-smollm2-135m-prefill" "$OUT/consistency-j1-135m"
