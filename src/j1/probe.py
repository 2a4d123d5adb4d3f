"""The verdict probe: how much a ``pav`` judge's verdict depends on the content of a pair, read from its
logits with no sampling.

Every pair is shown in both orders. Each judge prompt is followed by a fixed, content-free thought
and ``<answer>[[`` (the same text as ``--assistant_prefill`` with that start, ``j1.chat``), and the
next-token log-probabilities of ``A`` and ``B`` give the log-odds of the first-shown response.
Averaging the better response's log-odds over the two orders cancels any position preference, so
what is left is the content signal:

- ``content_margin``: mean over pairs of (logodds_AB(better) + logodds_BA(better)) / 2 (0 = none);
- ``content_acc``: the share of pairs whose margin is positive (0.5 = chance);
- ``position_bias``: mean over pairs of the first-shown response's log-odds, averaged over the two
  orders (0 = none).

Each comes with the standard error of its mean over pairs. Greedy ``j1 eval`` turns a small
preference into a fixed verdict; the probe reads the preference itself, exactly and cheaply, so it
shows whether a checkpoint has started to use the content before any verdict changes
(``results/train/README.md``).

The statistics are pure functions of per-pair log-odds (``PairLogOdds``, ``summarise``); the model
part builds the forced texts (``probe_rows``, ``forced_texts``) and reads the log-odds
(``verdict_logodds``); ``run_probe`` is what ``j1 probe`` runs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from j1.chat import render, with_prefill
from j1.formats import Messages, get_format
from j1.formats.templates import quote_parts
from j1.pairs import ORDERS, Order, render_both, shown_label, shown_responses
from j1.pairs import order as parse_order
from j1.train.data import Pair
from j1.train.warmup import THOUGHTS

if TYPE_CHECKING:
    from j1.probe_spec import ProbeSpec

log = logging.getLogger(__name__)

# The warm-up's first generic sentence: the thought a warmed-up judge has been taught to write, so the
# letter after it is read in a context the judge knows.
DEFAULT_THOUGHT = THOUGHTS[0]
LETTERS = ("A", "B")


# --- statistics (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PairLogOdds:
    """One pair's verdict log-odds, log p(A)/p(B) of the letter *as shown*, in each order.

    Attributes:
        pair_id: the pair.
        label: the better response in the original placement (``A`` or ``B``).
        ab: log-odds of the first-shown response in order AB (A shown first).
        ba: log-odds of the first-shown response in order BA (B shown first).
        kind: the pair's kind (``math-mismatch``, ``chat``, ...), for the per-kind breakdown.
    """

    pair_id: str
    label: str
    ab: float
    ba: float
    kind: str = ""

    def better(self, order: str) -> float:
        """Log-odds of the better response in ``order``.

        >>> PairLogOdds("p", "A", ab=2.0, ba=1.0).better("BA")
        -1.0
        """
        logodds = self.ab if parse_order(order) is Order.AB else self.ba
        return logodds if shown_label(self.label, order) == "A" else -logodds

    @property
    def margin(self) -> float:
        """The content margin: the better response's log-odds averaged over both orders, so a
        preference for a position (which adds the same amount to both orders' first-shown log-odds)
        cancels.

        >>> PairLogOdds("p", "A", ab=2.0, ba=1.0).margin
        0.5
        """
        return (self.better(Order.AB) + self.better(Order.BA)) / 2

    @property
    def first_shown(self) -> float:
        """The position preference: the first-shown response's log-odds averaged over both orders.

        >>> PairLogOdds("p", "A", ab=2.0, ba=1.0).first_shown
        1.5
        """
        return (self.ab + self.ba) / 2


@dataclass(frozen=True)
class ProbeStats:
    """What the probe reports for a set of pairs; ``*_se`` is the standard error of the mean over
    pairs (None for a single pair)."""

    pairs: int
    content_margin: float
    content_margin_se: float | None
    content_acc: float
    content_acc_se: float | None
    position_bias: float
    position_bias_se: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def mean_se(values: Sequence[float]) -> tuple[float, float | None]:
    """The mean and its standard error (sample standard deviation, n - 1, over sqrt(n)); the error
    is None for one value, which has no spread to estimate it from.

    >>> mean_se([1.0, 3.0])
    (2.0, 1.0)

    Raises:
        ValueError: no values.
    """
    n = len(values)
    if n == 0:
        raise ValueError("mean_se of no values")
    mean = sum(values) / n
    if n == 1:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def summarise(pairs: Sequence[PairLogOdds]) -> ProbeStats:
    """Content margin, content accuracy (share of pairs with a positive margin; a zero margin is
    not counted) and position bias over ``pairs``, each with its standard error.

    Raises:
        ValueError: no pairs.
    """
    if not pairs:
        raise ValueError("the probe needs at least one pair")
    margin, margin_se = mean_se([p.margin for p in pairs])
    acc, acc_se = mean_se([float(p.margin > 0) for p in pairs])
    bias, bias_se = mean_se([p.first_shown for p in pairs])
    return ProbeStats(len(pairs), margin, margin_se, acc, acc_se, bias, bias_se)


def summarise_by_kind(pairs: Sequence[PairLogOdds]) -> dict[str, ProbeStats]:
    """``summarise`` per pair kind, kinds in sorted order."""
    kinds = sorted({p.kind for p in pairs})
    return {k: summarise([p for p in pairs if p.kind == k]) for k in kinds}


# --- forced texts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeRow:
    """One judge prompt of the probe: ``pair`` shown in ``order``, then the forced start of the
    answer as an open assistant message (``messages[-1]``)."""

    pair: Pair
    order: str
    messages: Messages


def answer_head(thought: str) -> str:
    """The start of a ``pav`` answer up to the verdict letter, with ``thought`` as the thought.

    >>> answer_head("I compare.")
    '<think>I compare.</think>\\n<answer>[['
    """
    answer_prefix = get_format("pav").answer_template.split("{verdict}")[0]  # "<answer>[["
    return f"<think>{thought}</think>\n{answer_prefix}"


def thought_of_prefill(prefill: str | None) -> str | None:
    """The thought of a prefill that ``answer_head`` could have written, None for any other prefill.

    >>> thought_of_prefill("<think>I compare.</think>\\n<answer>[["), thought_of_prefill("<think>")
    ('I compare.', None)
    """
    start, end = "<think>", answer_head("")[len("<think>"):]  # end: "</think>\n<answer>[["
    if not prefill or not prefill.startswith(start) or not prefill.endswith(end):
        return None
    thought = prefill[len(start): len(prefill) - len(end)]
    return thought if thought and "</think>" not in thought else None


def thought_for(pair: Pair, order: str, thought: str = DEFAULT_THOUGHT, quote_words: int = 0) -> str:
    """The forced thought: ``thought``, or with ``quote_words`` > 0 the first N words of the request
    and of each response as ``order`` shows them.

    >>> thought_for(Pair("p", "Add 2 and 3.", "It is 5", "It is 6", "A"), "BA", quote_words=3)
    'Request: Add 2 and. A: It is 6. B: It is 5.'
    """
    if quote_words <= 0:
        return thought
    return quote_parts(pair.prompt, shown_responses(pair.response_a, pair.response_b, order), quote_words)


def probe_rows(
    pairs: Sequence[Pair], *, template: str = "full", thought: str = DEFAULT_THOUGHT, quote_words: int = 0
) -> list[ProbeRow]:
    """Both orders of every pair (AB then BA), worded with the judge ``template``, each ending with
    the forced answer start (``answer_head``)."""
    fmt = get_format("pav", template)
    rows: list[ProbeRow] = []
    for pair in pairs:
        for order, messages in render_both(fmt, pair.prompt, pair.response_a, pair.response_b):
            head = answer_head(thought_for(pair, order, thought, quote_words))
            rows.append(ProbeRow(pair, order, with_prefill(messages, head)))
    return rows


def forced_texts(tokenizer, rows: Sequence[ProbeRow]) -> list[str]:
    """The text the model continues for each row: chat template, prompt, open answer (``j1.chat.render``)."""
    return [render(tokenizer, r.messages) for r in rows]


def target_letter(row: ProbeRow) -> str:
    """The letter naming the better response as ``row`` shows it (a supervised target).

    >>> target_letter(ProbeRow(Pair("p", "q", "a", "b", "A"), "BA", []))
    'B'
    """
    return shown_label(row.pair.label, row.order)


def pair_logodds(rows: Sequence[ProbeRow], logodds: Sequence[float]) -> list[PairLogOdds]:
    """Gather per-row log-odds (``verdict_logodds`` of ``forced_texts(rows)``) into one record per
    pair, in the order pairs first appear.

    Raises:
        ValueError: the lengths differ, or a pair lacks an order or has one twice.
    """
    if len(rows) != len(logodds):
        raise ValueError(f"{len(rows)} rows but {len(logodds)} log-odds")
    seen: dict[str, dict[str, float]] = {}
    pairs: dict[str, Pair] = {}
    for row, value in zip(rows, logodds, strict=True):
        by_order = seen.setdefault(row.pair.pair_id, {})
        if row.order in by_order:
            raise ValueError(f"pair {row.pair.pair_id!r} appears twice in order {row.order}")
        by_order[row.order] = float(value)
        pairs[row.pair.pair_id] = row.pair
    out = []
    for pid, by_order in seen.items():
        missing = [o.value for o in ORDERS if o.value not in by_order]
        if missing:
            raise ValueError(f"pair {pid!r} has no row in order {missing[0]}; the probe needs both orders")
        pair = pairs[pid]
        out.append(PairLogOdds(pid, pair.label, by_order[Order.AB], by_order[Order.BA], pair.kind))
    return out


# --- the model ------------------------------------------------------------------------------------


def load_judge(model: str | None, base: str | None = None, dtype: str = "float32", device: str | None = None):
    """The model to probe (eval mode; an adapter stays unmerged) and its tokenizer (``j1.judges``), on
    ``device`` (default: cuda when present). fp32 everywhere: the log-odds are read, not sampled."""
    from j1.device import default_device
    from j1.judges import load_model

    lm, tokenizer, _ = load_model(model, base=base, dtype=dtype, merge=False, device=device or default_device())
    return lm, tokenizer


def pair_margins(model, tokenizer, items: Sequence[tuple], *, template: str = "full", prefill: str | None = None,
                 progress: bool = False) -> list[float]:
    """The verdict log-odds margin of response A over B for each ``(prompt, response_a, response_b)``, read
    as ``j1 probe`` reads it: the pair in both orders with a fixed thought (the prefill's, else the
    probe's), the letters' next-token log-odds, averaged over the orders; > 0 favours A."""
    from j1.train.data import Pair

    pairs = [Pair(str(k), prompt, a, b, "A") for k, (prompt, a, b) in enumerate(items)]
    rows = probe_rows(pairs, template=template, thought=thought_of_prefill(prefill) or DEFAULT_THOUGHT)
    values = verdict_logodds(model, tokenizer, forced_texts(tokenizer, rows), progress=progress)
    return [p.margin for p in pair_logodds(rows, values)]


def check_context(model, tokenizer, texts: Sequence[str], names: Sequence[str]) -> None:
    """Raise ``ContextTooLong`` naming the first text longer than the model's context (its
    ``max_position_embeddings``), before any forward pass: the probe reads one next token, so a text
    must fit with one more."""
    from j1.backends import ContextTooLong

    context = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if not isinstance(context, int):
        return
    for text, name in zip(texts, names, strict=True):
        n = len(tokenizer(text, add_special_tokens=False).input_ids)
        if n + 1 > context:
            raise ContextTooLong.of(n, 1, context, f" ({name})")


def letter_ids(tokenizer, text: str) -> tuple[int, int]:
    """The token ids of ``A`` and ``B`` as the next token after ``text``.

    Raises:
        ValueError: a letter is not one token there (it would merge with the text before it), so its
            probability is not one next-token probability.
    """
    base = tokenizer(text, add_special_tokens=False).input_ids
    ids = []
    for letter in LETTERS:
        full = tokenizer(text + letter, add_special_tokens=False).input_ids
        if full[: len(base)] != base or len(full) != len(base) + 1:
            raise ValueError(f"the tokenizer does not write the verdict letter {letter!r} as one token after "
                             f"{text[-20:]!r}; the probe reads single-token letters")
        ids.append(full[-1])
    return ids[0], ids[1]


def next_token_logprobs(model, tokenizer, texts: Sequence[str], token_ids: Sequence[int], *, batch_size: int = 8,
                        progress: bool = False) -> list[list[float]]:
    """log p(token) of each of ``token_ids`` as the next token after each text.

    Texts are batched by length (less padding) and results returned in input order. Position ids
    follow the attention mask, as in generation, so a row's value does not depend on its batch.

    Args:
        model: a causal LM (a PeftModel too).
        tokenizer: its tokenizer, with a pad token.
        texts: the forced texts (``forced_texts``).
        token_ids: the tokens to read.
        batch_size: texts per forward pass.
        progress: show a progress bar.

    Returns:
        One list per text, one log-probability per token id.
    """
    import torch
    from tqdm.auto import tqdm

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[list[float]] = [[] for _ in texts]
    batches = [order[k : k + batch_size] for k in range(0, len(order), batch_size)]
    device = next(model.parameters()).device
    ids = torch.tensor(list(token_ids), device=device)
    model.eval()
    with torch.no_grad():
        for idx in tqdm(batches, desc="probe", total=len(batches), disable=not progress):
            enc = tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True,
                            add_special_tokens=False).to(device)
            mask = enc["attention_mask"]  # (b, L)
            position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
            # The last real token of each row (left or right padding): its logits predict the next token.
            last = mask.shape[1] - 1 - mask.flip(1).int().argmax(dim=1)  # (b,)
            # The LM head runs on those columns only, not on every position (a tenth of the pass, and a
            # (b, L, vocab) tensor that is most of its memory).
            keep = torch.unique(last)
            logits = model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=position_ids,
                           logits_to_keep=keep).logits  # (b, len(keep), V)
            column = torch.searchsorted(keep, last)
            rows = torch.arange(len(idx), device=device)
            logp = torch.log_softmax(logits[rows, column].float(), dim=-1)  # (b, V)
            for i, values in zip(idx, logp[:, ids].tolist(), strict=True):
                out[i] = values
    return out


def verdict_logodds(model, tokenizer, texts: Sequence[str], *, batch_size: int = 8, progress: bool = False) -> list[float]:
    """log p(A) - log p(B) of the next token after each text (every text ends with ``<answer>[[``),
    in input order and independent of the batch (``next_token_logprobs``)."""
    if not texts:
        return []
    logp = next_token_logprobs(model, tokenizer, texts, letter_ids(tokenizer, texts[0]), batch_size=batch_size,
                               progress=progress)
    return [a - b for a, b in logp]


# --- the command ------------------------------------------------------------------------------------


def run_probe(cfg: ProbeSpec) -> dict[str, Any]:
    """What ``j1 probe`` does with a ``ProbeSpec``: read the pairs, probe the model, summarise, and
    write ``cfg.out`` (atomically) when set.

    Returns:
        The summary: model, data, pairs, overall statistics (``all``) and per kind (``by_kind``);
        the ``--out`` file has the per-pair log-odds too.

    Raises:
        RowError: a malformed data file. ValueError, OSError: a bad model or option.
    """
    from j1.models import display_name
    from j1.schema import write_json_atomic
    from j1.train.data import load_pairs

    # The data first: a bad file fails in a second, before the model loads.
    pairs = load_pairs(cfg.data)
    if cfg.limit is not None:
        pairs = pairs[: cfg.limit]
    thought = DEFAULT_THOUGHT if cfg.thought is None else cfg.thought
    rows = probe_rows(pairs, template=cfg.template, thought=thought, quote_words=cfg.quote_words)
    model, tokenizer = load_judge(cfg.model, cfg.base)
    texts = forced_texts(tokenizer, rows)
    check_context(model, tokenizer, texts, [f"pair {r.pair.pair_id} order {r.order}" for r in rows])
    logodds = verdict_logodds(model, tokenizer, texts, batch_size=cfg.batch_size, progress=cfg.progress)
    per_pair = pair_logodds(rows, logodds)
    summary = {
        "model": display_name(cfg.model),
        "base": cfg.base,
        "data": cfg.data,
        "template": cfg.template,
        "thought": "quote" if cfg.quote_words > 0 else thought,
        "quote_words": cfg.quote_words,
        "all": summarise(per_pair).as_dict(),
        "by_kind": {k: s.as_dict() for k, s in summarise_by_kind(per_pair).items()},
    }
    if cfg.out:
        write_json_atomic(cfg.out, summary | {"pairs": [
            {"pair_id": p.pair_id, "kind": p.kind, "label": p.label, "logodds_ab": p.ab, "logodds_ba": p.ba,
             "margin": p.margin} for p in per_pair]})
    return summary
