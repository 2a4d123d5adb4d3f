#!/usr/bin/env bash
# Baseline: the embedded SmolLM2-135M-Instruct judged zero-shot on the dev slices in ../shared/data.
# Run from the repo root:  OMP_NUM_THREADS=1 flock /tmp/j1-heavy.lock bash results/eval-baseline/run_baseline.sh
# (on the shared 2-core box it ran on the lead's second lane, /tmp/j1-lane2.lock, with OMP_NUM_THREADS=1)
# Each run writes runs/eval-baseline/<name>/ (gitignored); its report.md is copied here (table.py reads it).
# --model smollm2-135m: the untrained base (j1 eval's default judge has been j1-135m since it shipped).
set -euo pipefail
J1=.venv/bin/j1
DATA=../shared/data
COMMON="--model smollm2-135m --max-new-tokens 128 --seed 0 --batch-rows 16"
run() {  # name, then j1 eval arguments
  local name=$1; shift
  local out=runs/eval-baseline/$name
  echo "=== $name: $(date -u +%H:%M:%S)"
  $J1 eval "$@" $COMMON --out "$out" --resume --progress false
  mkdir -p results/eval-baseline/$name
  cp "$out"/report.md results/eval-baseline/$name/
}
run judgebench_dev_pav --benchmark judgebench --data $DATA/judgebench_dev.jsonl --format pav --limit 10
run llmbar_dev_pav     --benchmark llmbar     --data $DATA/llmbar_dev.jsonl     --format pav --limit 20
run rmbench_dev_pos    --benchmark rmbench    --data $DATA/rmbench_dev.jsonl    --format pos --limit 5
run llmbar_dev_pos     --benchmark llmbar     --data $DATA/llmbar_dev.jsonl     --format pos --limit 20
run pandalm_dev_pav    --benchmark pandalm    --data $DATA/pandalm_dev.jsonl    --format pav --limit 20
run hh_rlhf_dev_pav    --benchmark hh_rlhf    --data $DATA/hh_rlhf_harmless_dev.jsonl --format pav --limit 20
run rmbench_dev_pav    --benchmark rmbench    --data $DATA/rmbench_dev.jsonl    --format pav --limit 2
echo "=== done: $(date -u +%H:%M:%S)"
