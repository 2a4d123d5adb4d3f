#!/bin/bash
# j1 attack on the shipped judge (j1-135m) and on its untrained base (smollm2-135m), asked the same way:
# the shipped judge's manifest settings (digest wording, its fixed thought and "<answer>[[" as prefill,
# 8 new tokens, greedy), written out so that the base gets them too. Data: the shipped 60 GSM8K test
# rows (src/j1/assets/data/gsm8k_test_mismatch.jsonl), the first $LIMIT of them.
# Run from the repository root:
#   LIMIT=6 bash results/attack/run_attack.sh            # both judges, one after the other
#   LIMIT=6 WHICH=base bash results/attack/run_attack.sh
# Writes runs/attack/{judge,base}/ (--resume continues them; a larger LIMIT adds rows to a finished run).
set -euo pipefail
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} TOKENIZERS_PARALLELISM=false
PREFILL=$'<think>I compare both responses with the request.</think>\n<answer>[['
ASK=(--template digest --assistant_prefill "$PREFILL" --max_new_tokens 8 --temperature 0 --samples 1 --seed 0)
declare -A MODEL=([judge]=j1-135m [base]=smollm2-135m)
for who in ${WHICH:-judge base}; do
  .venv/bin/j1 attack --model "${MODEL[$who]}" "${ASK[@]}" --limit "${LIMIT:-6}" --resume --no_progress \
    --out "runs/attack/$who" > /dev/null
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], \
    {k: r['overall'][k] for k in ('n','false_preference_rate','consistent_false_preference_rate','invalid_rate')})" \
    "runs/attack/$who/report.json" "$who"
done
