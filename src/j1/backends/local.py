"""Local generation with transformers: batched across prompts, N samples sharing one prefill.

``generate(num_return_sequences=N)`` copies each prompt N times *before* the prefill, so a long
judge prompt is encoded N times, and it grows its KV cache by copying at every step. Here each
prompt is encoded once for its N samples and Llama-family models decode with ``j1.backends.decode`` (the
prompt's cache read in place, a static cache for the new tokens, finished rows compacted away):
``generate``'s tokens (greedy, and sampled under a seed; tested), at a fraction of the cost. A row stops
where its answer is complete (``SamplingParams.stop``, ``AnswerEnds``), as a served engine stops at a stop
string: the text is the same, without the decode steps a judge would spend past its answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence

from j1.backends import sharedprefix
from j1.backends.base import Backend, Completion, ContextTooLong, Messages, SamplingParams, Usage, prompt_seed
from j1.judging.chat import prefill, render
from j1.models import display_name

log = logging.getLogger(__name__)


class LocalBackend(Backend):
    """A transformers causal LM on this machine.

    Args:
        model: a judge (``j1.judging.judges``: a shipped name, a model or adapter folder), an HF id, or None
            for the embedded SmolLM2-135M-Instruct.
        batch_rows: most sequences (prompts x samples) decoded together (None: by the device,
            ``j1.device.rows_per_batch``).
        max_batch_tokens: most padded prompt tokens x samples in one batch (bounds KV memory).
        dtype: "auto" (bfloat16 where the device computes it natively, else float32: ``j1.device.local_dtype``),
            "float32", "bfloat16" or "float16".
        device: "cpu", "cuda", ... (default: cuda when available).
        share_prefill: encode each prompt once for its n samples (off only to measure the gain).
        max_context: the most tokens (prompt plus answer) it accepts; None: the model's own limit.

    How it decodes depends on the device (``engine``): on a CPU, ``j1.backends.decode`` with each prompt encoded
    once for its samples; on a GPU, ``generate`` with a static cache (``j1.device.fast_decode``).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_rows: int | None = None,
        max_batch_tokens: int = 65536,
        dtype: str = "auto",
        device: str | None = None,
        share_prefill: bool = True,
        max_context: int | None = None,
    ):
        from j1.device import default_device, local_dtype, rows_per_batch
        from j1.judging.judges import load_model

        self.model_name = display_name(model)
        self.device = device or default_device()
        self.dtype = local_dtype(dtype, self.device)
        # A LoRA judge is merged into its base in memory: plain weights take j1.backends.decode's fast path.
        self.model, self.tokenizer, _ = load_model(model, dtype=self.dtype, device=self.device)
        self.batch_rows = rows_per_batch(batch_rows, self.device)
        self.max_batch_tokens = max_batch_tokens
        self.share_prefill = share_prefill
        self.max_context = max_context
        self.usage = Usage()

    @classmethod
    def from_model(cls, model, tokenizer, *, name: str = "in-memory", **kw) -> LocalBackend:
        """Wrap an already loaded model (e.g. a policy during training)."""
        self = cls.__new__(cls)
        self.model_name, self.model, self.tokenizer = name, model, tokenizer
        from j1.device import rows_per_batch

        weight = next(model.parameters())
        self.device, self.dtype = str(weight.device), str(weight.dtype).removeprefix("torch.")
        self.batch_rows = rows_per_batch(kw.get("batch_rows"), self.device)
        self.max_batch_tokens = kw.get("max_batch_tokens", 65536)
        self.share_prefill = kw.get("share_prefill", True)
        self.max_context = kw.get("max_context")
        self.usage = Usage()
        return self

    @property
    def engine(self) -> str:
        """How this backend decodes: ``j1.backends.decode`` on a CPU, ``generate`` (static cache) on a GPU."""
        from j1.device import fast_decode

        if not self.share_prefill:
            return "generate"
        return "j1.decode" if fast_decode(self.device) else "generate (static cache)"

    def render(self, messages: Messages) -> str:
        return render(self.tokenizer, messages)

    def context_window(self) -> int | None:
        """The most tokens it accepts: ``max_context`` when given, else the model's position limit from
        its config (``max_position_embeddings`` in Llama-family configs, ``n_positions`` in GPT-2-style
        ones); None when the config names none."""
        if self.max_context is not None:
            return self.max_context
        return self.model_context()

    def model_context(self) -> int | None:
        """The model's position limit from its config, whatever ``max_context`` says (``context_window``)."""
        from j1.judging.limits import config_context

        return config_context(getattr(self.model, "config", None))

    def count_tokens(self, messages: Messages) -> int | None:
        """Prompt tokens of ``messages`` as ``stream`` counts them (chat template, no special tokens added)."""
        tokenizer = self._counting_tokenizer()
        return len(tokenizer(render(tokenizer, messages), add_special_tokens=False).input_ids)

    def token_spans(self, text: str) -> list[tuple[int, int]] | None:
        """Character spans of the tokens of ``text``; None for a slow tokenizer (no offsets)."""
        tokenizer = self._counting_tokenizer()
        if not getattr(tokenizer, "is_fast", False):
            return None
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(a), int(b)) for a, b in enc["offset_mapping"]]

    def _counting_tokenizer(self):
        """A private copy of the tokenizer for ``count_tokens``/``token_spans``, which ``j1 serve`` calls
        from other threads while a batch generates: ``_generate`` sets the fast tokenizer's padding (Rust
        state borrowed mutably), and a second thread encoding on the same object meanwhile fails with
        "Already borrowed". Made on first use; call once before generating from several threads."""
        copy_ = self.__dict__.get("_counter")
        if copy_ is None:
            import copy

            copy_ = copy.deepcopy(self.tokenizer)
            # A copy taken after a padded call carries its padding; the first unpadded call turns it off
            # (a mutation), so make that call here, before the copy is shared.
            copy_("", add_special_tokens=False)
            copy_ = self.__dict__.setdefault("_counter", copy_)
        return copy_

    def _batches(self, lengths: list[int], n: int) -> list[list[int]]:
        """Prompt indices grouped by similar length (less padding) within the row/token limits."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        per_batch = max(1, self.batch_rows // n)
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            longest = max([lengths[j] for j in cur] + [lengths[i]])
            if cur and (len(cur) + 1 > per_batch or (len(cur) + 1) * n * longest > self.max_batch_tokens):
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
        return batches

    def stream(self, prompts: Sequence[Messages], params: SamplingParams,
               on_finish: Callable[[int], None] | None = None,
               on_tokens: Callable[[list[int]], None] | None = None) -> Iterator[tuple[int, list[Completion]]]:
        texts = [self.render(m) for m in prompts]
        lengths = [len(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
        # A prompt that cannot fit the context with its answer is refused, not run: after the others.
        context = self.context_window()
        too_long = [i for i, n in enumerate(lengths) if context is not None and n + params.max_new_tokens > context]
        refused = set(too_long)
        fits = [i for i in range(len(texts)) if i not in refused]
        for local in self._batches([lengths[i] for i in fits], params.n):
            batch = [fits[k] for k in local]
            # One torch seed per batch, derived from its prompts: reproducible for the same inputs.
            seed = sum(prompt_seed(params.seed, prompts[i]) for i in batch) & 0x7FFFFFFF
            # A prefilled prompt's completion is the whole assistant message (j1.judging.chat).
            heads = [prefill(prompts[i]) for i in batch]
            outs = self._generate([texts[i] for i in batch], params, seed, heads,
                                  on_done=_prompts_done(batch, params.n, on_finish) if on_finish else None,
                                  on_step=_prompt_tokens(batch, params.n, on_tokens) if on_tokens else None)
            yield from zip(batch, outs, strict=True)
        if too_long:
            error = ContextTooLong.of(lengths[too_long[0]], params.max_new_tokens, context)
            error.index = too_long[0]
            raise error

    def _generate(self, texts: list[str], params: SamplingParams, seed: int, heads: list[str],
                  on_done: Callable[[list[int]], None] | None = None,
                  on_step: Callable[[list[int]], None] | None = None) -> list[list[Completion]]:
        import torch

        t0 = time.perf_counter()
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        ids, mask = enc.input_ids, enc.attention_mask
        n = params.n
        gen_kw = dict(
            max_new_tokens=params.max_new_tokens,
            pad_token_id=self.tokenizer.pad_token_id,
            do_sample=params.temperature > 0,
        )
        if params.temperature > 0:
            gen_kw.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        torch.manual_seed(seed)
        engine = self.engine
        # Rows stop where their answer is complete (row r is prompt r // n's sample): at a stop string.
        ends = AnswerEnds(self.tokenizer, [h for h in heads for _ in range(n)], params) if params.stop else None
        with torch.inference_mode():
            if engine != "j1.decode":
                # On a GPU a static cache (allocated once for the batch) beats the growing one. transformers
                # would torch.compile the forward for it, again for every new batch shape: minutes a shape.
                static = dict(cache_implementation="static", disable_compile=True) \
                    if engine == "generate (static cache)" else {}
                if on_done is not None or on_step is not None or ends is not None:  # as j1.backends.decode does
                    static["stopping_criteria"] = sharedprefix.reporting(self.model, on_step=on_step, on_done=on_done,
                                                                         ends=ends)
                out = self.model.generate(
                    input_ids=ids, attention_mask=mask, num_return_sequences=n, **gen_kw, **static
                )
            else:
                # Each prompt encoded once for its n samples, then j1's decode (j1.backends.sharedprefix, j1.backends.decode).
                out = sharedprefix.generate(
                    self.model, ids.repeat_interleave(n, 0), mask.repeat_interleave(n, 0), on_done=on_done,
                    on_step=on_step, ends=ends, **gen_kw
                )
        new = out[:, ids.shape[1]:]
        eos = set(_as_list(self.model.generation_config.eos_token_id)) | {self.tokenizer.eos_token_id}
        answer_end = ends_of(params)
        results: list[list[Completion]] = []
        for p in range(len(texts)):
            comps = []
            for s in range(n):
                row = new[p * n + s].tolist()
                if ends is not None and p * n + s in ends.ended:  # stopped at its answer: the rest is padding
                    row = row[: ends.ended[p * n + s]]
                stop_at = next((k for k, t in enumerate(row) if t in eos), None)
                toks = row if stop_at is None else row[:stop_at]
                head = heads[p]
                text = head + self.tokenizer.decode(toks, skip_special_tokens=True)
                used = len(toks) + (0 if stop_at is None else 1)
                end = answer_end(text) if answer_end is not None else None
                if end is not None and end > len(head):  # the answer ended there: as if generation stopped
                    text, stop_at = text[:end], end
                    used = _tokens_to(self.tokenizer, toks, end - len(head))
                comps.append(Completion(text=text, finish_reason="length" if stop_at is None else "stop",
                                        completion_tokens=used))
            results.append(comps)
        self.usage.prompt_tokens += int(mask.sum())
        self.usage.completion_tokens += sum(c.completion_tokens for r in results for c in r)
        self.usage.requests += len(texts)
        log.debug("batch of %d prompts x %d samples in %.1fs", len(texts), n, time.perf_counter() - t0)
        return results


def ends_of(params: SamplingParams) -> Callable[[str], int | None] | None:
    """Where a completion's text ends: ``params.ends_at`` (a judge format's answer end), else just after the
    first of ``params.stop`` (a stop string is kept, as ``j1.backends.engine.restore_stop`` puts it back);
    None when neither is given.

    >>> ends_of(SamplingParams(stop=("</a>",)))("<a>1</a> more </a>"), ends_of(SamplingParams())
    (8, None)
    """
    if params.ends_at is not None:
        return params.ends_at
    if not params.stop:
        return None

    def first_stop(text: str) -> int | None:
        found = [text.find(s) + len(s) for s in params.stop if s in text]
        return min(found) if found else None

    return first_stop


class AnswerEnds:
    """Which rows are complete with the token they just wrote (``j1.backends.decode``'s ``ends``): a row is complete
    once its text (its prefill ``head`` and its tokens) ends where ``ends_of(params)`` says, past the head.

    The text is decoded only at a token that may close a stop string (it holds a stop's last character, or
    part of a multi-byte character); a complete row is recorded in ``ended`` (row -> tokens kept). Its text
    is then what the whole row would have given, cut at the same place: ``answer_end`` reads the text only
    up to its end, and a byte-level BPE decodes a prefix of tokens to a prefix of the text.
    """

    def __init__(self, tokenizer, heads: list[str], params: SamplingParams):
        self.tokenizer, self.heads = tokenizer, heads
        self.end = ends_of(params)
        self.marks = {s[-1] for s in params.stop if s}
        self.tokens: list[list[int]] = [[] for _ in heads]
        self.ended: dict[int, int] = {}

    def __call__(self, rows: list[int], tokens: list[int]) -> list[int]:
        complete = []
        for row, token in zip(rows, tokens, strict=True):
            toks = self.tokens[row]
            toks.append(token)
            if row in self.ended:
                continue
            piece = self.tokenizer.decode([token])
            if not any(m in piece for m in self.marks) and "\ufffd" not in piece:
                continue
            head = self.heads[row]
            end = self.end(head + self.tokenizer.decode(toks, skip_special_tokens=True))
            if end is not None and end > len(head):
                self.ended[row] = len(toks)
                complete.append(row)
        return complete


def _tokens_to(tokenizer, toks: list[int], chars: int) -> int:
    """The fewest leading tokens of ``toks`` whose text is at least ``chars`` long (binary search:
    a longer prefix never decodes shorter)."""
    lo, hi = 1, len(toks)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(tokenizer.decode(toks[:mid], skip_special_tokens=True)) < chars:
            lo = mid + 1
        else:
            hi = mid
    return hi


def _prompts_done(batch: list[int], n: int, on_finish: Callable[[int], None]) -> Callable[[list[int]], None]:
    """Turn finished generation rows (prompt p's samples are rows p*n .. p*n+n-1 of the batch) into
    ``on_finish(i)`` calls, one per prompt ``i = batch[p]`` once all its samples have ended."""
    left = [n] * len(batch)

    def rows_done(rows: list[int]) -> None:
        for row in rows:
            p = row // n
            left[p] -= 1
            if left[p] == 0:
                on_finish(batch[p])

    return rows_done


def _prompt_tokens(batch: list[int], n: int, on_tokens: Callable[[list[int]], None]) -> Callable[[list[int]], None]:
    """Turn the generation rows that wrote a token at a step into ``on_tokens([i, ...])``: the prompt index
    ``i = batch[p]`` of each such row (prompt p's samples are rows p*n .. p*n+n-1)."""
    return lambda rows: on_tokens([batch[row // n] for row in rows])


def _as_list(x) -> list[int]:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]
