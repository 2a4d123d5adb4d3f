"""Is the verdict letter among the tokens TRL's top-entropy mask trains? (results/train, session 10)

Samples 2 completions at T=1 for the first 8 training pairs in both orders (a run-8 step's shape),
and reports where the verdict letter's entropy ranks among all completion tokens: with
``top_entropy_quantile 0.2`` only tokens above the batch's 80th percentile are in the policy loss.

    OMP_NUM_THREADS=1 .venv/bin/python results/train/verdict_entropy.py runs/train/warmup-pav-compact \
        [runs/train/pav-learn9/checkpoint-72]
"""
import sys

import torch

from j1.models import load_tokenizer
from j1.probe import load_judge  # the base model, or a LoRA checkpoint on it
from j1.train.data import build_rows, load_pairs

torch.manual_seed(0)
base, model_path = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else sys.argv[1])
tok = load_tokenizer(base)
model, _ = load_judge(model_path, base=base)
model.eval()
pairs = load_pairs("runs/train/learn8-data/train.jsonl")
rows, _ = build_rows(pairs, "pav", tokenizer=tok, max_prompt_tokens=360, template="digest")
rows = rows[:16]  # 8 pairs x 2 orders
G = 2
ents_all, verdict_ents = [], []
for r in rows:
    text = tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False)
    ids = tok(text, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.no_grad():
        out = model.generate(ids.repeat(G, 1), attention_mask=torch.ones_like(ids).repeat(G, 1), do_sample=True, temperature=1.0, max_new_tokens=32,
                             pad_token_id=tok.pad_token_id, top_k=0, top_p=1.0)
        comp = out[:, ids.shape[1]:]
        logits = model(out).logits[:, ids.shape[1]-1:-1]
        logp = logits.log_softmax(-1)
        ent = -(logp.exp() * logp).sum(-1)
    for g in range(G):
        c = comp[g].tolist()
        n = len(c)
        if tok.eos_token_id in c:
            n = c.index(tok.eos_token_id) + 1
        e = ent[g, :n]
        ents_all.extend(e.tolist())
        pieces = [tok.decode([t]) for t in c[:n]]
        txt = ""
        vpos = None
        for k, p in enumerate(pieces):
            txt += p
            if vpos is None and txt.rstrip().endswith(("[[A", "[[B")) :
                vpos = k
        verdict_ents.append(e[vpos].item() if vpos is not None else None)
        if len(verdict_ents) <= 4:
            print(repr(tok.decode(c[:n])), "verdict pos", vpos, [round(x, 2) for x in e.tolist()])
allt = torch.tensor(ents_all)
thr = torch.quantile(allt, 0.8).item()
ve = [v for v in verdict_ents if v is not None]
print(f"tokens {len(allt)}; mean entropy {allt.mean():.3f}; top-20% threshold {thr:.3f}")
print(f"verdict tokens found {len(ve)}/{len(verdict_ents)}; entropies {[round(v,2) for v in ve]}")
print(f"verdict in top 20%: {sum(v >= thr for v in ve)}/{len(ve)}; mean verdict entropy {sum(ve)/max(len(ve),1):.3f}")
