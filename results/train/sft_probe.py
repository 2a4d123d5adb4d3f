"""Learnability check: can the judge learn the content of the pairs at all, *with* labels?

A diagnostic for the RL runs, not a trainer of the product: it fine-tunes the verdict letter alone
(cross-entropy on ``A``/``B`` after the forced thought of ``j1 probe``, ``j1.probe.runner``: generic, or quoting
the parts with ``--quote-words``) on the
training pairs in both orders, and reads the bias-free content margin on the held-out pairs every
``--eval-every`` steps. GRPO on verdicts is, per update, a noisier version of this signal (an
advantage-weighted log-likelihood of sampled letters), so the number of supervised updates this needs
is a lower bound on what an RL run needs.

    OMP_NUM_THREADS=1 .venv/bin/python results/train/sft_probe.py --base runs/train/warmup-pav-compact \
        --template compact --train runs/train/learn3-data/train.jsonl \
        --heldout runs/train/learn3-data/heldout.jsonl --out sft_probe.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch


def main() -> None:
    from transformers import AutoModelForCausalLM

    from j1.models import load_tokenizer, resolve_model
    from j1.probe.runner import (
        forced_texts,
        letter_ids,
        pair_logodds,
        probe_rows,
        summarise,
        target_letter,
        verdict_logodds,
    )
    from j1.train.data import load_pairs, prompt_tokens

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the model to train: a folder, or smollm2-135m (the embedded base)")
    ap.add_argument("--train", required=True)
    ap.add_argument("--heldout", required=True)
    ap.add_argument("--template", default="full")
    ap.add_argument("--lora-layers", type=int, default=8, help="LoRA r16 on the last N blocks; 0 = full fine-tune")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=4, help="pairs per step (both orders each)")
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--max-prompt-tokens", type=int, default=320)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quote-words", type=int, default=0,
                    help="the thought quotes the first N words of the request and of each shown response "
                         "(as j1 probe --quote_words); 0 = the fixed generic thought")
    ap.add_argument("--rl", type=int, default=0,
                    help="G > 0: replace the cross-entropy by run 16/17's RL update in this same harness: G letters "
                         "sampled per order from the model, correctness reward, advantages within each couple "
                         "(sample k of AB with sample k of BA), loss -mean(advantage x log p(sampled letter))")
    ap.add_argument("--save-dir", default=None,
                    help="at each evaluation, save the LoRA adapter as a judge folder DIR/step-N (the adapter plus "
                         "j1-135m's judge.json without its metrics), which --model and --init_adapter take")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    base = resolve_model(args.base)
    tok = load_tokenizer(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    if args.lora_layers:
        from peft import LoraConfig, get_peft_model

        n = model.config.num_hidden_layers
        model = get_peft_model(model, LoraConfig(
            r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                 "down_proj"], layers_to_transform=list(range(n - args.lora_layers, n))))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)

    train_pairs, held_pairs = load_pairs(args.train), load_pairs(args.heldout)

    def units(pairs):
        """Both orders of each pair (``j1.probe.runner.ProbeRow``, AB then BA) whose judge prompts, without the
        forced answer start, fit ``--max-prompt-tokens``."""
        rows = probe_rows(pairs, template=args.template, quote_words=args.quote_words)
        out = []
        for k in range(0, len(rows), 2):
            unit = rows[k : k + 2]
            if max(prompt_tokens(tok, r.messages[:-1]) for r in unit) <= args.max_prompt_tokens:
                out.append(unit)
        return out

    train, held = units(train_pairs), [r for u in units(held_pairs) for r in u]
    a_id, b_id = letter_ids(tok, forced_texts(tok, held[:1])[0])  # the verdict letters as j1 probe reads them
    rng = random.Random(args.seed)
    order: list[list] = []
    log = Path(args.out).open("a", encoding="utf-8")

    def evaluate(step: int, seconds: float) -> None:
        res = summarise(pair_logodds(held, verdict_logodds(model, tok, forced_texts(tok, held)))).as_dict()
        res.update(step=step, seconds=round(seconds, 1), lr=args.lr, lora_layers=args.lora_layers)
        print(json.dumps(res), flush=True)
        log.write(json.dumps(res) + "\n")
        log.flush()
        if args.save_dir and step and args.lora_layers:
            save_judge(model, Path(args.save_dir) / f"step-{step}", step)

    print(f"{len(train)} training pairs, {len(held) // 2} held-out pairs", flush=True)
    t0 = time.time()
    evaluate(0, 0.0)
    for step in range(1, args.steps + 1):
        batch = []
        for _ in range(args.pairs):
            if not order:
                order = train[:]
                rng.shuffle(order)
            batch.extend(order.pop())
        texts = forced_texts(tok, batch)
        # The better response's letter in the order shown: A when it is shown first.
        target = torch.tensor([a_id if target_letter(r) == "A" else b_id for r in batch])
        model.train()
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        # Left padding: the last position is the verdict letter, and the LM head runs there only.
        logits = model(**enc, logits_to_keep=1).logits[:, -1, :]
        if args.rl:
            loss = couple_pg_loss(logits.float(), target, args.rl)
        else:
            loss = torch.nn.functional.cross_entropy(logits.float(), target)
        # Before the update, every pair of the first epoch is unseen: its A-vs-B choice is an
        # on-policy held-out measure, one per step for free.
        with torch.no_grad():
            right = (torch.where(logits[:, a_id] > logits[:, b_id], a_id, b_id) == target).float()
            both = right.view(-1, 2).prod(dim=1).mean().item()  # right in both orders of a pair
        log.write(json.dumps({"step": step, "loss": round(loss.item(), 4), "acc": right.mean().item(),
                              "consistent": both, "epoch": (step * args.pairs - 1) // len(train)}) + "\n")
        log.flush()  # a killed probe keeps every step it logged
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % args.eval_every == 0:
            evaluate(step, time.time() - t0)


def save_judge(model, out: Path, step: int) -> None:
    """The LoRA adapter as a judge folder on the embedded base: j1-135m's manifest (format, template,
    prefill, generation defaults, base) without its metrics, since this adapter is asked the same way."""
    import dataclasses

    from j1.judging.judges import manifest_for, write_manifest

    model.save_pretrained(str(out))
    write_manifest(out, dataclasses.replace(manifest_for("j1-135m"), metrics={}, name=f"{out.parent.name}-{out.name}",
                                            trained_by=f"results/train/sft_probe.py, step {step}"))


def couple_pg_loss(logits: torch.Tensor, target: torch.Tensor, g: int) -> torch.Tensor:
    """RL's update on the verdict letter, in expectation what run 16/17 do: rows come as (AB, BA) per
    pair; G letters are sampled per row from the full softmax; reward 1 for the better response's
    letter; each couple (sample k of AB, sample k of BA) is normalised on its own, as ``j1 train
    --advantage_groups couple`` does (``j1.train.advantages.couple_advantages``: mean 0, std 1, zero
    when both agree); loss = -mean(advantage x log p(sample))."""
    from j1.train.advantages import couple_advantages

    logp = torch.log_softmax(logits, dim=-1)  # (rows, vocab)
    samples = torch.multinomial(logp.exp().detach(), g, replacement=True)  # (rows, G)
    # rows (pair, order) x G samples flattened: each pair's G rows of AB, then its G of BA, as j1 train lays them
    reward = (samples == target[:, None]).float().reshape(-1, 1)
    adv = couple_advantages(reward, torch.ones(1), g).view(-1, g)
    return -(adv * logp.gather(1, samples)).mean()


if __name__ == "__main__":
    main()
