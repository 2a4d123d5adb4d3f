"""Fast local decoding for Llama-family models: a static cache, shared prompts read in place, and
finished rows dropped from the batch.

``transformers``' ``generate`` grows its KV cache by concatenation at every step (a copy of the
whole cache per token) and, when the N samples of a prompt share its prefill, holds N copies of the
prompt's keys and values. Here:

- each distinct prompt is encoded once (``transformers``' own forward); its keys and values stay one
  copy that the prompt's samples read in place (a grouped matmul: the samples of a prompt are extra
  query rows against the same keys);
- the new tokens' keys and values go into a buffer allocated once for ``max_new_tokens``;
- a step computes only the rows still running: when rows finish (at an end-of-sequence token, or where
  the caller's ``ends`` says their answer is complete, as a served engine frees a row at its stop string)
  the batch is compacted (whole prompts leave, and the samples left are packed to the front);
- sampling follows ``generate`` exactly (its own logits warpers, one ``torch.multinomial`` over a
  row per original sequence, finished ones included), so under the same seed, and for greedy
  decoding, the tokens are ``generate``'s up to float rounding (tested).

The layers' own modules run the projections, norms, rotary embedding and MLP (so LoRA adapters
and biases work); only attention over the cache is computed here. Architectures whose layers
differ (``SUPPORTED``) and options that ``generate`` would treat otherwise go to ``generate``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

# Model types whose decoder layer is: norm, q/k/v projections, rotary, attention, o_proj, norm, MLP.
SUPPORTED = {"llama", "mistral", "qwen2", "qwen3", "smollm3"}


def unique_rows(*columns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct rows of the column blocks taken side by side.

    Returns:
        (first, inverse): ``first[u]`` is the index of the first row of distinct row u (in order of
        first appearance) and ``inverse[i]`` the distinct row of row i, so that
        ``rows[first][inverse] == rows``.
    """
    rows = torch.cat([c.reshape(c.shape[0], -1).long() for c in columns], dim=1).tolist()
    seen: dict[tuple, int] = {}
    first: list[int] = []
    inverse: list[int] = []
    for i, row in enumerate(rows):
        key = tuple(row)
        if key not in seen:
            seen[key] = len(first)
            first.append(i)
        inverse.append(seen[key])
    device = columns[0].device
    return torch.tensor(first, dtype=torch.long, device=device), torch.tensor(inverse, dtype=torch.long, device=device)


