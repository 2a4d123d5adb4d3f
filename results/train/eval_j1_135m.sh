#!/bin/bash
# The model card's numbers for a j1-135m judge: the judge and its untrained base, asked the same way
# (digest wording, the fixed thought, 8 new tokens, greedy), on
#   gsm8k     the chain's 60 held-out GSM8K mismatch pairs (the kind and source it was trained on);
#   gsm8k_test the 60 shipped GSM8K *test* mismatch pairs (its source's test split);
#   unseen    the 120 shipped held-out mismatch pairs from other sources (60 MATH, 60 Alpaca): the bar;
#   llmbar_mm the 70 shipped LLMBar mismatch pairs (a source no j1 judge trained on);
#   llmbar, judgebench   dev slices of judge benchmarks (../shared/data);
#   chatval   the validation split of the Alpaca chat runs (results/train/README.md, "Alpaca pairs alone"; built by chat_pairs.sh);
#   chat      `j1 synth chat` pairs (the answer to an Alpaca request vs the answer to a rewritten request), made by
#             j1 synth chat --config configs/synth/chat_alpaca.yaml --source ../shared/data/alpaca_en_demo_llamafactory.json \
#               --limit 100 --out runs/card/chat.jsonl
# Run from the repository root after the chain (configs/train/j1_135m_cpu.yaml); one lane per core:
#   OMP_NUM_THREADS=2 bash results/train/eval_j1_135m.sh                       # judge = runs/j1-135m/train/final
#   JUDGE=j1-135m WHICH=judge SETS="unseen" bash results/train/eval_j1_135m.sh  # the shipped copy
# A pointwise judge is asked with its own prefill and length, e.g. (results/train/README.md, "Pointwise"):
#   FORMAT=pos PREFILL=$'<think>I check the response against the request.</think>\n<score>' MAX_NEW=6 \
#     GSM8K=runs/pos/gsm8k/heldout.jsonl JUDGE=runs/pos/zero/checkpoint-100 CARD=runs/pos/card-zero-100 bash results/train/eval_j1_135m.sh
# SAMPLES=8 TEMPERATURE=1 asks N sampled judgments (a pointwise judge: their mean score).
# Writes $CARD/{judge,base}-{set}/ (CARD=runs/j1-135m/card by default; j1 eval run folders; --resume continues them).
set -euo pipefail
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} TOKENIZERS_PARALLELISM=false
JUDGE=${JUDGE:-runs/j1-135m/train/final}
CARD=${CARD:-runs/j1-135m/card}
FORMAT=${FORMAT:-pav}
PREFILL=${PREFILL:-$'<think>I compare both responses with the request.</think>\n<answer>[['}
ASK=(--format "$FORMAT" --template digest --assistant_prefill "$PREFILL" --max_new_tokens "${MAX_NEW:-8}"
     --temperature "${TEMPERATURE:-0}" --samples "${SAMPLES:-1}" --seed 0)
declare -A DATA=(
  [gsm8k]="generic ${GSM8K:-runs/j1-135m/data/heldout.jsonl}"
  [gsm8k_test]="generic src/j1/assets/data/gsm8k_test_mismatch.jsonl"
  [unseen]="generic src/j1/assets/data/heldout_mismatch.jsonl"
  [llmbar_mm]="generic src/j1/assets/data/llmbar_mismatch.jsonl"
  [chatval]="generic runs/chat/data/heldout.jsonl"
  [llmbar]="llmbar ../shared/data/llmbar_dev.jsonl"
  [judgebench]="judgebench ../shared/data/judgebench_dev.jsonl"
  [chat]="generic ${CHAT:-runs/card/chat.jsonl}"
)
declare -A MODEL=([judge]=$JUDGE [base]=smollm2-135m)
for set in ${SETS:-gsm8k unseen llmbar judgebench}; do
  read -r bench data <<< "${DATA[$set]}"
  for who in ${WHICH:-judge base}; do
    .venv/bin/j1 eval --benchmark "$bench" --data "$data" --model "${MODEL[$who]}" "${ASK[@]}" \
      --no_progress --resume --out "$CARD/$who-$set" > /dev/null
    python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['overall']; print(sys.argv[2], \
      {k: m[k] for k in ('consistent_accuracy','consistent_accuracy_ci','accuracy','flip_rate','invalid_rate')})" \
      "$CARD/$who-$set/metrics.json" "$who-$set"
  done
done
