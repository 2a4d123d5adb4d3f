"""Verdict probe: how much a pav judge's verdict depends on content, read from its logits.

For every held-out pair, in both orders, the judge prompt is followed by a fixed content-free
thought (the warm-up's first sentence) and ``<answer>[[``; the next-token probabilities of ``A`` and
``B`` give log-odds for each shown position. Averaging the log-odds of the better response over the
two orders cancels any position bias, so what is left is the content signal:

- ``content_margin``: mean over pairs of (logodds_AB(better) + logodds_BA(better)) / 2 (0 = no signal)
- ``content_acc``: share of pairs with a positive margin (50% = chance)
- ``position_bias``: mean log-odds of the first-shown response (0 = none)

No sampling, so it is an exact, low-noise measure on checkpoints (LoRA adapters on the warmed-up
model, or a merged folder). It complements ``j1 eval`` (greedy verdicts after free thoughts), which
is what the issue's metrics are taken from.

    OMP_NUM_THREADS=1 .venv/bin/python results/train/verdict_probe.py --base runs/train/warmup-pav-compact \
        --template compact --data runs/train/learn3-data/heldout.jsonl \
        --models runs/train/warmup-pav-compact runs/train/pav-learn3/checkpoint-20 ... --out probe.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch


def load_model(base: str, path: str):
    from transformers import AutoModelForCausalLM

    if (Path(path) / "adapter_config.json").exists():
        from peft import PeftModel

        return PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32), path)
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)


def forced_text(tokenizer, row: dict, thought) -> str:
    """The judge prompt of ``row`` followed by the completion up to the verdict letter, in the
    warm-up's target layout: ``<think>`` thought ``</think>``, newline, ``<answer>[[``. ``thought`` is a
    fixed string or a function of the row. The same text as ``--assistant_prefill`` with that start
    (``j1.chat``): run 16 of results/train trained the very distribution this reads."""
    from j1.chat import render, with_prefill
    from j1.formats import get_format

    answer_prefix = get_format("pav").answer_template.split("{verdict}")[0]  # "<answer>[["
    head = f"<think>{thought(row) if callable(thought) else thought}</think>\n{answer_prefix}"
    return render(tokenizer, with_prefill(row["prompt"], head))


def make_thought(pairs, quote_words: int):
    """The forced thought: the warm-up's first generic sentence, or (``quote_words`` > 0) a function of
    the row quoting its pair as shown, as ``j1 warmup --thoughts quote`` teaches."""
    from j1.formats.templates import quote_parts
    from j1.train.warmup import THOUGHTS, shown_parts

    if not quote_words:
        return THOUGHTS[0]
    by_id = {p.pair_id: p for p in pairs}

    def thought(row: dict) -> str:
        pair = by_id[row["pair_id"]]
        return quote_parts(pair.prompt, shown_parts(pair, row["order"]), quote_words)

    return thought


def probe(model, tokenizer, rows: list[dict], thought, batch: int = 8) -> list[float]:
    """Log-odds log p(A)/p(B) of the verdict letter after the thought (``forced_text``), one per row."""
    a_id, b_id = (tokenizer.convert_tokens_to_ids(t) for t in ("A", "B"))
    texts = [forced_text(tokenizer, r, thought) for r in rows]
    out: list[float] = []
    model.eval()
    with torch.no_grad():
        for k in range(0, len(texts), batch):
            enc = tokenizer(texts[k : k + batch], return_tensors="pt", padding=True, add_special_tokens=False)
            logits = model(**enc).logits[:, -1, :]
            logp = torch.log_softmax(logits.float(), dim=-1)
            out.extend((logp[:, a_id] - logp[:, b_id]).tolist())
    return out


def summarise(rows: list[dict], logodds: list[float]) -> dict:
    """Per pair: log-odds of the better response in each order, and the bias-free average."""
    by_pair: dict[str, dict[str, float]] = {}
    for r, lo in zip(rows, logodds, strict=True):
        # lo = log p(A)/p(B) as shown; the better response is shown as A in AB iff label == A.
        better_shown_first = (r["order"] == "AB") == (r["label"] == "A")
        by_pair.setdefault(r["pair_id"], {})[r["order"]] = lo if better_shown_first else -lo
        by_pair[r["pair_id"]].setdefault("first", 0.0)
        by_pair[r["pair_id"]]["first"] += lo / 2  # log-odds of the first-shown response, averaged
    margins = [(v["AB"] + v["BA"]) / 2 for v in by_pair.values()]
    n = len(margins)
    sd = math.sqrt(sum((m - sum(margins) / n) ** 2 for m in margins) / max(n - 1, 1))
    return {"pairs": n, "content_margin": sum(margins) / n, "content_margin_se": sd / math.sqrt(n),
            "content_acc": sum(m > 0 for m in margins) / n,
            "position_bias": sum(v["first"] for v in by_pair.values()) / n}


def main() -> None:
    from j1.data.mix import read_train_rows
    from j1.train.data import load_pairs, unit_rows
    from j1.train.trl_grpo import load_tokenizer
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="warmed-up model folder (base of LoRA checkpoints)")
    ap.add_argument("--data", required=True, help="held-out j1 synth mix rows")
    ap.add_argument("--template", default="full")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quote-words", type=int, default=0,
                    help="probe after the quoting thought of `j1 warmup --thoughts quote` (N words per part)")
    args = ap.parse_args()
    tokenizer = load_tokenizer(args.base)
    pairs = load_pairs(args.data)
    rows = [r for p in pairs for r in unit_rows(p, "pav", args.template)]
    thought = make_thought(pairs, args.quote_words)
    kinds = {r.pair_id: r.kind for r in read_train_rows(args.data)}
    results = {}
    for path in args.models:
        logodds = probe(load_model(args.base, path), tokenizer, rows, thought)
        res = {"all": summarise(rows, logodds)}
        for kind in sorted(set(kinds.values())):
            sel = [(r, lo) for r, lo in zip(rows, logodds, strict=True) if kinds[r["pair_id"]] == kind]
            res[kind] = summarise([r for r, _ in sel], [lo for _, lo in sel])
        results[path] = res
        a = res["all"]
        print(f"{path}: content margin {a['content_margin']:+.3f} (se {a['content_margin_se']:.3f}), "
              f"content acc {a['content_acc']:.1%}, position bias {a['position_bias']:+.3f}  "
              + "  ".join(f"{k}: {v['content_acc']:.1%}" for k, v in res.items() if k != "all"), flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