@dataclass(frozen=True)
class Sampling:
    """What a decode step does with the logits: ``generate``'s options that this path implements."""

    max_new_tokens: int
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    eos_token_ids: tuple[int, ...] = ()
    pad_token_id: int = 0
    min_new_tokens: int = 0

    @classmethod
    def from_generation_config(cls, config) -> Sampling | None:
        """The options of a ``GenerationConfig``, or None when it asks for something this path does not
        do (beams, repetition penalties, suppressed tokens, ...): the caller then uses ``generate``."""
        # generate's defaults of the options this path does not implement; any other value falls back.
        plain = dict(num_beams=1, repetition_penalty=1.0, no_repeat_ngram_size=0, min_length=0,
                     suppress_tokens=None, begin_suppress_tokens=None, bad_words_ids=None, forced_bos_token_id=None,
                     forced_eos_token_id=None, num_return_sequences=1, renormalize_logits=False, typical_p=1.0,
                     epsilon_cutoff=0.0, eta_cutoff=0.0, sequence_bias=None, guidance_scale=None,
                     watermarking_config=None, stop_strings=None)
        if any(getattr(config, key, default) not in (default, None) for key, default in plain.items()):
            return None
        if config.max_new_tokens is None:
            return None
        eos = config.eos_token_id
        eos = () if eos is None else tuple(eos) if isinstance(eos, (list, tuple)) else (eos,)
        pad = config.pad_token_id if config.pad_token_id is not None else (eos[0] if eos else 0)
        return cls(
            max_new_tokens=int(config.max_new_tokens), do_sample=bool(config.do_sample),
            temperature=float(config.temperature if config.temperature is not None else 1.0),
            top_k=config.top_k or None, top_p=config.top_p, min_p=config.min_p,
            eos_token_ids=eos, pad_token_id=int(pad), min_new_tokens=int(config.min_new_tokens or 0),
        )

    def processors(self, prompt_length: int, device: torch.device | str = "cpu"):
        """``generate``'s logits processors and warpers for these options, in its order; any tensor they
        hold (the end-of-sequence ids) is made on ``device``, the device of the logits they will read."""
        from transformers.generation.logits_process import (
            LogitsProcessorList,
            MinNewTokensLengthLogitsProcessor,
            MinPLogitsWarper,
            TemperatureLogitsWarper,
            TopKLogitsWarper,
            TopPLogitsWarper,
        )

        out = LogitsProcessorList()
        if self.min_new_tokens and self.eos_token_ids:
            out.append(MinNewTokensLengthLogitsProcessor(prompt_length, self.min_new_tokens, list(self.eos_token_ids),
                                                         device=device))
        if not self.do_sample:
            return out
        if self.temperature is not None and self.temperature != 1.0:
            out.append(TemperatureLogitsWarper(self.temperature))
        if self.top_k is not None and self.top_k != 0:
            out.append(TopKLogitsWarper(top_k=self.top_k, min_tokens_to_keep=1))
        if self.top_p is not None and self.top_p < 1.0:
            out.append(TopPLogitsWarper(top_p=self.top_p, min_tokens_to_keep=1))
        if self.min_p is not None:
            out.append(MinPLogitsWarper(min_p=self.min_p, min_tokens_to_keep=1))
        return out


def sampling_for(model, generate_kwargs: dict) -> Sampling | None:
    """The Sampling that ``model.generate(**generate_kwargs)`` would do, or None when this path does not
    do it: the model's generation config (or the one passed) updated with the keyword arguments."""
    import copy

    kwargs = dict(generate_kwargs)
    config = copy.deepcopy(kwargs.pop("generation_config", None) or model.generation_config)
    unknown = config.update(**kwargs)
    if unknown:  # keywords generate would pass to the model (e.g. an attention mask variant)
        return None
    return Sampling.from_generation_config(config)


def supports(model) -> bool:
    """Whether ``model`` (unwrapped from peft) has the decoder layout this path runs."""
    base = _decoder(model)
    config = getattr(model, "config", None)
    if base is None or config is None or getattr(config, "model_type", None) not in SUPPORTED:
        return False
    attn = base.layers[0].self_attn
    return all(hasattr(attn, name) for name in ("q_proj", "k_proj", "v_proj", "o_proj")) and \
        hasattr(base, "rotary_emb") and hasattr(base, "norm")


def _decoder(model):
    """The ``model.model`` part (embeddings, layers, norm, rotary) of a causal LM, through peft wrappers."""
    inner = model
    for _ in range(4):
        if hasattr(inner, "layers") and hasattr(inner, "embed_tokens"):
            return inner
        inner = getattr(inner, "model", None) or getattr(inner, "base_model", None)
        if inner is None:
            return None
    return None


@dataclass
class _Batch:
    """The running rows, as a grid of ``groups x slots``: ``group`` holds one distinct prompt, ``slot``
    one of its samples. ``row[g, s]`` is the original row index (-1: an empty slot)."""

    row: torch.Tensor  # (P, S) long
    prefix: list[tuple[torch.Tensor, torch.Tensor]]  # per layer (P, kvh, Lp, d) keys, values
    prefix_bias: torch.Tensor  # (P, 1, 1, Lp): 0 on prompt tokens, -inf on padding
    keys: list[torch.Tensor]  # per layer (P, S, kvh, T, d)
    values: list[torch.Tensor]
    position: torch.Tensor  # (P, S) position of the next token
    token: torch.Tensor  # (P, S) the token to feed next

    def select(self, groups: torch.Tensor, slots: torch.Tensor) -> _Batch:
        """Keep groups ``groups`` (G',) and, in each, slots ``slots`` (G', S') (indices into the old slots)."""
        index = torch.arange(len(groups), device=groups.device).unsqueeze(1)

        def per_slot(x):
            return x[groups][index, slots]

        return _Batch(
            row=per_slot(self.row),
            prefix=[(k[groups], v[groups]) for k, v in self.prefix],
            prefix_bias=self.prefix_bias[groups],
            keys=[per_slot(k) for k in self.keys],
            values=[per_slot(v) for v in self.values],
            position=per_slot(self.position),
            token=per_slot(self.token),
        )


