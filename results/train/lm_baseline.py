"""Does the embedded LM itself know which response belongs to the request? (No judging, no training.)

For every held-out pair, the mean log-probability per token of the first 64 tokens of each response
given the request alone (the model's chat template, no judge prompt); the pair counts as right
when the better response is the more likely one. A high score says the content signal is in the
model, so a judge that cannot learn it is limited by how the verdict reaches that signal, not by
what the model knows.

    OMP_NUM_THREADS=1 .venv/bin/python results/train/lm_baseline.py runs/train/learn3-data/heldout.jsonl
"""

from __future__ import annotations

import sys

import torch


def mean_logprob(model, tokenizer, request: str, response: str, max_tokens: int = 64) -> float:
    """Mean log p(response token | request, earlier response tokens) over the first ``max_tokens``."""
    head = tokenizer.apply_chat_template([{"role": "user", "content": request}], add_generation_prompt=True,
                                         tokenize=False)
    h = tokenizer(head, add_special_tokens=False).input_ids
    r = tokenizer(response, add_special_tokens=False).input_ids[:max_tokens]
    ids = torch.tensor([h + r], device=model.device)
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)
    targets = ids[0, 1:]
    return logp[torch.arange(len(targets)), targets][len(h) - 1 :].mean().item()


def main() -> None:
    from j1.probe.runner import probe_model
    from j1.train.data import load_pairs

    model, tokenizer = probe_model("smollm2-135m")  # the embedded base, fp32, as j1 probe loads a judge
    right: dict[str, list[bool]] = {}
    for p in load_pairs(sys.argv[1]):
        a, b = (mean_logprob(model, tokenizer, p.prompt, r) for r in (p.response_a, p.response_b))
        right.setdefault(p.kind, []).append(a > b if p.label == "A" else b > a)
    for kind, v in sorted(right.items()):
        print(f"{kind}: the better response is the more likely one in {sum(v)}/{len(v)} pairs ({sum(v) / len(v):.1%})")


if __name__ == "__main__":
    main()
