"""The warm-up: a short SFT before J1 GRPO, label-free (the format) or on gold verdicts (the task).

SmolLM2-135M never writes ``<think>…</think><answer>[[A]]</answer>`` zero-shot, so GRPO gets no
reward signal from it. The warm-up targets use the real training prompts, but the verdicts (or
scores) are drawn at random from a seed and the thoughts are short generic sentences: the model
learns the format and nothing about which response is better, so any accuracy gain afterwards
comes from RL (issue #5). Verdicts are balanced over shown positions, so the warm-up does not
teach a position bias either.

``--verdicts gold`` (pairwise formats) names the better response instead: the verdict is the letter
it is shown under, and scores rank it first. A supervised start on the very labels J1's reward reads;
the shipped judge j1-135m starts from such a warm-up (``j1/assets/recipes/j1_135m_warmup.yaml``),
because J1 GRPO from the base alone left instructions at chance (results/train/README.md).

With ``--assistant_prefill`` the prompt ends with the prefill and the SFT target is the rest of the
answer only (with the fixed thought of the prefill, just the verdict and the closing tags): the
judge is trained in exactly the context ``j1 judge`` and ``j1 train`` ask it in. ``--loss_tokens 1``
then trains the verdict letter alone; batches hold both orders of each pair (``j1.train.sft``).

``--verdicts rationale`` trains a judge to think: the target is the pair's own thought for that order (a
checkable reason it has its winner, ``j1.data.rationales``), then the gold verdict. A thought worth keeping
must be taught before RL can sharpen it: sampled thoughts of the base collapse to one sentence (results/train).
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from j1.formats import get_format
from j1.judging.chat import fixed_thought, prefill, render
from j1.pairs import shown_label
from j1.train.options import VERDICT_KINDS

if TYPE_CHECKING:
    from trl import ModelConfig, SFTConfig

    from j1.train.spec import WarmupSpec

log = logging.getLogger(__name__)

# Short, content-free thoughts: they name no response and no reason.
THOUGHTS = (
    "I compare both responses with the request.",
    "I check each response against what the user asked.",
    "I look at what each response gets right and wrong.",
    "I weigh the correctness and helpfulness of each response.",
    "I read the request, then each response, carefully.",
    "I check the facts and the reasoning in each response.",
)
POINT_THOUGHTS = (
    "I check the response against the request.",
    "I look at what the response gets right and wrong.",
    "I weigh the correctness and helpfulness of the response.",
    "I check the facts and the reasoning in the response.",
)



def random_target(fmt_name: str, rng: random.Random, thought: str | None = None, winner: str | None = None) -> str:
    """A well-formed completion for ``fmt_name`` with a short thought (a generic sentence drawn from
    ``rng`` unless ``thought`` is given) and a random verdict/scores, or, with ``winner`` (the letter
    the better response is shown under; pairwise formats), a verdict and scores that name it.

    >>> t = random_target("pav", random.Random(0))
    >>> get_format("pav").parse(t).valid
    True
    >>> random_target("pav", random.Random(0), "Same.", winner="B")
    '<think>Same.</think>\\n<answer>[[B]]</answer>'
    """
    fmt = get_format(fmt_name)
    if winner is not None and (fmt.arity < 2 or winner not in fmt.positions):
        raise ValueError(f"a gold verdict needs a format that compares responses and one of its positions, "
                         f"not {fmt_name!r} and {winner!r}")
    # Always draw the generic thought and the random verdict, so a given seed gives the same draws
    # whatever the thought and whether the verdict is gold (write_answer draws either way).
    generic = rng.choice(THOUGHTS if fmt.arity > 1 else POINT_THOUGHTS)
    thought = generic if thought is None else thought
    return f"<think>{thought}</think>\n{fmt.write_answer(winner, rng)}"


def sft_rows(rows: Sequence[dict], seed: int, *, verdicts: str = "random", tokenizer=None) -> list[dict]:
    """Prompt-completion SFT rows for TRL's SFTTrainer from judge rows (``j1.train.data.build_rows``).

    Without a prefill: conversational rows, the whole answer as the assistant's message. Rows whose
    prompt ends with an assistant prefill (``j1.judging.chat``) become text rows: the prompt rendered with the
    prefill left open (needs ``tokenizer``), and the completion is the rest of the target after it,
    the thought being the one the prefill fixes. ``verdicts="gold"`` names the better response as shown.
    """
    if verdicts not in VERDICT_KINDS:
        raise ValueError(f"unknown verdicts {verdicts!r}; choose one of {VERDICT_KINDS}")
    rng = random.Random(seed)
    out = []
    for r in rows:
        head = prefill(r["prompt"])
        thought = fixed_thought(head) if head else None
        if verdicts == "rationale":
            thought = r.get("thought")
            if not thought:
                raise ValueError(f"--verdicts rationale: pair {r['pair_id']!r} has no thoughts for what the judge is "
                                 "shown; add them with `j1 synth thoughts --pairs FILE --out FILE`, or show the "
                                 "reference they quote (--judge_inputs reference)")
        winner = shown_label(r["label"], r["order"]) if verdicts != "random" else None
        target = random_target(r["judge_format"], rng, thought, winner)
        if not head:
            out.append({"prompt": r["prompt"], "completion": [{"role": "assistant", "content": target}]})
            continue
        if not target.startswith(head):
            raise ValueError(f"--assistant_prefill {head!r} does not start a {r['judge_format']} answer "
                             f"such as {target!r}")
        out.append({"prompt": render(tokenizer, r["prompt"]), "completion": target[len(head):]})
    return out


def valid_rate(model, tokenizer, rows: Sequence[dict], *, samples: int, temperature: float,
               max_new_tokens: int, seed: int) -> dict:
    """Share of sampled completions that parse, on held-out judge rows, plus a few examples; for
    pairwise rows also ``accuracy``, the share that name the better response (invalid ones count wrong).

    Uses the j1 local backend (the same generation as ``j1 judge``/``j1 eval``) on the in-memory model.
    """
    from j1.backends import SamplingParams
    from j1.backends.local import LocalBackend

    backend = LocalBackend.from_model(model, tokenizer)
    was_training = model.training
    model.eval()
    params = SamplingParams(n=samples, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    outs = backend.generate([r["prompt"] for r in rows], params)
    if was_training:
        model.train()
    valid = total = shown_a = decided = right = pairwise = 0
    examples = []
    for r, comps in zip(rows, outs, strict=True):
        fmt = get_format(r["judge_format"])
        for c in comps:
            parsed = fmt.parse(c.text)
            total += 1
            valid += parsed.valid
            if fmt.pairwise:
                pairwise += 1
                right += parsed.valid and parsed.verdict.value == shown_label(r["label"], r["order"])
                if parsed.verdict.value in ("A", "B"):
                    decided += 1
                    shown_a += parsed.verdict.value == "A"
            if len(examples) < 4:
                examples.append({"text": c.text, "verdict": parsed.verdict.value, "error": parsed.error})
    return {"valid_rate": valid / total, "completions": total, "accuracy": right / pairwise if pairwise else None,
            "shown_A_share": shown_a / decided if decided else None, "examples": examples}


def run_warmup(cfg: WarmupSpec, sft_args: SFTConfig, model_args: ModelConfig) -> dict:
    """The ``j1 warmup`` recipe: SFT on well-formed targets (random or gold verdicts) for the training
    prompts (held-out units kept apart), the valid-output rate (and accuracy) before and after, and
    the judge in OUTPUT_DIR with ``warmup.json``, ``run.json`` and the manifest ``judge.json``: LoRA
    merged into a plain model (``j1 train --model_name_or_path OUTPUT_DIR``), or with
    ``--merge_lora false`` the adapter alone (``j1 train --init_adapter OUTPUT_DIR``, ``j1 judge --model
    OUTPUT_DIR``). Returns warmup.json's content (empty off the main process)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM

    from j1.device import describe
    from j1.judging.judges import trained_manifest, write_manifest
    from j1.models import EMBEDDED_NAME, load_tokenizer, resolve_model
    from j1.runs.atomic import write_json_atomic
    from j1.runs.runinfo import RunFolder
    from j1.train.callbacks import JsonlLogCallback, TrainClockCallback
    from j1.train.data import UNIT, build_rows, load_pairs
    from j1.train.recipe import agreed_resume, init_lora, lora_config
    from j1.train.resume import interruptions, read_progress
    from j1.train.sft import CompletionSFTTrainer
    from j1.train.stopping import StopAndSaveCallback, TrainingInterrupted

    folder = RunFolder(sft_args.output_dir, command="j1 warmup")
    out = folder.path
    # all a resumed run counts as trained (the same on every process); the rest of a killed run is lost
    resume, held = agreed_resume(sft_args.resume_from_checkpoint, str(out), sft_args.device)
    accounting = {"resumed_step": held["global_step"], "resumed_trained_minutes": round(held["trained_seconds"] / 60, 3),
                  "interruptions": interruptions(folder.recorded().get("interruptions") or [], read_progress(out),
                                                 held)}
    pairs = load_pairs(cfg.train_file, pair_seed=cfg.pair_seed)  # bad data fails before a model loads
    path = resolve_model(model_args.model_name_or_path)
    tokenizer = load_tokenizer(path)
    if cfg.max_pairs is not None:
        pairs = pairs[: cfg.max_pairs + cfg.heldout_pairs]
    rows, counts = build_rows(pairs, cfg.formulation, tokenizer=tokenizer, max_prompt_tokens=cfg.max_prompt_tokens,
                              template=cfg.template, prefill=cfg.assistant_prefill, inputs=cfg.judge_inputs)
    # Held-out units come from the end of the file, whole units only; SFT never sees their prompts.
    n_held = min(cfg.heldout_pairs * UNIT, len(rows) - UNIT)
    train_rows, held_rows = rows[: len(rows) - n_held], rows[len(rows) - n_held :]
    peft_config = lora_config(model_args, path, cfg.lora_last_layers, cfg.init_adapter)  # before a model loads
    dtype = getattr(torch, model_args.dtype) if model_args.dtype not in (None, "auto") else "auto"
    # On the training device from the start, so the before-check runs where the training will.
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(sft_args.device)
    check = dict(samples=cfg.check_samples, temperature=cfg.check_temperature,
                 max_new_tokens=cfg.check_max_new_tokens, seed=cfg.warmup_seed)
    train_data = sft_rows(train_rows, cfg.warmup_seed, verdicts=cfg.verdicts, tokenizer=tokenizer)
    clock = TrainClockCallback(out)
    stopper = StopAndSaveCallback(max_minutes=cfg.max_minutes, save_minutes=cfg.save_minutes)
    trainer = CompletionSFTTrainer(
        model=model, args=sft_args, train_dataset=Dataset.from_list(train_data),
        processing_class=tokenizer, peft_config=peft_config,
        callbacks=[JsonlLogCallback(out / "log.jsonl"), clock, stopper],
        unit=UNIT, loss_tokens=cfg.loss_tokens,
    )
    if cfg.init_adapter is not None:  # the LoRA continues a judge's (a shipped one, or a warm-up's)
        init_lora(trainer.model, cfg.init_adapter, path)
    # measured on the starting point: the base, or the adapter the LoRA starts from
    before = valid_rate(trainer.model, tokenizer, held_rows, **check) if held_rows else None
    if before:
        log.info("valid-output rate before the warm-up: %.3f", before["valid_rate"])
    if len(trainer.train_dataset) != len(train_data):  # TRL dropped rows (truncated): units would split
        raise ValueError(f"{len(train_data) - len(trainer.train_dataset)} training rows were dropped as too long "
                         "for --max_length; lower --max_prompt_tokens")
    config = {"j1": dataclasses.asdict(cfg), "sft": sft_args.to_dict(), "model": dataclasses.asdict(model_args)}
    if trainer.accelerator.is_main_process:  # the accounting survives a kill (the next start reads it)
        folder.write(config, status="running", resume_from=resume, model_path=path, **accounting)
    try:
        trainer.train(resume_from_checkpoint=resume)
    finally:
        stopper.close()
    accounting["trained_minutes"] = round(clock.seconds() / 60, 3)
    if stopper.stopped_by is not None:  # a checkpoint at this step is saved; the judge is left to the resumed run
        if trainer.accelerator.is_main_process:
            folder.write(config, status="interrupted", resume_from=resume, model_path=path,
                         global_step=trainer.state.global_step, **accounting)
        trainer.accelerator.wait_for_everyone()
        raise TrainingInterrupted(stopper.stopped_by, trainer.state.global_step, stopper.saved_at_stop)
    model = trainer.model
    lora = hasattr(model, "merge_and_unload")
    if lora and cfg.merge_lora:  # a plain model that j1 train/eval can load
        model = model.merge_and_unload()
    adapter = lora and not cfg.merge_lora
    after = valid_rate(model, tokenizer, held_rows, **check) if held_rows else None
    if after:
        log.info("valid-output rate after the warm-up: %.3f", after["valid_rate"])
    report: dict = {}
    if trainer.accelerator.is_main_process:
        model.save_pretrained(out)  # LoRA unmerged: the adapter alone (MBs)
        tokenizer.save_pretrained(out)
        report = {"formulation": cfg.formulation, "verdicts": cfg.verdicts, "train_rows": len(train_rows),
                  "heldout_rows": len(held_rows), "check": check, "before": before, "after": after, "data": counts}
        write_json_atomic(out / "warmup.json", report)
        base = model_args.model_name_or_path or EMBEDDED_NAME
        write_manifest(out, trained_manifest(
            formulation=cfg.formulation, template=cfg.template, prefill=cfg.assistant_prefill,
            max_new_tokens=cfg.check_max_new_tokens, base_model=base if adapter else None, judge_dir=out,
            trained_by="j1 warmup", inputs=cfg.judge_inputs))
        folder.write(config, status="done", resume_from=resume, model_path=path,
                     device=describe(sft_args.device, dtype=str(model.dtype).removeprefix("torch.")),
                     global_step=trainer.state.global_step, **accounting,
                     valid_rate={"before": before and before["valid_rate"], "after": after and after["valid_rate"]})
    return report
