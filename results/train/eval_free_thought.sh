#!/bin/bash
# The free-thought judge's numbers (results/train/README.md, "Free sampled thoughts"), asked like j1-135m
# (eval_j1_135m.sh: digest wording, greedy, one sample, both orders) except for the prefill: only "<think>",
# so the judge writes its own thought, with the 60 new tokens it was trained with (thought + answer).
#   gsm8k    the chain's 60 held-out GSM8K mismatch pairs (the kind and source it was trained on);
#   unseen   the 120 shipped held-out mismatch pairs from other sources (60 MATH, 60 Alpaca): the bar.
# Then `j1 probe` on both sets, as j1-135m was probed (the fixed thought "I compare both responses with the
# request.", the warm-up's first generic sentence, before the verdict letter).
# Run from the repository root after configs/free_thought_j1_135m.yaml:
#   OMP_NUM_THREADS=1 bash results/train/eval_free_thought.sh                  # judge = runs/free-thought/train/final
#   JUDGE=runs/free-thought/train/checkpoint-40 NAME=step40 bash results/train/eval_free_thought.sh
# Writes runs/free-thought/card/{NAME}-{set}/ (j1 eval run folders; --resume continues them) and
# runs/free-thought/card/{NAME}-probe-{set}.json.
set -euo pipefail
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} TOKENIZERS_PARALLELISM=false
JUDGE=${JUDGE:-runs/free-thought/train/final}
NAME=${NAME:-final}
ASK=(--template digest --assistant_prefill "<think>" --max_new_tokens 60 --temperature 0 --samples 1 --seed 0)
declare -A DATA=(
  [gsm8k]="runs/j1-135m/data/heldout.jsonl"
  [unseen]="src/j1/assets/data/heldout_mismatch.jsonl"
)
for set in ${SETS:-unseen gsm8k}; do
  data=${DATA[$set]}
  if [ "${PROBE_ONLY:-0}" != 1 ]; then
    .venv/bin/j1 eval --benchmark generic --data "$data" --model "$JUDGE" "${ASK[@]}" \
      --no_progress --resume --out "runs/free-thought/card/$NAME-$set" > /dev/null
    python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['overall']; print(sys.argv[2], \
      {k: m[k] for k in ('consistent_accuracy','consistent_accuracy_ci','accuracy','accuracy_ci','flip_rate','invalid_rate')})" \
      "runs/free-thought/card/$NAME-$set/metrics.json" "$NAME-$set"
  fi
  if [ "${EVAL_ONLY:-0}" != 1 ]; then
    .venv/bin/j1 probe --model "$JUDGE" --template digest --thought "I compare both responses with the request." \
      --data "$data" --no_progress --out "runs/free-thought/card/$NAME-probe-$set.json" | tail -n 5
  fi
done
