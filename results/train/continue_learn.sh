#!/bin/bash
# Continue the learning run of run_learn.sh from its newest checkpoint for MINUTES more minutes (the
# same flags; TRL restores the optimizer, scheduler, RNG and data order), then it can be evaluated:
#   OMP_NUM_THREADS=1 flock /tmp/j1-lane2.lock bash results/train/continue_learn.sh
set -euxo pipefail
export OMP_NUM_THREADS=${THREADS:-1}
R=runs/train
D=$R/learn-data
.venv/bin/j1 train --config configs/train/pav_smollm2_cpu.yaml --train_file $D/train.jsonl --output_dir $R/pav-learn \
  --lora_last_layers ${LAYERS:-6} --num_generations 2 --per_device_train_batch_size 8 \
  --learning_rate ${LR:-3e-4} --max_prompt_tokens 512 --max_steps ${STEPS:-300} --max_minutes ${MINUTES:-25} \
  --save_steps 20 --report_to none --resume_from_checkpoint latest
