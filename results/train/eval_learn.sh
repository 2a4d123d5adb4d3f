#!/bin/bash
# Held-out judge metrics before and after the learning run (results/train/README.md, "Learning run"):
#   OMP_NUM_THREADS=1 flock /tmp/j1-lane2.lock bash results/train/eval_learn.sh
# The held-out file is the `j1 synth mix` output written by run_learn.sh (chat pairs split by prompt +
# GSM8K mismatch pairs of disjoint questions); `--benchmark generic` reads mix rows directly.
set -euxo pipefail
export OMP_NUM_THREADS=${THREADS:-1}
R=runs/train
EVAL="--benchmark generic --data $R/learn-data/heldout.jsonl --format pav --max_new_tokens 40 --progress false"
for m in before:$R/warmup-pav after:$R/pav-learn/final; do
  name=${m%%:*} model=${m#*:}
  .venv/bin/j1 eval $EVAL --samples 1 --temperature 0 --model $model --out $R/learn-eval-$name --resume
done
mkdir -p results/train/pav-learn
cp $R/pav-learn/log.jsonl $R/pav-learn/run.json $R/warmup-pav/warmup.json results/train/pav-learn/
for e in learn-eval-before learn-eval-after; do
  mkdir -p results/train/pav-learn/$e; cp $R/$e/metrics.json $R/$e/report.md results/train/pav-learn/$e/
done
.venv/bin/python results/train/plot_curve.py $R/pav-learn/log.jsonl results/train/reward_curve_pav_learn.png
