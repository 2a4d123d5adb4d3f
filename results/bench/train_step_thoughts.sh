#!/bin/bash
# A GRPO step with free, sampled 48-token thoughts on the embedded model: 2 pairs x 2 orders x 8
# rollouts, judge prompts of the GSM8K mismatch pairs (~300 tokens), LoRA on the last 8 blocks.
# Times 3 steps (train_runtime / steps) of whichever j1 is first on PYTHONPATH, so the same command
# measures two checkouts:
#   .venv/bin/j1 synth mismatch --source ../shared/data/gsm8k_train.jsonl --pairs 400 --seed 0 --out runs/bench/dev/train.jsonl
#   OMP_NUM_THREADS=2 bash results/bench/train_step_thoughts.sh runs/bench/dev/train.jsonl runs/bench/step-new
#   OMP_NUM_THREADS=2 PYTHONPATH=OLD_CHECKOUT/src bash results/bench/train_step_thoughts.sh runs/bench/dev/train.jsonl runs/bench/step-old
set -euo pipefail
PAIRS=$1 OUT=$2
rm -rf "$OUT"
.venv/bin/python -m j1.cli.main train --train_file "$PAIRS" --output_dir "$OUT" --max_pairs 16 \
  --template compact --max_prompt_tokens 416 --use_peft true --lora_r 16 --lora_alpha 32 --lora_dropout 0 \
  --lora_target_modules all-linear --lora_last_layers 8 --num_generations 8 --per_device_train_batch_size 32 \
  --max_completion_length 48 --temperature 1.0 --learning_rate 1e-3 --beta 0 --max_steps 3 --logging_steps 1 \
  --save_strategy no --gradient_checkpointing false --bf16 false --use_cpu true --report_to none --seed 0 >/dev/null 2>&1
.venv/bin/python -c "
import json,sys; r=json.load(open('$OUT/run.json')); m=r['train_metrics']
print(json.dumps({'out': '$OUT', 'seconds_per_step': round(m['train_runtime'] / r['global_step'], 2), 'steps': r['global_step']}))"
