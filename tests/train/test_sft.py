"""j1.train.sft: the warm-up loss that runs the LM head on trained positions only equals the
cross-entropy over the full logits, in value and in gradient."""

from __future__ import annotations

import pytest
import torch

from j1.train.sft import IGNORE, completion_loss, trained_columns


@pytest.mark.parametrize("labels,columns", [
    ([[IGNORE, IGNORE, 5, 6]], [1, 2]),  # a completion at the end of one row
    ([[IGNORE, IGNORE, 5, 6], [IGNORE, 7, IGNORE, IGNORE]], [0, 1, 2]),  # right padding: rows end apart
    ([[IGNORE, IGNORE, IGNORE]], []),  # nothing trained
])
def test_trained_columns(labels, columns):
    assert trained_columns(torch.tensor(labels)).tolist() == columns


def _full_loss(model, inputs, denom):
    logits = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits[:, :-1]
    target = inputs["labels"][:, 1:]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                                             ignore_index=IGNORE, reduction="sum") / denom


def test_completion_loss_equals_the_full_cross_entropy(tiny_model):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    ids = torch.randint(10, 1000, (3, 9))
    attention = torch.ones_like(ids)
    attention[2, 6:] = 0  # a right-padded row
    labels = torch.full_like(ids, IGNORE)
    labels[0, 6:] = ids[0, 6:]
    labels[1, 4:7] = ids[1, 4:7]
    labels[2, 3:6] = ids[2, 3:6]
    inputs = {"input_ids": ids, "attention_mask": attention, "labels": labels}
    n = int((labels[:, 1:] != IGNORE).sum())
    for denom in (None, 20):
        model.zero_grad()
        loss, right, trained = completion_loss(model, inputs, denom)
        loss.backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        reference = _full_loss(model, inputs, denom or n)
        reference.backward()
        assert trained == n == 3 + 3 + 3 and 0 <= right <= n
        assert loss.item() == pytest.approx(reference.item(), rel=1e-5)
        for g, p in zip(grads, model.parameters(), strict=True):
            torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-6)


def test_unit_sampler_keeps_both_orders_together_and_is_seeded():
    from j1.train.sft import UnitSampler

    sampler = UnitSampler(10, 2, seed=3)
    first, second = list(sampler), list(sampler)
    for order in (first, second):
        assert sorted(order) == list(range(10))
        assert all(order[k] % 2 == 0 and order[k + 1] == order[k] + 1 for k in range(0, 10, 2))
    assert first != second  # a new unit order each pass ...
    assert list(UnitSampler(10, 2, seed=3)) == first  # ... and the same sequence after a restart
    with pytest.raises(ValueError, match="units of 2"):
        UnitSampler(9, 2, seed=0)


def test_loss_tokens_trains_the_first_tokens_only(tiny_model):
    from transformers import AutoModelForCausalLM

    from j1.train.sft import first_tokens

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    ids = torch.randint(10, 1000, (2, 8))
    labels = torch.full_like(ids, IGNORE)
    labels[:, 5:] = ids[:, 5:]
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    loss, _, n = completion_loss(model, inputs, num_items_in_batch=99, loss_tokens=1)
    assert n == 2  # one token a row; num_items_in_batch counts the whole completions, so it is not used
    reference = _full_loss(model, {**inputs, "labels": first_tokens(labels, 1)}, 2)
    assert loss.item() == pytest.approx(reference.item(), rel=1e-5)
