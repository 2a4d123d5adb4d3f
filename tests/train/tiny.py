"""A tiny randomly initialised Llama with the embedded model's tokenizer, built locally (no hub
download), and a small pair file: enough to run GRPO/SFT end to end in seconds."""

from __future__ import annotations

import json
from pathlib import Path

PAIRS = [
    ("What is 2 + 3?", "2 + 3 = 5.", "2 + 3 = 6."),
    ("Capital of France?", "Paris.", "Lyon."),
    ("Spell 'cat' backwards.", "tac", "cta"),
    ("Is 7 prime?", "Yes, 7 is prime.", "No, 7 = 1 x 7 is not prime."),
    ("What is 10 / 2?", "5", "2"),
    ("Colour of the clear daytime sky?", "Blue.", "Green."),
    ("How many legs has a spider?", "Eight.", "Six."),
    ("Opposite of 'hot'?", "Cold.", "Warm."),
]


def write_pairs(path: Path, n: int = len(PAIRS)) -> Path:
    """A chosen/rejected pair file (issue-4 line format) with ``n`` pairs (cycling the table)."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            prompt, chosen, rejected = PAIRS[i % len(PAIRS)]
            row = {"id": f"p{i}", "prompt": prompt, "chosen": chosen, "rejected": rejected,
                   "kind": "test", "source": "tests", "meta": {}}
            fh.write(json.dumps(row) + "\n")
    return path


def build_tiny_model(folder: Path) -> Path:
    """Save a 2-layer, 32-wide Llama with SmolLM2's tokenizer and chat template to ``folder``."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from j1.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model(None))
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
