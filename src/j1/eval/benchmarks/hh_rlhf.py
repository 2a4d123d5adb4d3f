"""Anthropic HH-RLHF (anthropics/hh-rlhf): ``chosen`` and ``rejected`` are whole dialogues
("\\n\\nHuman: … \\n\\nAssistant: …") that share everything up to the last assistant turn.

The prompt is that shared dialogue (ending with the last human turn); the responses are the two
final assistant turns. Category: "harmless" or "helpful" when the data's name says so.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, register, str_field
from j1.eval.items import Item
from j1.schema import RowError

ASSISTANT = "\n\nAssistant:"


def split_dialogue(chosen: str, rejected: str, where: str) -> tuple[str, str, str]:
    """``(prompt, chosen_reply, rejected_reply)``.

    >>> split_dialogue("\\n\\nHuman: hi\\n\\nAssistant: yo", "\\n\\nHuman: hi\\n\\nAssistant: no", "f:1")
    ('Human: hi', 'yo', 'no')
    """
    cut_c, cut_r = chosen.rfind(ASSISTANT), rejected.rfind(ASSISTANT)
    if cut_c < 0 or cut_r < 0:
        field = "chosen" if cut_c < 0 else "rejected"
        raise RowError(f"{where}: field {field!r} has no '\\n\\nAssistant:' turn")
    if chosen[:cut_c] != rejected[:cut_r]:
        raise RowError(f"{where}: fields 'chosen' and 'rejected' differ before their last assistant turn")
    prompt = chosen[:cut_c].strip()
    return prompt, chosen[cut_c + len(ASSISTANT):].strip(), rejected[cut_r + len(ASSISTANT):].strip()


@register("hh_rlhf", hf_split="test")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    prompt, good, bad = split_dialogue(str_field(row, "chosen", where), str_field(row, "rejected", where), where)
    name = ctx.source.lower()
    cat = "harmless" if "harmless" in name else "helpful" if "helpful" in name else "hh-rlhf"
    return [Item(id=where.rsplit(":", 1)[-1], category=cat, prompt=prompt,
                 responses={"A": good, "B": bad}, pairs=[("A", "B", "A")])]

