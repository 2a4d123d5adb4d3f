"""The verdict probe: how much a judge's preference depends on the content of a pair, read from its
logits with no sampling, for a pairwise verdict judge (``pav``) or a pointwise one (``pos``).

``pav``: each pair is shown in both orders, followed by a fixed, content-free thought and ``<answer>[[``
(as ``--assistant_prefill`` with that start, ``j1.judging.chat``); the next-token log-probabilities of ``A``
and ``B`` give the log-odds of the first-shown response. Averaged over the two orders, a position
preference cancels: ``content_margin`` is the mean of (logodds_AB(better) + logodds_BA(better)) / 2,
``content_acc`` the share of pairs where it is positive (0.5 = chance), ``position_bias`` the mean
first-shown log-odds over both orders (0 = none).

``pos``: each response is shown alone, followed by the fixed thought and ``<score>``; the digits' 0-9
next-token probabilities, renormalised, give its expected score. ``content_margin`` is then the mean
of score(better) - score(worse) in score points, ``content_acc`` the share of pairs where it is
positive, ``mean_score`` the mean expected score (where a content-free drift shows). "10" starts with
the token "1", so it reads as 1: a probe, not a grader.

Each comes with the standard error of its mean over pairs. Greedy ``j1 eval`` turns a small
preference into a fixed verdict; the probe reads the preference itself, so it shows whether a
checkpoint has started to use the content before any verdict changes (``results/train/README.md``).
The statistics are pure functions of per-pair readings (``j1.probe.stats``); ``probe_rows``,
``score_rows`` and ``forced_texts`` build the texts, ``verdict_logodds`` and ``expected_scores`` read
them, ``PROBES`` holds what differs between the formats, and ``run_probe`` is what ``j1 probe`` runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from j1.formats import Messages, get_format
from j1.formats.base import INPUTS
from j1.formats.templates import quote_parts
from j1.judging.chat import render, with_prefill
from j1.pairs import ORDERS, Order, render_both, shown_label, shown_responses
from j1.probe.stats import (
    DIGITS,
    PairLogOdds,
    PairScores,
    ProbeStats,
    ScoreStats,
    expected_score,
    summarise,
    summarise_by_kind,
    summarise_scores,
)
from j1.probe.texts import answer_head, thought_of_prefill
from j1.train.data import Pair
from j1.train.warmup import POINT_THOUGHTS, THOUGHTS

if TYPE_CHECKING:
    from j1.probe.spec import ProbeSpec

log = logging.getLogger(__name__)

# The warm-up's first generic sentence: the thought a warmed-up judge has been taught to write, so the
# letter after it is read in a context the judge knows.
DEFAULT_THOUGHT = THOUGHTS[0]
# The pointwise warm-up's first thought, and the pos recipe's (results/train/configs/pos_j1_135m.yaml).
DEFAULT_POINT_THOUGHT = POINT_THOUGHTS[0]
LETTERS = ("A", "B")


# --- forced texts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeRow:
    """One judge prompt of the probe, ending with the forced start of the answer as an open assistant
    message (``messages[-1]``): ``pair`` shown in ``order`` (``AB`` or ``BA``, pav), or its response
    ``order`` (``A`` or ``B``) shown alone (pos)."""

    pair: Pair
    order: str
    messages: Messages

    @property
    def name(self) -> str:
        """How an error names the row.

        >>> pair = Pair("p", "q", "a", "b", "A")
        >>> ProbeRow(pair, "BA", []).name, ProbeRow(pair, "B", []).name
        ('pair p order BA', 'pair p response B')
        """
        return f"pair {self.pair.pair_id} {'order' if len(self.order) == 2 else 'response'} {self.order}"


def thought_for(pair: Pair, order: str, thought: str = DEFAULT_THOUGHT, quote_words: int = 0) -> str:
    """The forced thought: ``thought``, or with ``quote_words`` > 0 the first N words of the request
    and of each response as ``order`` shows them (``A`` or ``B``: that response alone).

    >>> thought_for(Pair("p", "Add 2 and 3.", "It is 5", "It is 6", "A"), "BA", quote_words=3)
    'Request: Add 2 and. A: It is 6. B: It is 5.'
    >>> thought_for(Pair("p", "Add 2 and 3.", "It is 5", "It is 6", "A"), "B", quote_words=3)
    'Request: Add 2 and. Response: It is 6.'
    """
    if quote_words <= 0:
        return thought
    shown = [pair.response_a if order == "A" else pair.response_b] if len(order) == 1 else \
        shown_responses(pair.response_a, pair.response_b, order)
    return quote_parts(pair.prompt, shown, quote_words)


def probe_rows(
    pairs: Sequence[Pair], *, template: str = "full", thought: str = DEFAULT_THOUGHT, quote_words: int = 0
) -> list[ProbeRow]:
    """Both orders of every pair (AB then BA), worded with the judge ``template`` (with the pair's criteria and
    reference, when it has them), each ending with the forced answer start (``answer_head``)."""
    fmt = get_format("pav", template)
    rows: list[ProbeRow] = []
    for pair in pairs:
        for order, messages in render_both(fmt, pair.prompt, pair.response_a, pair.response_b, pair.guidance):
            head = answer_head(thought_for(pair, order, thought, quote_words))
            rows.append(ProbeRow(pair, order, with_prefill(messages, head)))
    return rows


def score_rows(
    pairs: Sequence[Pair], *, template: str = "full", thought: str = DEFAULT_POINT_THOUGHT, quote_words: int = 0
) -> list[ProbeRow]:
    """Each response of every pair alone (A then B) in the pointwise format, worded with the judge
    ``template``, each ending with the forced score start (``answer_head(thought, "pos")``)."""
    fmt = get_format("pos", template)
    rows: list[ProbeRow] = []
    for pair in pairs:
        for slot, response in (("A", pair.response_a), ("B", pair.response_b)):
            head = answer_head(thought_for(pair, slot, thought, quote_words), "pos")
            rows.append(ProbeRow(pair, slot, with_prefill(fmt.render(pair.prompt, response, None, pair.guidance), head)))
    return rows


def forced_texts(tokenizer, rows: Sequence[ProbeRow]) -> list[str]:
    """The text the model continues for each row: chat template, prompt, open answer (``j1.judging.chat.render``)."""
    return [render(tokenizer, r.messages) for r in rows]


def target_letter(row: ProbeRow) -> str:
    """The letter naming the better response as ``row`` shows it (a supervised target).

    >>> target_letter(ProbeRow(Pair("p", "q", "a", "b", "A"), "BA", []))
    'B'
    """
    return shown_label(row.pair.label, row.order)


def _by_pair(rows: Sequence[ProbeRow], values: Sequence[float], slots: Sequence[str],
             what: str) -> list[tuple[Pair, dict]]:
    """Each pair (in the order pairs first appear) with its rows' values by ``order``, one per slot
    (``what``: what a slot is, for the errors).

    Raises:
        ValueError: the lengths differ, or a pair lacks a slot or has one twice.
    """
    if len(rows) != len(values):
        raise ValueError(f"{len(rows)} rows but {len(values)} values")
    seen: dict[str, dict[str, float]] = {}
    pairs: dict[str, Pair] = {}
    for row, value in zip(rows, values, strict=True):
        by_slot = seen.setdefault(row.pair.pair_id, {})
        if row.order in by_slot:
            raise ValueError(f"pair {row.pair.pair_id!r} appears twice in {what} {row.order}")
        by_slot[row.order] = float(value)
        pairs[row.pair.pair_id] = row.pair
    for pid, by_slot in seen.items():
        missing = [s for s in slots if s not in by_slot]
        if missing:
            raise ValueError(f"pair {pid!r} has no row in {what} {missing[0]}; the probe needs each of {list(slots)}")
    return [(pairs[pid], by_slot) for pid, by_slot in seen.items()]


def pair_logodds(rows: Sequence[ProbeRow], logodds: Sequence[float]) -> list[PairLogOdds]:
    """Gather per-row log-odds (``verdict_logodds`` of ``forced_texts(rows)``) into one record per
    pair, in the order pairs first appear.

    Raises:
        ValueError: the lengths differ, or a pair lacks an order or has one twice.
    """
    return [PairLogOdds(p.pair_id, p.label, v[Order.AB], v[Order.BA], p.kind)
            for p, v in _by_pair(rows, logodds, [o.value for o in ORDERS], "order")]


def pair_scores(rows: Sequence[ProbeRow], scores: Sequence[float]) -> list[PairScores]:
    """Gather per-row expected scores (``expected_scores`` of ``forced_texts(score_rows(...))``) into
    one record per pair, in the order pairs first appear.

    Raises:
        ValueError: the lengths differ, or a pair lacks a response or has one twice.
    """
    return [PairScores(p.pair_id, p.label, v["A"], v["B"], p.kind)
            for p, v in _by_pair(rows, scores, ("A", "B"), "response")]


# --- the model ------------------------------------------------------------------------------------


def probe_model(model: str | None, base: str | None = None, dtype: str = "float32", device: str | None = None):
    """The model to probe (eval mode; an adapter stays unmerged) and its tokenizer (``j1.judging.judges``), on
    ``device`` (default: cuda when present). fp32 everywhere: the log-odds are read, not sampled."""
    from j1.device import default_device
    from j1.judging.judges import load_model

    lm, tokenizer, _ = load_model(model, base=base, dtype=dtype, merge=False, device=device or default_device())
    return lm, tokenizer


def pair_margins(model, tokenizer, items: Sequence[tuple], *, template: str = "full", prefill: str | None = None,
                 progress: bool = False, guides: Sequence | None = None) -> list[float]:
    """The verdict log-odds margin of response A over B for each ``(prompt, response_a, response_b)``, read
    as ``j1 probe`` reads it: the pair in both orders with a fixed thought (the prefill's, else the
    probe's), the letters' next-token log-odds, averaged over the orders; > 0 favours A. ``guides``: each
    item's criteria and reference (``j1.formats.base.Guidance``; None: none)."""
    from j1.train.data import Pair

    guides = guides if guides is not None else [None] * len(items)
    pairs = [Pair(str(k), prompt, a, b, "A", "", g.criteria if g else None, g.reference if g else None)
             for k, ((prompt, a, b), g) in enumerate(zip(items, guides, strict=True))]
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


def next_token_ids(tokenizer, text: str, tokens: Sequence[str]) -> list[int]:
    """The token ids of ``tokens`` (verdict letters, digits) each as the next token after ``text``.

    Raises:
        ValueError: one is not one token there (it would merge with the text before it), so its
            probability is not one next-token probability.
    """
    base = tokenizer(text, add_special_tokens=False).input_ids
    ids = []
    for token in tokens:
        full = tokenizer(text + token, add_special_tokens=False).input_ids
        if full[: len(base)] != base or len(full) != len(base) + 1:
            raise ValueError(f"the tokenizer does not write {token!r} as one token after {text[-20:]!r}; the probe "
                             "reads single-token answers")
        ids.append(full[-1])
    return ids


def letter_ids(tokenizer, text: str) -> tuple[int, int]:
    """The token ids of ``A`` and ``B`` as the next token after ``text`` (``next_token_ids``)."""
    a, b = next_token_ids(tokenizer, text, LETTERS)
    return a, b


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


def expected_scores(model, tokenizer, texts: Sequence[str], *, batch_size: int = 8,
                    progress: bool = False) -> list[float]:
    """The expected digit after each text (every text ends with ``<score>``): ``expected_score`` of the
    digits' next-token log-probabilities, in input order and independent of the batch."""
    if not texts:
        return []
    logp = next_token_logprobs(model, tokenizer, texts, next_token_ids(tokenizer, texts[0], DIGITS),
                               batch_size=batch_size, progress=progress)
    return [expected_score(values) for values in logp]


# --- the command ------------------------------------------------------------------------------------


class VerdictProbe:
    """How the probe reads a pairwise verdict judge (pav): both orders, the letters' log-odds. The
    methods look the module's functions up when called, so a test can replace one (tests/gpu/)."""

    thought = DEFAULT_THOUGHT

    def rows(self, pairs: Sequence[Pair], **kwargs) -> list[ProbeRow]:
        return probe_rows(pairs, **kwargs)

    def read(self, model, tokenizer, texts: Sequence[str], **kwargs) -> list[float]:
        return verdict_logodds(model, tokenizer, texts, **kwargs)

    def gather(self, rows: Sequence[ProbeRow], values: Sequence[float]) -> list[PairLogOdds]:
        return pair_logodds(rows, values)

    def summarise(self, pairs: Sequence[PairLogOdds]) -> ProbeStats:
        return summarise(pairs)

    def pair_json(self, p: PairLogOdds) -> dict[str, Any]:
        return {"pair_id": p.pair_id, "kind": p.kind, "label": p.label, "logodds_ab": p.ab, "logodds_ba": p.ba,
                "margin": p.margin}


class ScoreProbe:
    """How the probe reads a pointwise judge (pos): each response alone, its expected score."""

    thought = DEFAULT_POINT_THOUGHT

    def rows(self, pairs: Sequence[Pair], **kwargs) -> list[ProbeRow]:
        return score_rows(pairs, **kwargs)

    def read(self, model, tokenizer, texts: Sequence[str], **kwargs) -> list[float]:
        return expected_scores(model, tokenizer, texts, **kwargs)

    def gather(self, rows: Sequence[ProbeRow], values: Sequence[float]) -> list[PairScores]:
        return pair_scores(rows, values)

    def summarise(self, pairs: Sequence[PairScores]) -> ScoreStats:
        return summarise_scores(pairs)

    def pair_json(self, p: PairScores) -> dict[str, Any]:
        return {"pair_id": p.pair_id, "kind": p.kind, "label": p.label, "score_a": p.a, "score_b": p.b,
                "margin": p.margin}


# The judge formats the probe reads, each whole in its class (``--format``; the spec checks it against
# ``j1.probe.texts.PROBE_FORMATS``, a leaf, and a test keeps the two the same).
PROBES: dict[str, VerdictProbe | ScoreProbe] = {"pav": VerdictProbe(), "pos": ScoreProbe()}


def run_probe(cfg: ProbeSpec) -> dict[str, Any]:
    """What ``j1 probe`` does with a ``ProbeSpec``: read the pairs, probe the model in its format
    (``PROBES``), summarise, and write ``cfg.out`` (atomically) when set.

    Returns:
        The summary: model, data, format, pairs, overall statistics (``all``) and per kind
        (``by_kind``); the ``--out`` file has the per-pair readings too (log-odds or expected scores).

    Raises:
        RowError: a malformed data file. ValueError, OSError: a bad model or option.
    """
    from j1.models import display_name
    from j1.runs.atomic import write_json_atomic
    from j1.train.data import load_pairs

    probe = PROBES[cfg.format]
    # The data first: a bad file fails in a second, before the model loads.
    pairs = load_pairs(cfg.data)
    if cfg.limit is not None:
        pairs = pairs[: cfg.limit]
    if not cfg.use_reference:  # a pair file's criteria and reference are shown only when asked, as in j1 eval
        pairs = [replace(p, criteria=None, reference=None) for p in pairs]
    thought = probe.thought if cfg.thought is None else cfg.thought
    rows = probe.rows(pairs, template=cfg.template, thought=thought, quote_words=cfg.quote_words)
    model, tokenizer = probe_model(cfg.model, cfg.base)
    texts = forced_texts(tokenizer, rows)
    check_context(model, tokenizer, texts, [r.name for r in rows])
    values = probe.read(model, tokenizer, texts, batch_size=cfg.batch_size, progress=cfg.progress)
    per_pair = probe.gather(rows, values)
    summary = {
        "model": display_name(cfg.model),
        "base": cfg.base,
        "data": cfg.data,
        "format": cfg.format,
        "template": cfg.template,
        "thought": "quote" if cfg.quote_words > 0 else thought,
        "quote_words": cfg.quote_words,
        "inputs": {n: sum(n in p.guidance.inputs for p in pairs) for n in INPUTS},
        "all": probe.summarise(per_pair).as_dict(),
        "by_kind": {k: s.as_dict() for k, s in summarise_by_kind(per_pair, probe.summarise).items()},
    }
    if cfg.out:
        write_json_atomic(cfg.out, summary | {"pairs": [probe.pair_json(p) for p in per_pair]})
    return summary
