"""Encode each distinct prompt once, then fan its KV cache out to every sequence that starts with it.

A judge prompt is long (hundreds of tokens) and its completions, with G of them per prompt, may be
short: with a verdict prefill only a few tokens are sampled. Generating or scoring G copies of
prompt + completion encodes the same prompt G times. Here the rows of a batch that share their
prompt columns (token ids and padding mask) are encoded once, all but the last prompt token, and
the cache is indexed out to every row; the last prompt token and the completion then run on top.
Causal attention makes this the same computation as the full rows, for 1/G of the prompt cost, and
gradients flow back through the shared encoding (the cache's index is differentiable).

Used by ``LocalBackend`` (generation) and by ``J1GRPOTrainer`` (TRL's generation and its log-prob
passes), where the rollouts of a prompt sit in one batch.
"""

from __future__ import annotations

import torch

from j1.backends import decode
from j1.backends.decode import (
    unique_rows,  # kept importable from here; j1.backends.decode prefills with it too
)


def drops_cache(model) -> bool:
    """Whether this forward would run without a KV cache: a gradient-checkpointed layer drops it in
    a training pass with grad on, because it replays the layer on backward. A shared prompt would
    then be silently cut off from its completions."""
    return torch.is_grad_enabled() and model.training and any(
        getattr(m, "gradient_checkpointing", False) for m in model.modules())


def prefix_cache(model, ids: torch.Tensor, mask: torch.Tensor, *, position_ids: torch.Tensor | None = None):
    """A DynamicCache holding ``ids`` (rows x prefix columns) encoded once per distinct row and
    indexed out to every row; gradients flow when called with grad enabled."""
    from transformers import DynamicCache

    first, inverse = unique_rows(ids, mask)
    cache = DynamicCache(config=getattr(model, "config", None))
    model(
        input_ids=ids[first], attention_mask=mask[first],
        position_ids=None if position_ids is None else position_ids[first],
        cache=cache, use_cache=True, logits_to_keep=1,
    )
    if not torch.equal(inverse, first):  # else every row is distinct and in place
        cache.batch_select_indices(inverse)
    return cache


def generate(model, ids: torch.Tensor, mask: torch.Tensor, on_done=None, on_step=None, ends=None,
             **generate_kwargs) -> torch.Tensor:
    """``model.generate(input_ids=ids, attention_mask=mask, **generate_kwargs)`` with each distinct
    left-padded prompt row encoded once. Returns prompt + new tokens, as ``generate`` does.

    On a CPU, Llama-family models decode with ``j1.backends.decode`` (the prompt's cache read in place, a static
    cache for the new tokens, finished rows compacted away); anything else goes to ``generate``
    (``j1.device.fast_decode``).
    ``on_done(rows)``: rows that ended (an end-of-sequence token, or ``ends``), as they end; ``on_step(rows)``:
    the rows that wrote a token at each step; ``ends(rows, tokens)``: the rows of those that are complete with
    the token they wrote, which stop there (``j1.backends.decode``; ``generate`` through its ``stopping_criteria``).
    """
    from j1.device import fast_decode

    sampling = decode.sampling_for(model, generate_kwargs)
    if sampling is not None and decode.supports(model) and fast_decode(ids.device):
        with torch.no_grad():
            return decode.generate(model, ids, mask, sampling, on_done=on_done, on_step=on_step, ends=ends)
    if on_done is not None or on_step is not None or ends is not None:
        generate_kwargs["stopping_criteria"] = reporting(model, on_step=on_step, on_done=on_done, ends=ends)
    if ids.shape[1] < 2:
        return model.generate(input_ids=ids, attention_mask=mask, **generate_kwargs)
    # Positions as generate counts them (from the padding mask), so the continuation lines up.
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        cache = prefix_cache(model, ids[:, :-1], mask[:, :-1], position_ids=pos[:, :-1])
    return model.generate(input_ids=ids, attention_mask=mask, cache=cache, **generate_kwargs)


def reporting(model, *, on_step=None, on_done=None, ends=None):
    """A ``stopping_criteria`` for ``model.generate`` that reports each step as ``j1.backends.decode`` does:
    ``on_step(rows)`` with the rows that wrote a token, ``on_done(rows)`` with those whose token ended them
    (the model's end-of-sequence ids, or ``ends``), so progress moves within a batch. It stops only the rows
    that ``ends(rows, tokens)`` names complete (``generate`` pads them from then on, and still draws them)."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    eos = model.generation_config.eos_token_id
    eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)

    class Report(StoppingCriteria):
        def __init__(self):
            self.done: torch.Tensor | None = None

        def __call__(self, input_ids: torch.Tensor, scores, **kwargs) -> torch.Tensor:
            ended = torch.isin(input_ids[:, -1], torch.tensor(eos or [-1], device=input_ids.device))
            if self.done is None:
                self.done = torch.zeros_like(ended)
            wrote = ~self.done  # a row generate has finished is padded, and wrote nothing
            stop = torch.zeros_like(ended)
            if ends is not None:
                rows = wrote.nonzero().flatten()
                complete = ends(rows.tolist(), input_ids[rows, -1].tolist())
                stop[complete] = True
            ended = ended | stop
            if on_step is not None:
                on_step(wrote.nonzero().flatten().tolist())
            if on_done is not None:
                new = (ended & wrote).nonzero().flatten().tolist()
                if new:
                    on_done(new)
            self.done |= ended
            return stop

    return StoppingCriteriaList([Report()])


def completion_logps(
    model, prefix_model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
    *, batch_size: int | None = None, compute_entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """TRL's per-token log-probs (and entropies) of the last ``logits_to_keep`` columns (the
    completion) of each row, with the prompt columns encoded once per distinct prompt.

    ``model`` must carry TRL's fused LM head (``add_fused_lm_head``: it applies the sampling
    temperature); ``prefix_model`` is the same model unwrapped from DDP, for the prompt pass
    (calling a DDP module twice before one backward is not allowed; its reducer still sees every
    gradient, the parameters being the same). Rows are processed ``batch_size`` at a time, as TRL does.
    """
    if drops_cache(prefix_model):
        raise ValueError("gradient checkpointing drops the KV cache in this pass; use the unshared pass")
    split = input_ids.shape[1] - logits_to_keep - 1  # every prompt column but the last
    size = batch_size or input_ids.shape[0]
    logps, entropies = [], []
    for start in range(0, input_ids.shape[0], size):
        ids, mask = input_ids[start:start + size], attention_mask[start:start + size]
        cache = prefix_cache(prefix_model, ids[:, :split], mask[:, :split]) if split > 0 else None
        tail = ids[:, max(split, 0):]
        # The first tail column (the last prompt token) only predicts; TRL's labels skip the prompt.
        labels = tail.masked_fill(mask[:, max(split, 0):] == 0, -100)
        labels[:, 0] = -100
        out = model(input_ids=tail, attention_mask=mask, cache=cache, labels=labels, fused_lm_head=True)
        logps.append(out.log_probs[:, -logits_to_keep:])
        if compute_entropy:
            entropies.append(out.entropy[:, -logits_to_keep:])
    return torch.cat(logps), torch.cat(entropies) if compute_entropy else None
