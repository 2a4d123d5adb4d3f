"""Run inside verl's own environment (J1_VERL_PYTHON, PYTHONPATH=src) by tests/test_integrations_verl.py.

Usage: verl_check.py PARQUET TOKENIZER_DIR COMPLETIONS_JSON OUT_JSON

Loads a ``j1 export verl`` parquet with verl's RLHFDataset, orders it with j1's PairSampler built the way
verl builds a custom sampler, gives every prompt two scripted rollouts (tokenised as a rollout
worker returns them: left-padded prompts, right-padded responses), and rewards the batch with verl's
BatchRewardManager and the compute_score that verl's get_custom_reward_fn loads from j1's file.
Writes the rollouts, their decoded text and their rewards to OUT_JSON.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl import DataProto
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.reward_manager.batch import BatchRewardManager

import j1.integrations.verl as j1_verl


def prompt_ids_of(tok, item: dict) -> torch.Tensor:
    """A row's prompt tokens: verl 0.6 tokenises in the dataset (``input_ids``); verl 0.7+ leaves the chat
    (``raw_prompt``) to its agent loop, which applies the chat template with a generation prompt."""
    if "input_ids" in item:
        return item["input_ids"][item["attention_mask"].bool()]
    ids = tok.apply_chat_template(list(item["raw_prompt"]), add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    return torch.tensor(ids)


def main(parquet: str, tokenizer_dir: str, completions: list[str], out: str) -> None:
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    data_cfg = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 4096, "filter_overlong_prompts": False,
                                 "truncation": "error", "train_batch_size": 2, "shuffle": True, "seed": 0,
                                 "return_raw_chat": True})
    dataset = RLHFDataset(data_files=parquet, tokenizer=tok, config=data_cfg)
    sampler = j1_verl.PairSampler(data_source=dataset, data_config=data_cfg)
    order = list(sampler)
    batches = [order[i : i + 2] for i in range(0, len(order), 2)]
    whole = all(len({dataset.dataframe[i]["extra_info"]["pair_id"] for i in b}) == 1 for b in batches)

    rows, prompts, responses = [], [], []
    for pos, i in enumerate(order):
        item = dataset[i]  # verl's own row: tokenised prompt, extra_info, reward_model, data_source
        for k in range(2):  # rollout.n = 2, interleaved as verl repeats a batch
            text = completions[(pos + k) % len(completions)]
            rows.append(item)
            prompts.append(prompt_ids_of(tok, item))
            responses.append(tok(text, add_special_tokens=False, return_tensors="pt").input_ids[0])
    p_len, r_len = max(len(p) for p in prompts), max(len(r) for r in responses) + 1
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    prompt_ids = torch.full((len(rows), p_len), pad)
    response_ids = torch.full((len(rows), r_len), pad)
    mask = torch.zeros((len(rows), p_len + r_len), dtype=torch.long)
    for j, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        prompt_ids[j, p_len - len(p):] = p
        response_ids[j, : len(r)] = r
        mask[j, p_len - len(p): p_len + len(r)] = 1
    batch = DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": mask,
                 "input_ids": torch.cat([prompt_ids, response_ids], dim=1)},
        non_tensors={"data_source": np.array([r["data_source"] for r in rows], dtype=object),
                     "reward_model": np.array([r["reward_model"] for r in rows], dtype=object),
                     "extra_info": np.array([dict(r["extra_info"]) for r in rows], dtype=object)},
    )
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": j1_verl.__file__, "name": "compute_score", "reward_kwargs": {}}}})
    manager = BatchRewardManager(tok, num_examine=0, compute_score=get_custom_reward_fn(config))
    scores = manager(batch).sum(dim=-1).tolist()
    decoded = [tok.decode(r[: int(m[p_len:].sum())], skip_special_tokens=True)
               for r, m in zip(response_ids, mask, strict=True)]
    rollouts = [{"pair_id": r["extra_info"]["pair_id"], "order": r["extra_info"]["order"],
                 "label": r["extra_info"]["label"], "completion": completions[(j // 2 + j % 2) % len(completions)],
                 "decoded": d} for j, (r, d) in enumerate(zip(rows, decoded, strict=True))]
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"rows": len(dataset), "sampled_batches_whole_pairs": whole, "scores": scores,
                   "rollouts": rollouts}, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])
