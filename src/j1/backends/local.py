"""Local generation with transformers: batched across prompts, N samples sharing one prefill.

``generate(num_return_sequences=N)`` copies each prompt N times *before* the prefill, so a long
judge prompt is encoded N times, and it grows its KV cache by copying at every step. Here each
prompt is encoded once for its N samples and Llama-family models decode with ``j1.decode`` (the
prompt's cache read in place, a static cache for the new tokens, finished rows compacted away):
``generate``'s tokens (greedy, and sampled under a seed; tested), at a fraction of the cost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from j1 import sharedprefix
from j1.backends.base import Backend, Completion, Messages, SamplingParams, Usage, prompt_seed
from j1.chat import prefill, render
from j1.models import display_name

log = logging.getLogger(__name__)


class LocalBackend(Backend):
    """A transformers causal LM on this machine.

    Args:
        model: a judge (``j1.judges``: a shipped name, a model or adapter folder), an HF id, or None
            for the embedded SmolLM2-135M-Instruct.
        max_batch_rows: most sequences (prompts x samples) decoded together.
        max_batch_tokens: most padded prompt tokens x samples in one batch (bounds KV memory).
        dtype: "float32" (fastest on CPUs without bf16 units), "bfloat16" or "float16".
        device: "cpu", "cuda", ... (default: cuda when available).
        share_prefill: encode each prompt once for its n samples (off only to measure the gain).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        max_batch_rows: int = 32,
        max_batch_tokens: int = 65536,
        dtype: str = "float32",
        device: str | None = None,
        share_prefill: bool = True,
    ):
        import torch

        from j1.judges import load_model

        self.model_name = display_name(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # A LoRA judge is merged into its base in memory: plain weights take j1.decode's fast path.
        self.model, self.tokenizer, _ = load_model(model, dtype=dtype, device=self.device)
        self.max_batch_rows = max_batch_rows
        self.max_batch_tokens = max_batch_tokens
        self.share_prefill = share_prefill
        self.usage = Usage()

    @classmethod
    def from_model(cls, model, tokenizer, *, name: str = "in-memory", **kw) -> LocalBackend:
        """Wrap an already loaded model (e.g. a policy during training)."""
        self = cls.__new__(cls)
        self.model_name, self.model, self.tokenizer = name, model, tokenizer
        self.device = str(next(model.parameters()).device)
        self.max_batch_rows = kw.get("max_batch_rows", 32)
        self.max_batch_tokens = kw.get("max_batch_tokens", 65536)
        self.share_prefill = kw.get("share_prefill", True)
        self.usage = Usage()
        return self

    def render(self, messages: Messages) -> str:
        return render(self.tokenizer, messages)

    def _batches(self, lengths: list[int], n: int) -> list[list[int]]:
        """Prompt indices grouped by similar length (less padding) within the row/token limits."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        per_batch = max(1, self.max_batch_rows // n)
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
               on_finish: Callable[[int], None] | None = None) -> Iterator[tuple[int, list[Completion]]]:
        texts = [self.render(m) for m in prompts]
        lengths = [len(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
        for batch in self._batches(lengths, params.n):
            # One torch seed per batch, derived from its prompts: reproducible for the same inputs.
            seed = sum(prompt_seed(params.seed, prompts[i]) for i in batch) & 0x7FFFFFFF
            outs = self._generate([texts[i] for i in batch], params, seed,
                                  on_done=_prompts_done(batch, params.n, on_finish) if on_finish else None)
            for i, comps in zip(batch, outs, strict=True):
                # A prefilled prompt's completion is the whole assistant message (j1.chat).
                head = prefill(prompts[i])
                yield i, [replace(c, text=head + c.text) for c in comps] if head else comps

    def _generate(self, texts: list[str], params: SamplingParams, seed: int,
                  on_done: Callable[[list[int]], None] | None = None) -> list[list[Completion]]:
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
        with torch.inference_mode():
            if not self.share_prefill:
                out = self.model.generate(
                    input_ids=ids, attention_mask=mask, num_return_sequences=n, **gen_kw
                )
            else:
                # Each prompt encoded once for its n samples, then j1's decode (j1.sharedprefix, j1.decode).
                out = sharedprefix.generate(
                    self.model, ids.repeat_interleave(n, 0), mask.repeat_interleave(n, 0), on_done=on_done, **gen_kw
                )
        new = out[:, ids.shape[1]:]
        eos = set(_as_list(self.model.generation_config.eos_token_id)) | {self.tokenizer.eos_token_id}
        results: list[list[Completion]] = []
        for p in range(len(texts)):
            comps = []
            for s in range(n):
                row = new[p * n + s].tolist()
                stop_at = next((k for k, t in enumerate(row) if t in eos), None)
                toks = row if stop_at is None else row[:stop_at]
                comps.append(
                    Completion(
                        text=self.tokenizer.decode(toks, skip_special_tokens=True),
                        finish_reason="length" if stop_at is None else "stop",
                        completion_tokens=len(toks) + (0 if stop_at is None else 1),
                    )
                )
            results.append(comps)
        self.usage.prompt_tokens += int(mask.sum())
        self.usage.completion_tokens += sum(c.completion_tokens for r in results for c in r)
        self.usage.requests += len(texts)
        log.debug("batch of %d prompts x %d samples in %.1fs", len(texts), n, time.perf_counter() - t0)
        return results


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


def _as_list(x) -> list[int]:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]
