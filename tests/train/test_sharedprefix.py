"""j1.backends.sharedprefix in the trainer: each distinct prompt encoded once gives TRL's own numbers —
log-probs, entropies, gradients and sampled tokens — on a LoRA policy with left-padded prompts,
repeated prompts and right-padded completions."""

from __future__ import annotations

import pytest
import torch
from transformers import HfArgumentParser
from trl import GRPOConfig, GRPOTrainer, ModelConfig

from j1.backends import sharedprefix
from j1.train.recipe import build_trainer
from j1.train.spec import TrainSpec


@pytest.mark.parametrize("rows, first, inverse", [
    ([[1, 2], [1, 2], [3, 4]], [0, 2], [0, 0, 1]),
    ([[1, 2], [3, 4], [1, 2], [3, 4]], [0, 1], [0, 1, 0, 1]),
    ([[5], [6], [7]], [0, 1, 2], [0, 1, 2]),
    ([[9, 9]] * 4, [0], [0, 0, 0, 0]),
])
def test_unique_rows(rows, first, inverse):
    f, i = sharedprefix.unique_rows(torch.tensor(rows))
    assert f.tolist() == first and i.tolist() == inverse
    assert torch.equal(torch.tensor(rows)[f][i], torch.tensor(rows))


def test_unique_rows_reads_every_column_block():
    """Two rows with the same ids but different padding masks are different prompts."""
    ids = torch.tensor([[2, 7, 8], [2, 7, 8]])
    mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
    assert sharedprefix.unique_rows(ids, mask)[1].tolist() == [0, 1]
    assert sharedprefix.unique_rows(ids)[1].tolist() == [0, 0]


@pytest.fixture(scope="module")
def trainer(tiny_model, tmp_path_factory):
    pairs = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    from tiny import write_pairs

    write_pairs(pairs)
    parser = HfArgumentParser((TrainSpec, GRPOConfig, ModelConfig))
    j1cfg, grpo, model = parser.parse_args_into_dataclasses([
        "--train_file", str(pairs), "--model_name_or_path", str(tiny_model),
        "--output_dir", str(tmp_path_factory.mktemp("run")), "--num_generations", "2",
        "--per_device_train_batch_size", "8", "--max_completion_length", "6", "--temperature", "0.7",
        "--bf16", "false", "--use_cpu", "true", "--report_to", "none",
        # LoRA dropout draws a mask per forward: with it the shared prompt pass is another (valid)
        # draw, not TRL's, so the comparison runs without it (the CPU configs use 0 too).
        "--use_peft", "--lora_target_modules", "all-linear", "--lora_dropout", "0",
    ])
    trainer, _ = build_trainer(j1cfg, grpo, model)
    assert trainer.share_prompt_prefix
    # LoRA's B starts at zero; move it so the adapters change the numbers being compared.
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    return trainer


def _batch(tok, completions: list[list[int]], repeats: tuple[int, ...] = (3, 5, 3, 5, 2, 2)):
    """Left-padded prompts of several lengths (some repeated, as TRL repeats a prompt G times)
    followed by right-padded completions."""
    prompts = [tok("Which response is better? " * k, add_special_tokens=False).input_ids for k in repeats]
    width, c = max(map(len, prompts)), max(map(len, completions))
    ids = torch.full((len(prompts), width + c), tok.pad_token_id)
    mask = torch.zeros_like(ids)
    for i, (p, comp) in enumerate(zip(prompts, completions, strict=True)):
        ids[i, width - len(p):width] = torch.tensor(p)
        mask[i, width - len(p):width] = 1
        ids[i, width:width + len(comp)] = torch.tensor(comp)
        mask[i, width:width + len(comp)] = 1
    return prompts, ids, mask, c


COMPLETIONS = [[11, 12, 13, 14], [15, 16], [11, 12, 17], [18], [19, 20, 21, 22], [23, 24]]


