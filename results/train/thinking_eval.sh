#!/bin/bash
# The evaluations of results/train/thinking.md for one judge: the 130 pairs of sources no judge here trained on
# (60 MATH, with its reference sent, and 70 LLMBar; DATA=bar adds 60 Alpaca items of a trained source), the 60
# MATH pairs without the reference, and with S8=1 the test-time scaling run (8 samples at T = 1, majority
# verdict) on the MATH pairs with the reference.
#   NAME=c JUDGE=runs/think/c-sft bash results/train/thinking_eval.sh     # -> runs/think/eval/c-{ref,noref}
#   NAME=b JUDGE=j1-135m DATA=bar bash results/train/thinking_eval.sh     # the shipped judge, Alpaca too
# Data: python results/train/thinking_data.py (its docstring). One thread per job.
set -euo pipefail
J1=${J1:-.venv/bin/j1}
E=${E:-runs/think/eval}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1} TOKENIZERS_PARALLELISM=false
$J1 eval --model "$JUDGE" --benchmark generic --data $E/${DATA:-unseen}.jsonl --use_reference true --out $E/$NAME-ref
$J1 eval --model "$JUDGE" --benchmark generic --data $E/math.jsonl --use_reference false --out $E/$NAME-noref
if [ "${S8:-0}" = 1 ]; then
  $J1 eval --model "$JUDGE" --benchmark generic --data $E/math.jsonl --use_reference true --samples 8 \
    --temperature 1.0 --out $E/$NAME-s8
fi
