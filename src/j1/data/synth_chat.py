"""Chat pairs from a noisy prompt (J1's recipe for non-verifiable prompts), with checks it lacks.

For a request x: chosen = the model's answer to x. The model rewrites x into x', a subtly different
request (one key constraint, entity or goal changed; still a fine request; our own instruction
below), and rejected = the model's answer to x'. An answer to the wrong request is worse for x,
*if* x' really differs from x and stays on its topic: the noise checks in :mod:`j1.data.filters`
drop x' equal to x, a trivial paraphrase, a drift to another topic (lexical and embedding
bands), an x' that reads as an answer to x rather than a request, and a rejected answer that
duplicates the chosen one; optionally a reference judge must prefer chosen in both orders
(``judge_disagrees`` otherwise). Every value is kept in ``meta``.

Steps per chunk of prompts: (1) answer x and write ``rewrite_samples`` candidate rewrites;
(2) take the first candidate that passes the prompt checks (when none does, the prompt is dropped
with the first candidate's reason; every candidate's verdict is in meta and in the stats'
``rewrite_checks``); (3) answer x'; (4) check the answers;
(5) optionally judge both orders; (6) append the pair or the dropped record. Each model output is
appended to ``OUT.work.jsonl`` as it arrives, so a killed run loses no generation: the rerun takes
every finished step from there and asks the model only for the rest. The work file is removed
once the source is fully done.

With ``--criteria_from_rewrite`` a pair keeps, as its ``criteria``, what the rewrite changed
(``rewrite_criteria``): the detail of x an answer must keep to. It names what separates the two answers,
so it is a recipe's choice (a judge trained with ``--judge_inputs criteria`` learns to check criteria), never
a default.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tqdm import tqdm

from j1.backends import Backend, Completion, Messages, SamplingParams
from j1.data import filters
from j1.data.rationales import beside
from j1.data.sources import Problem
from j1.data.store import PairStore, side_path
from j1.runs.atomic import JsonlAppender
from j1.schema import SCHEMA_VERSION, Dropped, PairRecord, iter_jsonl

if TYPE_CHECKING:
    from j1.data.spec import SynthChatSpec

log = logging.getLogger(__name__)

KIND = "chat"

# Our own wording: a near miss, not a new task, so that an answer to x' is worse for x for a reason
# a judge can name (it ignores or contradicts one requirement of x).
REWRITE_INSTRUCTION = (
    "Below is a request that a user sent to an AI assistant. Write a slightly different version of "
    "it: change exactly one important detail, such as a key constraint (a number, a length, a "
    "format, an audience), a named entity, or the goal, so that a good answer to your version would "
    "be a poor answer to the original. Keep the topic, the tone and roughly the length; your version "
    "must still be a clear, sensible request. Reply with your version only, between <request> and "
    "</request>.\n\nOriginal request:\n{prompt}"
)

# Worked examples shown as earlier turns of the conversation (our own made-up requests). Without
# them SmolLM2-135M mostly answered x, or described it ("The user wants to know ..."), instead of
# rewriting it (results/synth/README.md). Each changes one detail and keeps the rest word for word,
# including an input block, so that the answer to the rewrite misses one requirement of the original.
REWRITE_EXAMPLES = (
    ("Suggest three indoor activities for a rainy afternoon with young children.",
     "Suggest three indoor activities for a rainy afternoon with elderly grandparents."),
    ("Translate the sentence into Spanish.\n\nThe museum opens at nine in the morning.",
     "Translate the sentence into German.\n\nThe museum opens at nine in the morning."),
)


def answer_messages(prompt: str) -> Messages:
    return [{"role": "user", "content": prompt}]


def rewrite_messages(prompt: str, examples: Sequence[tuple[str, str]] = REWRITE_EXAMPLES) -> Messages:
    """The rewrite request for ``prompt``, after ``examples`` as (original, rewrite) turns."""
    turns: Messages = []
    for original, rewrite in examples:
        turns += [{"role": "user", "content": REWRITE_INSTRUCTION.format(prompt=original)},
                  {"role": "assistant", "content": f"<request>{rewrite}</request>"}]
    return [*turns, {"role": "user", "content": REWRITE_INSTRUCTION.format(prompt=prompt)}]


# The most words of one changed span quoted in the criteria; past it the span is cut with "...".
CRITERIA_SPAN_WORDS = 12


def rewrite_criteria(original: str, rewrite: str) -> str | None:
    """What a rewrite changed in the request, as criteria a judge can check an answer against: each span of
    ``original`` the rewrite replaced or dropped (with what it put instead), and each span it added; None when
    the words are the same.

    >>> rewrite_criteria("Suggest three games for young children.", "Suggest three games for elderly grandparents.")
    'Keep to the request: it asks for "young children." (not "elderly grandparents.").'
    >>> rewrite_criteria("Same words.", "Same   words.") is None
    True
    """
    def quote(words: list[str]) -> str:
        cut = words[:CRITERIA_SPAN_WORDS]
        return " ".join(cut) + (" ..." if len(words) > len(cut) else "")

    a, b = original.split(), rewrite.split()
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if i1 == i2:  # an addition: the request does not ask for it
            parts.append(f'it does not ask for "{quote(b[j1:j2])}"')
        elif j1 == j2:
            parts.append(f'it asks for "{quote(a[i1:i2])}"')
        else:
            parts.append(f'it asks for "{quote(a[i1:i2])}" (not "{quote(b[j1:j2])}")')
    return f"Keep to the request: {'; '.join(parts)}." if parts else None


@dataclass
class ChatOptions:
    """Everything ``synth_chat`` needs besides the backends (built by the CLI from SynthChatSpec)."""

    answer: SamplingParams
    rewrite: SamplingParams
    bands: filters.Bands = field(default_factory=filters.Bands)
    dup_lexical: float = 0.9
    dup_embedding: float = 0.985
    chunk_size: int = 64
    judge_format: str = "pav"
    judge_params: SamplingParams | None = None
    criteria_from_rewrite: bool = False  # keep what the rewrite changed as the pair's criteria


class WorkCache:
    """Finished model outputs of unfinished prompts: ``{"id", "step", "texts", "finish", "tokens"}``
    lines in ``OUT.work.jsonl``; ``step`` is answer, rewrite, noisy_answer, judge_AB or judge_BA."""

    def __init__(self, out) -> None:
        self.path = side_path(out, "work.jsonl")
        self.entries: dict[tuple[str, str], list[Completion]] = {}
        if self.path.exists():
            for _, obj in iter_jsonl(self.path, allow_torn_tail=True):
                comps = [Completion(t, f, 0) for t, f in zip(obj["texts"], obj["finish"], strict=True)]
                if comps:
                    comps[0].completion_tokens = int(obj.get("tokens", 0))  # the step's total, on the first
                self.entries.setdefault((obj["id"], obj["step"]), comps)
        self._fh = JsonlAppender(self.path)

    def get(self, pid: str, step: str) -> list[Completion] | None:
        return self.entries.get((pid, step))

    def put(self, pid: str, step: str, comps: list[Completion]) -> None:
        self._fh.write({"id": pid, "step": step, "texts": [c.text for c in comps],
                        "finish": [c.finish_reason for c in comps],
                        "tokens": sum(c.completion_tokens for c in comps), "schema_version": SCHEMA_VERSION})
        self.entries[(pid, step)] = comps

    def close(self, *, remove: bool) -> None:
        self._fh.close()
        if remove:
            self.path.unlink(missing_ok=True)


def _tokens(comps: list[Completion] | None) -> int:
    return sum(c.completion_tokens for c in comps or [])


def _run_step(backend: Backend, cache: WorkCache, step: str, items: list[tuple[str, Messages]],
              params: SamplingParams) -> dict[str, list[Completion]]:
    """Completions for each ``(id, messages)``: from the cache, else from the model (cached as they come)."""
    out = {pid: cache.get(pid, step) for pid, _ in items}
    todo = [(pid, msgs) for pid, msgs in items if out[pid] is None]
    if todo:
        log.debug("step %s: %d prompts for the model, %d cached", step, len(todo), len(items) - len(todo))
        for i, comps in backend.stream([m for _, m in todo], params):
            cache.put(todo[i][0], step, comps)
            out[todo[i][0]] = comps
    return out  # type: ignore[return-value]


def synth_chat(
    backend: Backend,
    problems: Sequence[Problem],
    store: PairStore,
    opts: ChatOptions,
    embedder: filters.Embedder,
    *,
    source: str,
    judge: Backend | None = None,
    progress: bool = True,
    deadline: float | None = None,
) -> Counter:
    """Make chat pairs for every prompt not yet in ``store``; returns counts of every rewrite
    candidate's check result (``kept`` or a drop reason) in this call."""
    from j1.formats import get_format
    from j1.judging.judge import assemble
    from j1.pairs import render_both, slots

    fmt = get_format(opts.judge_format)
    done = store.done
    todo = [p for p in problems if p.id not in done]
    candidates: Counter = Counter()
    cache = WorkCache(store.out)
    bar = tqdm(total=len(todo), desc="synth chat", unit="prompt", disable=not progress)
    try:
        for start in range(0, len(todo), opts.chunk_size):
            if deadline is not None and time.time() > deadline:
                log.warning("time limit reached after %d of %d prompts; rerun the command to continue",
                            start, len(todo))
                break
            chunk = todo[start:start + opts.chunk_size]
            answers = _run_step(backend, cache, "answer", [(p.id, answer_messages(p.prompt)) for p in chunk], opts.answer)
            rewrites = _run_step(backend, cache, "rewrite", [(p.id, rewrite_messages(p.prompt)) for p in chunk],
                                 opts.rewrite)
            # Prompt checks, all candidates of the chunk in one embedding batch: x' against x, and
            # x' against the chosen answer (an x' nearer the answer than x is an answer, not a request).
            cands = {p.id: [filters.clean_rewrite(c.text) for c in rewrites[p.id]] for p in chunk}
            flat = [(p.id, k, p.prompt, x2) for p in chunk for k, x2 in enumerate(cands[p.id])]
            cos = embedder.cosine([(x, x2) for _, _, x, x2 in flat]
                                  + [(x2, answers[pid][0].text) for pid, _, _, x2 in flat])
            checked: dict[str, list[dict]] = {p.id: [] for p in chunk}
            for (pid, k, x, x2), emb, aemb in zip(flat, cos[:len(flat)], cos[len(flat):], strict=True):
                lex = round(filters.lexical_similarity(x, x2), 4)
                raw = rewrites[pid][k]
                # cut off by the token limit, unless the closing tag shows the request was complete
                truncated = raw.finish_reason == "length" and "</request>" not in raw.text.lower()
                verdict = filters.rewrite_verdict(x, x2, lex, emb, opts.bands, truncated=truncated,
                                                  answer_embedding=aemb)
                candidates[verdict or "kept"] += 1
                checked[pid].append({"text": x2, "lexical": lex, "embedding": emb, "answer_embedding": aemb,
                                     "verdict": verdict or "kept"})
            metas: dict[str, dict] = {}
            noisy: dict[str, str] = {}
            for p in chunk:
                meta = {
                    "where": p.where, "model": backend.model_name, "seed": opts.answer.seed,
                    "temperature": opts.answer.temperature, "max_new_tokens": opts.answer.max_new_tokens,
                    "rewrite_temperature": opts.rewrite.temperature, "rewrite_candidates": checked[p.id],
                    "chosen_finish_reason": answers[p.id][0].finish_reason,
                }
                metas[p.id] = meta
                kept = next((k for k, c in enumerate(checked[p.id]) if c["verdict"] == "kept"), None)
                if kept is None:
                    continue
                meta.update(rewrite_index=kept, noisy_prompt=checked[p.id][kept]["text"],
                            prompt_similarity={"lexical": checked[p.id][kept]["lexical"],
                                               "embedding": checked[p.id][kept]["embedding"],
                                               "answer_embedding": checked[p.id][kept]["answer_embedding"]})
                noisy[p.id] = meta["noisy_prompt"]
            noisy_answers = _run_step(backend, cache, "noisy_answer",
                                      [(pid, answer_messages(x2)) for pid, x2 in noisy.items()], opts.answer)
            # Answer checks.
            pairs = [(pid, answers[pid][0].text, noisy_answers[pid][0].text) for pid in noisy]
            acos = embedder.cosine([(c, r) for _, c, r in pairs])
            passed: list[str] = []
            answer_reason: dict[str, str] = {}
            for (pid, chosen, rejected), emb in zip(pairs, acos, strict=True):
                lex = round(filters.lexical_similarity(chosen, rejected), 4)
                metas[pid].update(answer_similarity={"lexical": lex, "embedding": emb},
                                  rejected_finish_reason=noisy_answers[pid][0].finish_reason)
                reason = filters.answers_verdict(chosen, rejected, lex, emb, opts.dup_lexical, opts.dup_embedding)
                if reason:
                    answer_reason[pid] = reason
                else:
                    passed.append(pid)
            # Optional reference judge: chosen is response A in the original terms, so it must win
            # with verdict "A" in both orders (verdicts come back oriented to the original pair).
            judged: dict[str, dict] = {}
            if judge is not None and passed:
                by_id = {p.id: p for p in chunk}
                steps: dict[str, list] = {slot: [] for slot in slots(fmt.pairwise)}
                for pid in passed:
                    for slot, msgs in render_both(fmt, by_id[pid].prompt, answers[pid][0].text,
                                                   noisy_answers[pid][0].text):
                        steps[slot].append((pid, msgs))
                outs = {slot: _run_step(judge, cache, f"judge_{slot}", items, opts.judge_params)
                        for slot, items in steps.items()}
                for pid in passed:
                    j = assemble(fmt, {slot: outs[slot][pid] for slot in outs})
                    judged[pid] = {"model": judge.model_name, "format": fmt.name,
                                   "orders": {o.order: o.verdict for o in j.orders}, "verdict": j.verdict,
                                   "completion_tokens": sum(_tokens(outs[s][pid]) for s in outs)}
            for p in chunk:
                meta = metas[p.id]
                meta["completion_tokens"] = (_tokens(answers[p.id]) + _tokens(rewrites[p.id])
                                             + _tokens(noisy_answers.get(p.id))
                                             + judged.get(p.id, {}).get("completion_tokens", 0))
                if p.id not in noisy:
                    reason = checked[p.id][0]["verdict"] if checked[p.id] else filters.REWRITE_EMPTY
                    store.add_dropped(Dropped(p.id, p.prompt, KIND, source, reason, meta))
                    continue
                if p.id in answer_reason:
                    meta["rejected"] = noisy_answers[p.id][0].text
                    store.add_dropped(Dropped(p.id, p.prompt, KIND, source, answer_reason[p.id],
                                              {**meta, "chosen": answers[p.id][0].text}))
                    continue
                if judge is not None:
                    meta["judge"] = judged[p.id]
                    if not all(v == "A" for v in judged[p.id]["orders"].values()):
                        store.add_dropped(Dropped(p.id, p.prompt, KIND, source, filters.JUDGE_DISAGREES,
                                                  {**meta, "chosen": answers[p.id][0].text,
                                                   "rejected": noisy_answers[p.id][0].text}))
                        continue
                criteria = rewrite_criteria(p.prompt, noisy[p.id]) if opts.criteria_from_rewrite else None
                # Its thoughts beside it: the request's terms the rewrite changed, in each answer (j1.data.rationales).
                store.add_pair(beside(PairRecord(p.id, p.prompt, answers[p.id][0].text, noisy_answers[p.id][0].text,
                                                 KIND, source, meta, criteria=criteria)))
            bar.update(len(chunk))
            bar.set_postfix(pairs=len(store.pairs), dropped=len(store.dropped))
    finally:
        bar.close()
        cache.close(remove=all(p.id in store.done for p in problems))
    return candidates


def judge_params(max_new_tokens: int, seed: int) -> SamplingParams:
    """Greedy, one sample per order: the reference judge's one considered verdict."""
    return SamplingParams(n=1, temperature=0.0, max_new_tokens=max_new_tokens, seed=seed)


def options_from(cfg: SynthChatSpec) -> ChatOptions:
    """ChatOptions from a :class:`j1.data.spec.SynthChatSpec`."""
    answer = cfg.sampling_params()
    return ChatOptions(
        answer=answer,
        rewrite=replace(answer, n=cfg.rewrite_samples, temperature=cfg.rewrite_temperature,
                        max_new_tokens=cfg.rewrite_max_new_tokens),
        bands=filters.Bands(cfg.lexical_min, cfg.embedding_min, cfg.embedding_max, cfg.reword_lexical,
                            cfg.reword_embedding, cfg.answer_margin),
        dup_lexical=cfg.answer_dup_lexical,
        dup_embedding=cfg.answer_dup_embedding,
        chunk_size=cfg.chunk_size,
        judge_format=cfg.verify_format,
        judge_params=judge_params(cfg.verify_max_new_tokens, cfg.seed),
        criteria_from_rewrite=cfg.criteria_from_rewrite,
    )