@pytest.mark.parametrize("batch_size", [None, 2, 4])
def test_log_probs_entropies_and_gradients_match_trl(trainer, batch_size):
    _, ids, mask, c = _batch(trainer.processing_class, COMPLETIONS)
    model = trainer.model
    params = [p for p in model.parameters() if p.requires_grad]

    def run(fn):
        model.zero_grad()
        logps, entropies, _ = fn(model, ids, mask, c, batch_size=batch_size, compute_entropy=True)
        (logps * mask[:, -c:]).sum().backward()
        return logps.detach(), entropies.detach(), [p.grad.clone() for p in params]

    ref = run(lambda *a, **k: GRPOTrainer._get_per_token_logps_and_entropies(trainer, *a, **k))
    got = run(trainer._get_per_token_logps_and_entropies)
    assert got[0].shape == ref[0].shape == (len(COMPLETIONS), c)
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[1], ref[1], atol=1e-5, rtol=1e-5)
    # The prompt's share of the gradient flows back through the fanned-out cache.
    assert max(g.abs().max().item() for g in ref[2]) > 1e-2
    for a, b in zip(got[2], ref[2], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_gradient_checkpointing_keeps_trls_pass(trainer):
    """A checkpointed layer drops the KV cache in a training pass with grad (it would replay the
    layer): there the log-probs must still be TRL's, not those of completions cut off their prompt."""
    _, ids, mask, c = _batch(trainer.processing_class, COMPLETIONS)
    model = trainer.model
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    try:
        ref = GRPOTrainer._get_per_token_logps_and_entropies(trainer, model, ids, mask, c)[0]
        got = trainer._get_per_token_logps_and_entropies(model, ids, mask, c)[0]
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
        with pytest.raises(ValueError, match="drops the KV cache"):  # called directly, it refuses
            sharedprefix.completion_logps(model, model, ids, mask, c)
        with torch.no_grad():  # no replay without grad: the shared pass applies and agrees
            torch.testing.assert_close(trainer._get_per_token_logps_and_entropies(model, ids, mask, c)[0],
                                       ref.detach(), atol=1e-5, rtol=1e-5)
    finally:
        model.gradient_checkpointing_disable()
        model.eval()


def test_sampled_completions_match_trl(trainer):
    """Same seed, same tokens: the shared pass changes the cost, not the draw (up to the EOS,
    which both keep)."""
    prompts, *_ = _batch(trainer.processing_class, COMPLETIONS)
    torch.manual_seed(0)
    ref, _ = GRPOTrainer._generate_single_turn(trainer, prompts, None, {}, 2)
    torch.manual_seed(0)
    got, logprobs = trainer._generate_single_turn(prompts, None, {}, 2)
    assert got == ref and logprobs is None
    assert len(set(map(tuple, got))) > 1


def test_each_distinct_prompt_is_encoded_once(trainer):
    """What the model is given: the 3 distinct prompts (all but their last token) once, then the
    last prompt token and the completion of all 6 rows on top of the fanned-out cache."""
    _, ids, mask, c = _batch(trainer.processing_class, COMPLETIONS)
    seen = []
    embed = trainer.model.get_input_embeddings()
    hook = embed.register_forward_pre_hook(lambda _m, args: seen.append(tuple(args[0].shape)))
    try:
        with torch.no_grad():
            trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, c)
    finally:
        hook.remove()
    assert seen == [(3, ids.shape[1] - c - 1), (6, c + 1)]


def test_off_or_multimodal_is_trl(trainer, monkeypatch):
    """share_prompt_prefix false, or a batch with images, hands the call to TRL's own pass."""
    calls = []
    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies",
                        lambda self, *a, **k: calls.append(sorted(k)) or "trl")
    _, ids, mask, c = _batch(trainer.processing_class, COMPLETIONS)
    monkeypatch.setattr(trainer, "share_prompt_prefix", False)
    assert trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, c) == "trl"
    monkeypatch.setattr(trainer, "share_prompt_prefix", True)
    pixels = torch.zeros(1)
    assert trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, c, pixel_values=pixels) == "trl"
    assert trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, c, compute_aux_loss=True) == "trl"
    assert len(calls) == 3
    assert trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, c)[0].shape == (6, c)
    assert len(calls) == 3
