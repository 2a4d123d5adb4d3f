#!/bin/bash
# The Alpaca-only training pairs of "Alpaca pairs alone" (README.md): every Alpaca instruction (with its
# input) of at most 60 words, with its output against another instruction's, drawn with three seeds so
# that a question meets up to three different wrong answers. Nothing that shares a text with the shipped
# held-out sets (heldout_mismatch, llmbar_mismatch) or with the validation split is kept.
#   bash results/train/chat_pairs.sh      # -> runs/chat/train.jsonl (635 pairs), runs/chat/data/heldout.jsonl (35)
set -euo pipefail
J1=.venv/bin/j1
SRC=../shared/data/alpaca_en_demo_llamafactory.json
EVAL=(src/j1/assets/data/heldout_mismatch.jsonl src/j1/assets/data/llmbar_mismatch.jsonl)
mkdir -p runs/chat
for s in 4 5 6; do
  $J1 synth mismatch --source $SRC --kind chat-mismatch --max_words 60 --pairs 435 --seed $s --out runs/chat/alpaca60-s$s.jsonl
done
# seed 4 gives the validation split (12% of the questions) ...
$J1 synth mix --inputs runs/chat/alpaca60-s4.jsonl:all --exclude "${EVAL[@]}" --heldout_fraction 0.12 --seed 0 \
  --out_dir runs/chat/data
# ... which seeds 5 and 6 then leave out
for s in 5 6; do
  $J1 synth mix --inputs runs/chat/alpaca60-s$s.jsonl:all --exclude "${EVAL[@]}" runs/chat/data/heldout.jsonl \
    --heldout_fraction 0 --seed $s --out_dir runs/chat/data-s$s
done
# one file; a pair id is its question's, so the seeds' pairs get a suffix to stay apart
.venv/bin/python - <<'EOF'
import json
with open("runs/chat/train.jsonl", "w") as out:
    for folder, suffix in (("data", ""), ("data-s5", "-s5"), ("data-s6", "-s6")):
        for line in open(f"runs/chat/{folder}/train.jsonl"):
            row = json.loads(line)
            row["pair_id"] += suffix
            out.write(json.dumps(row) + "\n")
EOF
