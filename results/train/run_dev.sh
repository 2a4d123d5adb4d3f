#!/bin/bash
# Reproduces the CPU learning run of results/train/LOG.md. From the repo root, under ONE hold of
# the heavy-job lock:   flock /tmp/j1-heavy.lock bash results/train/run_dev.sh
# One torch thread: on the shared 2-core box, 2 spin-waiting OpenMP threads per process were 16x slower.
set -euxo pipefail
export OMP_NUM_THREADS=${THREADS:-1}
J1=.venv/bin/j1
R=runs/train
EVAL="--benchmark generic --data $R/dev/heldout.jsonl --format pav --samples 1 --temperature 0 --max_new_tokens 40 --limit 40 --progress false"
.venv/bin/python results/train/make_dev_pairs.py ../shared/data/gsm8k_train.jsonl $R/dev
# 1. label-free format warm-up (random verdicts, one-sentence thoughts); valid-output rate before/after
$J1 warmup --config results/train/configs/warmup_pav_smollm2.yaml
# 2. held-out judge metrics of the warmed-up model (before RL)
$J1 eval $EVAL --model $R/warmup-pav --out $R/eval-before
# 3. J1 GRPO (LoRA, pair-level advantages), time-boxed
$J1 train --config results/train/configs/pav_smollm2_cpu.yaml --train_file $R/dev/train.jsonl --output_dir $R/pav-dev \
  --report_to none
# 4. the same held-out metrics after RL
$J1 eval $EVAL --model $R/pav-dev/final --out $R/eval-after
.venv/bin/python results/train/plot_curve.py $R/pav-dev/log.jsonl results/train/reward_curve_pav_dev.png
mkdir -p results/train/pav-dev
cp $R/warmup-pav/warmup.json $R/pav-dev/log.jsonl $R/pav-dev/run.json results/train/pav-dev/
for e in eval-before eval-after; do mkdir -p results/train/pav-dev/$e; cp $R/$e/metrics.json $R/$e/report.md results/train/pav-dev/$e/; done
# 5. j1's GRPO step vs plain TRL's on the embedded model, same settings (1 pair x 2 orders x 4 rollouts)
.venv/bin/python bench/bench_train_step.py --steps 2 --batch 8 --max_completion_length 40 --json results/train/bench_smollm2.json
# 6. the held-out pairs of `j1 synth mix` (chat pairs), before and after RL
LIMIT=10 bash results/train/eval_synth_heldout.sh
