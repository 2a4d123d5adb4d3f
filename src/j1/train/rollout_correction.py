"""The correction for rollouts sampled by vLLM but trained under the trainer's own numbers: one named
recipe choice, ``importance_sampling`` (issue 52).

vLLM and the trainer compute a token's probability with different kernels, so a rollout is not quite
sampled from the policy being trained. TRL (1.16) corrects for it by default: each token's loss is
weighted by the ratio of the trainer's probability to vLLM's, per token or for the whole sequence (the
product over its tokens), and ratios outside a bound are clipped (``*_truncate``) or zeroed
(``*_mask``). TRL's default, ``sequence_mask`` with a bound of 3, drops a rollout whose sequence ratio
passes 3; over a 4,096-token thought the per-token differences add up, so long rollouts are the ones
it drops. The J1 paper's GRPO has no such correction (its objective is the standard clipped one),
so ``none`` is j1's default and the J1 recipes'; the others are TRL's modes, named as TRL names them.

With ``loss_span: answer`` the thought is context, not trained: the sequence ratio is then taken over
the trained tokens (``importance_ratio``), as the loss's normaliser is.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads where training runs (the spec imports the choices)
    import torch

# TRL's vllm_importance_sampling_mode values, and none (no correction: the paper's).
IMPORTANCE_SAMPLING = ("none", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
TRL_DEFAULT_MODE = "sequence_mask"  # GRPOConfig.vllm_importance_sampling_mode's default (TRL 1.16)


def trl_settings(choice: str, trl_correction: bool, trl_mode: str) -> tuple[bool, str]:
    """TRL's two keys (``vllm_importance_sampling_correction``, ``vllm_importance_sampling_mode``) for the
    J1 choice. A recipe that set TRL's keys to something else (not their defaults) fails here, naming
    the J1 key that owns them.

    >>> trl_settings("none", True, "sequence_mask"), trl_settings("token_truncate", True, "sequence_mask")
    ((False, 'sequence_mask'), (True, 'token_truncate'))
    >>> trl_settings("none", True, "token_mask")
    Traceback (most recent call last):
    ...
    ValueError: vllm_importance_sampling_mode token_mask: set importance_sampling in the J1 section (now none), which sets TRL's importance-sampling keys
    """
    if choice not in IMPORTANCE_SAMPLING:
        raise ValueError(f"--importance_sampling {choice!r}: choose one of {list(IMPORTANCE_SAMPLING)}")
    correction, mode = choice != "none", choice if choice != "none" else TRL_DEFAULT_MODE
    for key, given, default, wanted in (("vllm_importance_sampling_correction", trl_correction, True, correction),
                                        ("vllm_importance_sampling_mode", trl_mode, TRL_DEFAULT_MODE, mode)):
        if given != default and given != wanted:
            raise ValueError(f"{key} {given}: set importance_sampling in the J1 section (now {choice}), which sets "
                             "TRL's importance-sampling keys")
    return correction, mode


def importance_ratio(old_logps: torch.Tensor, sampling_logps: torch.Tensor, mask: torch.Tensor, mode: str,
                     clip_min: float | None, clip_max: float | None) -> torch.Tensor:
    """The importance-sampling ratio of TRL 1.16's vLLM correction (``_generate_and_score_completions``),
    over the tokens ``mask`` keeps.

    Args:
        old_logps, sampling_logps: ``(B, T)`` the trainer's and vLLM's log-probabilities of the sampled tokens.
        mask: ``(B, T)`` the tokens the loss trains.
        mode: one of TRL's four (``IMPORTANCE_SAMPLING`` but ``none``).
        clip_min, clip_max: TRL's bounds (None: unbounded on that side).

    Returns:
        ``(B, T)`` for token modes, ``(B, 1)`` for sequence modes: a sequence's ratio is exp of the sum
        of its masked log-ratio differences; a NaN vLLM log-prob counts as no difference.

    >>> import torch
    >>> old, vllm = torch.tensor([[-1.0, -2.0, -0.5]]), torch.tensor([[-1.5, -2.0, -1.5]])
    >>> importance_ratio(old, vllm, torch.tensor([[1, 1, 1]]), "sequence_mask", None, 3.0)  # e^1.5 > 3
    tensor([[0.]])
    >>> importance_ratio(old, vllm, torch.tensor([[0, 0, 1]]), "sequence_mask", None, 3.0)  # the answer: e^1
    tensor([[2.7183]])
    """
    import torch

    diff = torch.nan_to_num((old_logps - sampling_logps) * mask, nan=0.0)
    if mode.startswith("sequence"):
        diff = diff.sum(dim=-1, keepdim=True)
    ratio = torch.exp(diff)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    if mode.endswith("mask"):
        low = -math.inf if clip_min is None else clip_min
        high = math.inf if clip_max is None else clip_max
        return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)
    raise ValueError(f"importance-sampling mode {mode!r}: choose one of {list(IMPORTANCE_SAMPLING[1:])}")


def describe(choice: str, use_vllm: bool, loss_span: str, clip_min: float | None, clip_max: float | None) -> str:
    """What run.json records as the correction in effect.

    >>> describe("none", True, "all", None, 3.0), describe("sequence_mask", False, "all", None, 3.0)
    ('none', 'none (no vLLM: rollouts come from the trained model)')
    >>> describe("sequence_mask", True, "answer", None, 3.0)
    'sequence_mask, bounds [None, 3.0], over the trained (answer) tokens'
    """
    if choice == "none":
        return "none"
    if not use_vllm:
        return "none (no vLLM: rollouts come from the trained model)"
    over = "the trained (answer) tokens" if loss_span == "answer" else "every completion token"
    return f"{choice}, bounds [{clip_min}, {clip_max}], over {over}"
