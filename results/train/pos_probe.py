"""The expected-score probe of a pointwise (pos) judge: no sampling, one forward pass per response.

    .venv/bin/python results/train/pos_probe.py runs/pos/zero/checkpoint-100 src/j1/assets/data/heldout_mismatch.jsonl

Each response is shown alone with the judge's prefill (its manifest's, ending in ``<score>``); the
next-token probabilities of the digits 0-9, renormalised, give its expected score. A pair is ranked
right when the better response's expected score is higher: ``content_acc`` is the share of such
pairs (0.5 = chance, and there are no ties), ``margin`` the mean difference (better - worse), by the
pairs' ``kind``. "10" starts with the token "1", so it reads as 1 here: a probe, not a grader.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

import torch

from j1.chat import render, with_prefill
from j1.formats import get_format
from j1.judges import manifest_for
from j1.probe import load_judge, next_token_logprobs
from j1.train.data import load_pairs

POS_PREFILL = "<think>I check the response against the request.</think>\n<score>"


def expected_scores(model, tokenizer, texts: list[str]) -> list[float]:
    """The expected digit after each text, from the digits' renormalised next-token probabilities."""
    digit_ids = [tokenizer(str(d), add_special_tokens=False).input_ids[-1] for d in range(10)]
    logp = torch.tensor(next_token_logprobs(model, tokenizer, texts, digit_ids))
    return (torch.softmax(logp, dim=-1) @ torch.arange(10, dtype=torch.float32)).tolist()


def main(judge: str, data: str) -> None:
    manifest = manifest_for(judge)
    # The untrained base has no manifest: ask it as the pos recipe asks.
    template, prefill = (manifest.template, manifest.assistant_prefill) if manifest else ("digest", POS_PREFILL)
    fmt = get_format("pos", template)
    model, tokenizer = load_judge(judge)
    pairs = load_pairs(data)
    texts = [render(tokenizer, with_prefill(fmt.render(p.prompt, r), prefill))
             for p in pairs for r in (p.response_a, p.response_b)]
    s = expected_scores(model, tokenizer, texts)
    by_kind: dict[str, list[float]] = defaultdict(list)
    for i, p in enumerate(pairs):
        a, b = s[2 * i], s[2 * i + 1]
        margin = a - b if p.label == "A" else b - a
        by_kind["all"].append(margin)
        by_kind[p.kind or "?"].append(margin)
    report = {k: {"n": len(m), "content_acc": sum(x > 0 for x in m) / len(m), "margin": sum(m) / len(m)}
              for k, m in by_kind.items()}
    report["mean_score"] = sum(s) / len(s)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(*sys.argv[1:3])
