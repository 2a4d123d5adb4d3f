#!/bin/bash
# The evaluations of results/train/thinking.md for one judge: the 190 pairs with MATH's reference sent (MATH and
# LLMBar are sources no judge here trained on; Alpaca is other items of a trained source), the 60 MATH pairs
# without it, and with S8=1 the test-time scaling run (8 samples at T = 1, majority verdict) on the unseen pairs.
#   NAME=c JUDGE=runs/think/c-sft bash results/train/thinking_eval.sh     # -> runs/think/eval/c-{ref,noref}
# Data: python results/train/thinking_data.py (its docstring). One thread per job.
set -euo pipefail
J1=${J1:-.venv/bin/j1}
E=${E:-runs/think/eval}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1} TOKENIZERS_PARALLELISM=false
$J1 eval --model "$JUDGE" --benchmark generic --data $E/bar.jsonl --use_reference true --out $E/$NAME-ref
$J1 eval --model "$JUDGE" --benchmark generic --data $E/math.jsonl --use_reference false --out $E/$NAME-noref
if [ "${S8:-0}" = 1 ]; then
  $J1 eval --model "$JUDGE" --benchmark generic --data $E/unseen.jsonl --use_reference true --samples 8 \
    --temperature 1.0 --out $E/$NAME-s8
fi