def generate(model, ids: torch.Tensor, mask: torch.Tensor, sampling: Sampling,
             on_done: Callable[[list[int]], None] | None = None,
             on_step: Callable[[list[int]], None] | None = None,
             ends: Callable[[list[int], list[int]], list[int]] | None = None) -> torch.Tensor:
    """Prompt + new tokens for every row of left-padded ``ids``/``mask`` (B, L), as ``generate``
    returns them: finished rows are padded with ``pad_token_id``, and the width is the longest row's.

    Rows with the same prompt (ids and mask) share its encoding. Call under ``torch.no_grad``.
    ``on_done(rows)`` is called with the rows that wrote their end-of-sequence token at a step, so a
    caller can report progress before the whole batch ends (rows stopped by the length limit are not
    reported: they end with the batch). ``on_step(rows)`` is called at every step with the rows that wrote
    a token, so progress can be counted in tokens. ``ends(rows, tokens)``, called at every step with the rows
    that wrote and their tokens, returns the rows that are complete with that token (an answer's closing
    tag): they finish there as at an end-of-sequence token, padded after it, and leave the batch. The other
    rows' tokens do not change (sampled, every original row is still drawn at every step).
    """
    B, L = ids.shape
    device = ids.device
    eos = torch.tensor(sampling.eos_token_ids or [-1], device=device)
    processors = sampling.processors(L, device)
    out = torch.full((B, sampling.max_new_tokens), sampling.pad_token_id, dtype=torch.long, device=device)
    if sampling.max_new_tokens < 1:
        return ids
    batch = _prefill(model, ids, mask, sampling.max_new_tokens)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    width = 0
    for step in range(sampling.max_new_tokens):
        logits = _step(model, batch, step)  # (P, S, V)
        live = batch.row >= 0
        rows = batch.row[live]
        scores = logits[live]
        if processors:
            seen = torch.cat([ids, out[:, :step]], dim=1)  # the processors read the sequence's length
            scores = processors(seen[rows], scores)
        if sampling.do_sample:
            # generate samples every original row each step (finished ones too): the same random draws.
            full = torch.zeros(B, scores.shape[-1], dtype=scores.dtype, device=device)
            full[:, 0] = 1.0
            full[rows] = torch.softmax(scores, dim=-1)
            chosen = torch.multinomial(full, num_samples=1).squeeze(1)[rows]
        else:
            chosen = scores.argmax(dim=-1)
        out[rows, step] = chosen
        width = step + 1
        if on_step is not None:
            on_step(rows.tolist())
        before = done.clone() if on_done is not None else None
        done[rows] |= torch.isin(chosen, eos)
        if ends is not None:
            complete = ends(rows.tolist(), chosen.tolist())
            if complete:
                done[complete] = True
        if on_done is not None:
            finished = (done & ~before).nonzero().flatten().tolist()
            if finished:
                on_done(finished)
        if bool(done.all()):
            break
        token = torch.full_like(batch.row, sampling.pad_token_id)
        token[live] = chosen
        batch.token = token
        batch.position = batch.position + 1
        batch = _compact(batch, done)
    return torch.cat([ids, out[:, :width]], dim=1)


