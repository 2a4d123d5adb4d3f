#!/bin/bash
# The CPU learning runs of results/train/LOG.md: from the repo root, on a free lane,
#   OMP_NUM_THREADS=1 flock /tmp/j1-lane2.lock bash results/train/run_learn.sh            # run 2
# Needs the warmed-up model ($WARMUP, `j1 warmup --config results/train/configs/warmup_pav_smollm2.yaml`), the synth
# chat pairs ($CHAT, results/synth/) and the GSM8K mismatch pairs (j1 synth mismatch --source gsm8k_train.jsonl --seed 0).
# Environment (defaults = run 2): RUN (output folder under runs/train), DATA (data folder under
# runs/train), CHAT, CHAT_HELDOUT (held-out share of the chat prompts), N_DEV / N_DEV_HELD (mismatch
# pairs for training / held out), TEMPLATE (judge wording), WARMUP, PAIRS (pairs per step), LAYERS,
# LR, STEPS, MINUTES, MAXP (max prompt tokens), MAXC (max completion tokens), THREADS (torch threads),
# G (rollouts per order, default 2), PAIR_ADV (true: advantages over the pair's 2G rollouts; false:
# TRL's groups, one per order), STOP (true: --loss_span to_answer, no loss on tokens after </answer>),
# BETA (TRL's KL coefficient to the warmed-up model), TOPENT (TRL's top_entropy_quantile: the policy
# loss only on that share of the highest-entropy completion tokens); unset, the config's values apply.
# ANSWER_ONLY (true: --loss_span answer, the policy loss only on the answer span, not the thought).
# COUPLES (true: --advantage_groups couple, advantages within each couple of rollout k of AB and rollout k of
# BA), CONSIST (the consistency reward mode, expected or index), INVALID_ADV (--invalid_advantage: the
# advantage of a rollout with no verdict, which then leaves the baseline), LR_WARMUP (steps of linear
# learning-rate warm-up, then constant).
# BALANCE (--position_balance: the strength of the restoring force on the position preference).
# STOPADV (--stop_advantage: the advantage -X on a token written after </answer> in place of the EOS).
# PREFILL (--assistant_prefill: the fixed start of every answer, e.g. a thought and "<answer>[[";
# only the rest is sampled and trained; eval_learn.sh takes the same PREFILL).
# THREADS sets both OMP_NUM_THREADS and MKL_NUM_THREADS (before session 10 only OMP's, and the
# README's `export MKL_NUM_THREADS=1` kept the matrix products of "THREADS=2" runs on one core).
# RESUME=1 continues the run from its newest checkpoint for MINUTES more (same flags; TRL restores the
# optimizer, scheduler, RNG and data order). The data step is skipped when resuming or when
# $D/train.jsonl already exists (it is deterministic: seed 0).
set -euxo pipefail
export OMP_NUM_THREADS=${THREADS:-1} MKL_NUM_THREADS=${THREADS:-1}
J1=.venv/bin/j1
R=runs/train
D=$R/${DATA:-learn-data}
mkdir -p $D
if [ -z "${RESUME:-}" ] && [ ! -s $D/train.jsonl ]; then
# Training pairs: the j1 synth chat pairs (split by prompt) + GSM8K mismatch pairs, both orders.
$J1 synth mix --inputs ${CHAT:-runs/synth/chat.jsonl}:all --out_dir $D/chat --heldout_fraction ${CHAT_HELDOUT:-0.3} --seed 0
$J1 synth mix --inputs $R/dev/train.jsonl:${N_DEV:-160} --out_dir $D/dev --heldout_fraction 0 --seed 0
$J1 synth mix --inputs $R/dev/heldout.jsonl:${N_DEV_HELD:-40} --out_dir $D/dev-heldout --heldout_fraction 0 --seed 0
cat $D/chat/train.jsonl $D/dev/train.jsonl > $D/train.jsonl
cat $D/chat/heldout.jsonl $D/dev-heldout/train.jsonl > $D/heldout.jsonl
fi
# J1 GRPO: LoRA on the last LAYERS blocks, PAIRS pairs x 2 orders x G rollouts per step.
G=${G:-2}
# The lab's booleans as today's named choices (j1 train --help): PAIR_ADV/COUPLES -> --advantage_groups,
# STOP/ANSWER_ONLY -> --loss_span.
GROUPS=pair; [ "${PAIR_ADV:-true}" = false ] && GROUPS=prompt; [ "${COUPLES:-false}" = true ] && GROUPS=couple
SPAN=all; [ "${STOP:-false}" = true ] && SPAN=to_answer; [ "${ANSWER_ONLY:-false}" = true ] && SPAN=answer
$J1 train --config results/train/configs/pav_smollm2_cpu.yaml --train_file $D/train.jsonl --output_dir $R/${RUN:-pav-learn} \
  --model_name_or_path ${WARMUP:-$R/warmup-pav} --template ${TEMPLATE:-full} \
  --lora_last_layers ${LAYERS:-6} --num_generations $G --per_device_train_batch_size $(( 2 * G * ${PAIRS:-2} )) \
  --advantage_groups $GROUPS --loss_span $SPAN \
  ${CONSIST:+--consistency $CONSIST} ${INVALID_ADV:+--invalid_advantage $INVALID_ADV} \
  ${BALANCE:+--position_balance $BALANCE} ${STOPADV:+--stop_advantage $STOPADV} ${PREFILL:+--assistant_prefill "$PREFILL"} \
  ${LR_WARMUP:+--lr_scheduler_type constant_with_warmup --warmup_steps $LR_WARMUP} \
  ${BETA:+--beta $BETA} ${TOPENT:+--top_entropy_quantile $TOPENT} \
  --learning_rate ${LR:-3e-4} --max_completion_length ${MAXC:-32} --max_prompt_tokens ${MAXP:-512} --max_steps ${STEPS:-300} --max_minutes ${MINUTES:-90} \
  --save_steps 20 --report_to none ${RESUME:+--resume_from_checkpoint latest}
