"""The shared-prompt speed-up of ``J1GRPOTrainer``: each distinct judge prompt of a batch is encoded
once for its G rollouts, in generation and in TRL's log-prob passes, and its KV cache fanned out
(``j1.backends.sharedprefix``). The numbers are TRL's own (log-probs, entropies, gradients, sampled tokens);
only the prompt's cost drops to 1/G. It applies to text-only batches generated with transformers
(not vLLM); a training pass under gradient checkpointing stays TRL's own, because a checkpointed
layer drops the cache.
"""

from __future__ import annotations

import torch

from j1.backends import sharedprefix


class SharedPromptMixin:
    """Overrides two TRL GRPOTrainer methods; put it before GRPOTrainer in the bases. Reads
    ``self.share_prompt_prefix`` (bool)."""

    def _shares_prefix(self, text_only: bool) -> bool:
        """Whether the shared-prompt paths apply: text-only rows, transformers generation."""
        return (text_only and self.share_prompt_prefix and not self.use_vllm
                and not self.use_transformers_continuous_batching)

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        # Signature of TRL 1.16.0 (tests/train/test_trl_signatures.py checks it).
        # TRL's transformers path hands ``generate`` every rollout's copy of its prompt, so a judge
        # prompt is encoded G times for G short completions. Here each distinct prompt is encoded
        # once and its cache fanned out (j1.backends.sharedprefix); the sampling is otherwise TRL's.
        if not self._shares_prefix(images is None and not multimodal_fields and not has_tool_images):
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images)
        from trl.models import unwrap_model_for_generation
        from trl.trainer.utils import pad

        device = self.accelerator.device
        rows = [torch.tensor(ids, device=device) for ids in prompt_ids]
        ids = pad(rows, padding_value=self._tokenizer.pad_token_id, padding_side="left",
                  pad_to_multiple_of=self.pad_to_multiple_of)
        mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side="left",
                   pad_to_multiple_of=self.pad_to_multiple_of)
        with (
            unwrap_model_for_generation(
                self.model_wrapped, self.accelerator,
                gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                generation_kwargs=self.generation_kwargs,
                gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
            ) as unwrapped_model,
            torch.no_grad(),
            self._dist.summon_full_params(self.model_wrapped, recurse=False),
        ):
            out = sharedprefix.generate(unwrapped_model, ids, mask, generation_config=self.generation_config)
        completions = out[:, ids.shape[1]:].cpu()
        eos = set(self.eos_token_ids)
        completion_ids = []
        for row in completions.tolist():
            # Up to and including the first EOS, as TRL keeps it.
            end = next((k + 1 for k, t in enumerate(row) if t in eos), len(row))
            completion_ids.append(row[:end])
        return completion_ids, None

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        # Signature of TRL 1.16.0 (tests/train/test_trl_signatures.py checks it).
        # The same log-probs as TRL's pass, with each distinct prompt of a chunk encoded once. Under
        # gradient checkpointing the training pass has no KV cache, so it stays TRL's own.
        text_only = not compute_aux_loss and all(v is None for v in extra.values())
        if not self._shares_prefix(text_only) or sharedprefix.drops_cache(model):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        with self.accelerator.autocast():
            logps, entropies = sharedprefix.completion_logps(
                model, self.accelerator.unwrap_model(model), input_ids, attention_mask, logits_to_keep,
                batch_size=batch_size, compute_entropy=compute_entropy,
            )
        return logps, entropies, None