def _prefill(model, ids: torch.Tensor, mask: torch.Tensor, new_tokens: int) -> _Batch:
    """Encode every distinct prompt but its last token once; lay the rows out as groups x slots."""
    from transformers import DynamicCache

    first, inverse = unique_rows(ids, mask)
    P = len(first)
    counts = torch.bincount(inverse, minlength=P)
    S = int(counts.max())
    # Laid out in Python, then moved in one copy: element writes into a device tensor cost a launch each.
    grid = [[-1] * S for _ in range(P)]
    filled = [0] * P
    for i, g in enumerate(inverse.tolist()):
        grid[g][filled[g]] = i
        filled[g] += 1
    row = torch.tensor(grid, dtype=torch.long, device=ids.device)
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    config = model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    layers = config.num_hidden_layers
    dtype = next(model.parameters()).dtype
    prefix: list[tuple[torch.Tensor, torch.Tensor]] = []
    lp = ids.shape[1] - 1
    if lp > 0:
        cache = DynamicCache(config=config)
        model(input_ids=ids[first, :-1], attention_mask=mask[first, :-1], position_ids=pos[first, :-1],
              cache=cache, use_cache=True, logits_to_keep=1)
        # In the model's dtype: under mixed precision (accelerate autocasts model.forward, not the layers
        # the steps call) the cache comes back partly in bf16.
        prefix = [(layer.keys.to(dtype), layer.values.to(dtype)) for layer in cache.layers]
        bias = torch.zeros(P, 1, 1, lp, dtype=dtype, device=ids.device)
        bias.masked_fill_(mask[first, :-1].view(P, 1, 1, lp) == 0, float("-inf"))
    else:
        empty = torch.zeros(P, kv_heads, 0, head_dim, dtype=dtype, device=ids.device)
        prefix = [(empty, empty)] * layers
        bias = torch.zeros(P, 1, 1, 0, dtype=dtype, device=ids.device)
    buffer = (P, S, kv_heads, new_tokens, head_dim)
    safe = row.clamp(min=0)
    return _Batch(
        row=row, prefix=prefix, prefix_bias=bias,
        keys=[torch.zeros(buffer, dtype=dtype, device=ids.device) for _ in range(layers)],
        values=[torch.zeros(buffer, dtype=dtype, device=ids.device) for _ in range(layers)],
        position=pos[safe, -1], token=ids[safe, -1],
    )


