#!/usr/bin/env bash
# J1 on verl, one node of 8 GPUs: export the pairs as verl parquet with j1, then train with verl, using
# j1's reward function and pair sampler (examples/verl/j1_pav_llama31_8b.yaml has the settings).
# Two environments, since verl pins its own transformers: j1's (.venv, `make demo` makes it) and one
# with verl 0.6.1, which imports j1 from src/ (the reward and the sampler need only torch and j1):
#   python3.11 -m venv .venv-verl && .venv-verl/bin/pip install 'verl[vllm]==0.6.1'
#   bash examples/verl/run_j1_pav_llama31_8b.sh [hydra overrides, e.g. trainer.total_epochs=1]
# Run from the repository root. Reads runs/j1-paper/data/{train,heldout}.jsonl
# (configs/synth/mix_j1_paper.yaml); writes runs/verl/data/*.parquet and runs/verl/j1-llama31-8b-pav.
set -euo pipefail

J1=${J1:-.venv/bin/j1}
VERL_PYTHON=${VERL_PYTHON:-.venv-verl/bin/python}
PAIRS=${PAIRS:-runs/j1-paper/data}
DATA=runs/verl/data

# The judge prompts j1 train renders, both orders of every pair adjacent, labels in extra_info.
"$J1" export verl --pairs "$PAIRS/train.jsonl" "$PAIRS/heldout.jsonl" --format pav --out "$DATA"

# verl loads the reward function from a file: j1's own module, so the reward is exactly j1 reward's.
PYTHONPATH="$(pwd)/src${PYTHONPATH:+:$PYTHONPATH}" "$VERL_PYTHON" -m verl.trainer.main_ppo \
  --config-path "$(pwd)/examples/verl" --config-name j1_pav_llama31_8b \
  data.train_files="$DATA/train.parquet" data.val_files="$DATA/heldout.parquet" \
  custom_reward_function.path="$(pwd)/src/j1/integrations/verl.py" \
  "$@"
