"""The label-free format warm-up: a short SFT that teaches a small model the judge output grammar.

SmolLM2-135M never writes ``<think>…</think><answer>[[A]]</answer>`` zero-shot, so GRPO gets no
reward signal from it. The warm-up targets use the real training prompts, but the verdicts (or
scores) are drawn at random from a seed and the thoughts are short generic sentences: the model
learns the format and nothing about which response is better, so any accuracy gain afterwards
comes from RL (issue #5). Verdicts are balanced over shown positions, so the warm-up does not
teach a position bias either.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from j1.formats import get_format

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


def random_target(fmt_name: str, rng: random.Random) -> str:
    """A well-formed completion for ``fmt_name`` with a random verdict/scores and a short thought.

    >>> t = random_target("pav", random.Random(0))
    >>> get_format("pav").parse(t).valid
    True
    """
    fmt = get_format(fmt_name)
    thought = rng.choice(THOUGHTS if fmt.pairwise else POINT_THOUGHTS)
    if fmt_name == "pos":
        answer = fmt.answer_template.format(score=rng.randint(0, 10))
    elif fmt_name == "pav":
        answer = fmt.answer_template.format(verdict=rng.choice("AB"))
    else:
        a, b = rng.sample(range(11), 2)  # distinct scores: a well-defined winner
        answer = fmt.answer_template.format(score_a=a, score_b=b, verdict="A" if a > b else "B")
    return f"<think>{thought}</think>\n{answer}"


def sft_rows(rows: Sequence[dict], seed: int) -> list[dict]:
    """Prompt-completion SFT rows (TRL conversational format) from judge rows, random targets."""
    rng = random.Random(seed)
    return [
        {"prompt": r["prompt"], "completion": [{"role": "assistant", "content": random_target(r["judge_format"], rng)}]}
        for r in rows
    ]


def valid_rate(model, tokenizer, rows: Sequence[dict], *, samples: int, temperature: float,
               max_new_tokens: int, seed: int) -> dict:
    """Share of sampled completions that parse, on held-out judge rows, plus a few examples.

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
    valid = total = shown_a = decided = 0
    examples = []
    for r, comps in zip(rows, outs, strict=True):
        fmt = get_format(r["judge_format"])
        for c in comps:
            parsed = fmt.parse(c.text)
            total += 1
            valid += parsed.valid
            if fmt.pairwise and parsed.verdict.value in ("A", "B"):
                decided += 1
                shown_a += parsed.verdict.value == "A"
            if len(examples) < 4:
                examples.append({"text": c.text, "verdict": parsed.verdict.value, "error": parsed.error})
    return {"valid_rate": valid / total, "completions": total,
            "shown_A_share": shown_a / decided if decided else None, "examples": examples}