def _step(model, batch: _Batch, step: int) -> torch.Tensor:
    """One token for every slot: (P, S, vocab) logits of the next token."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    base = _decoder(model)
    P, S = batch.row.shape
    x = base.embed_tokens(batch.token.view(P * S, 1))  # (P*S, 1, H)
    cos, sin = base.rotary_emb(x, batch.position.view(P * S, 1))
    for i, layer in enumerate(base.layers):
        attn = layer.self_attn
        h = layer.input_layernorm(x)
        d = attn.head_dim
        q = attn.q_proj(h).view(P * S, 1, -1, d).transpose(1, 2)  # (P*S, heads, 1, d)
        k = attn.k_proj(h).view(P * S, 1, -1, d).transpose(1, 2)  # (P*S, kvh, 1, d)
        v = attn.v_proj(h).view(P * S, 1, -1, d).transpose(1, 2)
        if hasattr(attn, "q_norm"):  # qwen3: a norm per head before the rotary embedding
            q, k = attn.q_norm(q), attn.k_norm(k)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        kv = k.shape[1]
        batch.keys[i][:, :, :, step] = k.reshape(P, S, kv, d)
        batch.values[i][:, :, :, step] = v.reshape(P, S, kv, d)
        o = _attend(q.reshape(P, S, kv, -1, d), batch.prefix[i], batch.prefix_bias,
                    batch.keys[i][:, :, :, : step + 1], batch.values[i][:, :, :, : step + 1], attn.scaling)
        x = x + attn.o_proj(o.reshape(P * S, 1, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    x = base.norm(x)
    return _head(model)(x.view(P * S, -1)).view(P, S, -1).float()


def _head(model):
    """The LM head, on the CPU packed for oneDNN once per weight version: the vocabulary projection is
    the largest matmul of a step and its weight is read whole each time, which oneDNN's blocked
    layout does about twice as fast. Anything else (GPU, LoRA on the head, no oneDNN) is the module."""
    head = model.get_output_embeddings()
    weight = getattr(head, "weight", None)
    if (type(head) is not torch.nn.Linear or weight.device.type != "cpu" or weight.dtype != torch.float32
            or not torch.backends.mkldnn.is_available()):
        return head
    key = (weight.data_ptr(), weight._version)
    cached = getattr(model, "_j1_packed_head", None)
    if cached is None or cached[0] != key:
        from torch.utils import mkldnn

        # skip_init: a fresh Linear would draw its initial weights from the global RNG, and shift the samples.
        dense = torch.nn.utils.skip_init(torch.nn.Linear, weight.shape[1], weight.shape[0], bias=head.bias is not None)
        dense.weight = torch.nn.Parameter(weight.detach(), requires_grad=False)
        if head.bias is not None:
            dense.bias = torch.nn.Parameter(head.bias.detach(), requires_grad=False)
        cached = (key, mkldnn.to_mkldnn(dense))
        object.__setattr__(model, "_j1_packed_head", cached)
    return cached[1]


def _attend(q, prefix, prefix_bias, keys, values, scaling: float) -> torch.Tensor:
    """Attention of one new token per slot over its prompt (shared by the group) and its own tokens.

    Args:
        q: (P, S, kvh, r, d) queries, r = heads per key/value head.
        prefix: (P, kvh, Lp, d) keys and values of each group's prompt.
        prefix_bias: (P, 1, 1, Lp) additive mask of the prompt's padding.
        keys, values: (P, S, kvh, t, d) each slot's new tokens so far.
    Returns:
        (P, S, kvh, r, d).
    """
    P, S, kv, r, d = q.shape
    pk, pv = prefix
    # Prompt part: the group's slots and heads per kv head are query rows against one copy of the keys.
    qg = q.permute(0, 2, 1, 3, 4).reshape(P, kv, S * r, d)
    pre = torch.matmul(qg, pk.transpose(-1, -2)) * scaling + prefix_bias  # (P, kvh, S*r, Lp)
    own = torch.matmul(q, keys.transpose(-1, -2)) * scaling  # (P, S, kvh, r, t)
    own = own.permute(0, 2, 1, 3, 4).reshape(P, kv, S * r, -1)
    weights = torch.softmax(torch.cat([pre, own], dim=-1), dim=-1)
    lp = pre.shape[-1]
    out = torch.matmul(weights[..., :lp], pv)  # (P, kvh, S*r, d)
    out = out.view(P, kv, S, r, d).permute(0, 2, 1, 3, 4)
    own_w = weights[..., lp:].reshape(P, kv, S, r, -1).permute(0, 2, 1, 3, 4)
    return out + torch.matmul(own_w, values)


def _compact(batch: _Batch, done: torch.Tensor) -> _Batch:
    """Drop finished rows when that frees at least a quarter of the grid: groups with no running row
    leave, and each group's running rows move to its first slots."""
    live = (batch.row >= 0) & ~done[batch.row.clamp(min=0)]
    P, S = live.shape
    per_group = live.sum(dim=1)
    keep = per_group > 0
    new_s = int(per_group.max()) if bool(keep.any()) else 0
    if new_s == 0 or int(keep.sum()) * new_s > 0.75 * P * S:
        if not bool(live.all()):
            batch.row = torch.where(live, batch.row, -1)
        return batch
    groups = keep.nonzero().squeeze(1)
    # Running slots first (stable), then the rest; the first new_s of each group are kept.
    order = torch.sort((~live[groups]).int(), dim=1, stable=True).indices[:, :new_s]
    out = batch.select(groups, order)
    kept_live = live[groups][torch.arange(len(groups), device=groups.device).unsqueeze(1), order]
    out.row = torch.where(kept_live, out.row, -1)
    return out
