#!/bin/bash
# Held-out pairs of `j1 synth mix` (runs/synth/heldout.jsonl), judged by the warmed-up model (before RL)
# and by the GRPO model (after): from the repo root, on a free lane,
#   OMP_NUM_THREADS=1 flock /tmp/j1-lane2.lock bash results/train/eval_synth_heldout.sh
set -euxo pipefail
export OMP_NUM_THREADS=${THREADS:-1}
R=runs/train
# `--benchmark generic` reads the mix rows (both orders, response_a/b + label) directly.
EVAL="--benchmark generic --data runs/synth/heldout.jsonl --format pav --samples 1 --temperature 0 --max_new_tokens 40 --limit ${LIMIT:-30} --progress false"
.venv/bin/j1 eval $EVAL --model $R/warmup-pav --out $R/synth-eval-before
.venv/bin/j1 eval $EVAL --model $R/pav-dev/final --out $R/synth-eval-after
for e in synth-eval-before synth-eval-after; do mkdir -p results/train/pav-dev/$e; cp $R/$e/metrics.json $R/$e/report.md results/train/pav-dev/$e/; done
