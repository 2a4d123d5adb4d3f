"""TRL's SFTTrainer for judge warm-ups: the LM head only where a token is trained, both orders of a
pair in one batch, and optionally only the first tokens of each completion.

- A judge warm-up trains a few completion tokens after a ~400-token prompt (with a prefill, just the
  verdict and the closing tags). TRL's fused LM head still projects every position of the batch
  through the whole vocabulary on a CPU, and that head with its backward took ~60% of a warm-up step
  here. The model is asked instead for the logits at the union of the batch's trained columns
  (transformers' ``logits_to_keep`` with indices); the loss is the same token-mean cross-entropy, with
  the same gradients.
- Rows come in units (both orders of a pair, adjacent: ``j1.train.data``), and batches are drawn by
  unit: a gold verdict is A in one order and B in the other, so a batch's gradient carries no push
  towards a position, only the content (as J1's paired rollouts in ``j1 train``).
- ``loss_tokens N`` trains the first N tokens of each completion only: after the recipe's prefill the
  first token is the verdict letter, and the closing tags, which the base already writes, would
  otherwise fill the loss and Adam's step sizes while the letter is still at chance.
"""

from __future__ import annotations

import torch
from trl import SFTTrainer

IGNORE = -100


def trained_columns(labels: torch.Tensor) -> torch.Tensor:
    """The positions whose logits predict a trained token (label at the next position not ignored), as
    the sorted union over the batch rows.

    >>> trained_columns(torch.tensor([[-100, -100, 5, 6], [-100, 7, -100, -100]])).tolist()
    [0, 1, 2]
    """
    return (labels[:, 1:] != IGNORE).any(dim=0).nonzero().squeeze(-1)


def first_tokens(labels: torch.Tensor, n: int) -> torch.Tensor:
    """``labels`` with only the first ``n`` trained tokens of each row kept (the rest ignored).

    >>> first_tokens(torch.tensor([[-100, 5, 6, 7], [-100, -100, 8, 9]]), 1).tolist()
    [[-100, 5, -100, -100], [-100, -100, 8, -100]]
    """
    trained = labels != IGNORE
    return torch.where(trained & (trained.cumsum(dim=1) <= n), labels, torch.full_like(labels, IGNORE))


def completion_loss(model, inputs: dict, num_items_in_batch=None, loss_tokens: int | None = None
                    ) -> tuple[torch.Tensor, int, int]:
    """(loss, tokens predicted right, tokens trained) for a batch with ``labels``: cross-entropy summed
    over the trained tokens (the first ``loss_tokens`` of each row, when given), divided by
    ``num_items_in_batch`` (the trainer's count over the accumulated batches; None with
    ``loss_tokens``) or else by the tokens trained here."""
    labels = inputs["labels"] if loss_tokens is None else first_tokens(inputs["labels"], loss_tokens)
    cols = trained_columns(labels)
    model_inputs = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "position_ids")}
    logits = model(**model_inputs, logits_to_keep=cols, use_cache=False).logits  # (rows, len(cols), vocab)
    target = labels[:, 1:][:, cols]
    mask = target != IGNORE
    picked, wanted = logits[mask].float(), target[mask]
    total = torch.nn.functional.cross_entropy(picked, wanted, reduction="sum")
    n = int(mask.sum())
    denom = num_items_in_batch if num_items_in_batch is not None and loss_tokens is None else max(n, 1)
    right = int((picked.detach().argmax(-1) == wanted).sum())
    return total / torch.as_tensor(denom, device=total.device), right, n


class UnitSampler(torch.utils.data.Sampler):
    """Row indices in whole units of ``unit`` adjacent rows, the units in a seeded random order that
    changes with each pass (the same sequence again after a restart, so a resumed run skips exactly
    the batches it trained on)."""

    def __init__(self, rows: int, unit: int, seed: int):
        if rows % unit:
            raise ValueError(f"{rows} rows do not split into units of {unit}")
        self.rows, self.unit, self.seed, self.passes = rows, unit, seed, 0

    def __len__(self) -> int:
        return self.rows

    def __iter__(self):
        gen = torch.Generator().manual_seed(self.seed + self.passes)
        self.passes += 1
        for u in torch.randperm(self.rows // self.unit, generator=gen).tolist():
            yield from range(u * self.unit, (u + 1) * self.unit)


class CompletionSFTTrainer(SFTTrainer):
    """SFTTrainer whose loss projects only the trained positions (``completion_loss``, the first
    ``loss_tokens`` of each completion when given) and whose batches hold whole units of ``unit`` rows
    (``UnitSampler``); logs TRL's ``mean_token_accuracy`` and ``num_tokens`` (not ``entropy``, which
    needs every vocabulary column)."""

    def __init__(self, *args, unit: int | None = None, loss_tokens: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.unit, self.loss_tokens = unit, loss_tokens
        if unit and self.args.per_device_train_batch_size % unit:
            raise ValueError(f"--per_device_train_batch_size {self.args.per_device_train_batch_size}: must be a "
                             f"multiple of {unit}, so that both orders of a pair share a batch")

    def _get_train_sampler(self, train_dataset=None):
        data = train_dataset if train_dataset is not None else self.train_dataset
        if not self.unit:
            return super()._get_train_sampler(train_dataset)
        return UnitSampler(len(data), self.unit, self.args.seed)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if return_outputs or "attention_mask" not in inputs:  # predictions, or padding-free packing: TRL's own path
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        mode = "train" if self.model.training else "eval"
        loss, right, n = completion_loss(model, inputs, num_items_in_batch, self.loss_tokens)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None and self.loss_tokens is None:
            loss = loss * self.accelerator.num_processes  # as TRL: DDP averages gradients across ranks
        counts = self.accelerator.gather_for_metrics(torch.tensor([right, n], device=loss.device).view(1, 2)).sum(0)
        self._metrics[mode]["mean_token_accuracy"].append((counts[0] / counts[1]).item() if counts[1] > 0 else 0.0)
        if mode == "train":
            tokens = self.accelerator.gather_for_metrics(inputs["attention_mask"].sum()).sum().item()
            self._total_train_tokens += tokens
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
        return loss
