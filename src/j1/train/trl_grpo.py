"""J1 training on TRL's GRPOTrainer: both orders of a pair in one batch, and the J1 advantages.

``J1GRPOTrainer`` is GRPOTrainer (TRL 1.16.0) with these overrides, each named with the TRL
signature it follows (``TRL_SIGNATURES``; tests/train/test_trl_signatures.py fails when it moves):

- ``_get_train_sampler``: ``PairRepeatSampler`` keeps both prompts of a pair (AB and BA, or the two
  pointwise slots), with all their rollouts, in one generation batch on one process, so every reward
  call sees both orders (the consistency reward needs them).
- ``_tokenize_prompts``: a prompt that ends with an answer prefill (``j1.judging.chat``) is rendered open,
  where TRL would close it and open a new assistant turn.
- ``_generate_and_score_completions``: TRL's, then one advantage step (``_j1_step``) under the run's
  ``J1Options``: pair or couple groups (``j1.train.advantages``), the restoring force on the position
  preference, and the loss span (``j1.train.answer_span``). It reads the batch as the reward
  functions parsed it (``BatchScorer.last``), so completions are parsed once.
- the shared-prompt speed-up (``j1.train.shared_prompt``).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import torch
from accelerate.utils import gather
from trl import GRPOTrainer
from trl.trainer.utils import nanstd

from j1.judging.chat import prefill, render
from j1.rewards.trl_funcs import BatchScorer, ScoredBatch
from j1.runs.atomic import JsonlAppender
from j1.train.advantages import position_balance_advantages, verdict_advantages
from j1.train.answer_span import answer_markers, mask_outside_answer
from j1.train.callbacks import reopen_for_resume
from j1.train.options import J1Options
from j1.train.rollout_correction import importance_ratio
from j1.train.sampler import PairRepeatSampler, check_pair_geometry
from j1.train.shared_prompt import SharedPromptMixin

log = logging.getLogger(__name__)

# The TRL methods J1GRPOTrainer overrides, with the parameters of the TRL version it follows.
TRL_VERSION = "1.16.0"
TRL_SIGNATURES = {
    "_get_train_sampler": ["self", "dataset"],
    "_tokenize_prompts": ["self", "prompts"],
    "_generate_and_score_completions": ["self", "inputs"],
    "_generate_single_turn": ["self", "prompt_ids", "images", "multimodal_fields", "num_generations",
                              "has_tool_images"],
    "_get_per_token_logps_and_entropies": ["self", "model", "input_ids", "attention_mask", "logits_to_keep",
                                           "batch_size", "compute_entropy", "compute_aux_loss"],
}


def check_units(inputs: list[dict], num_generations: int) -> None:
    """Raise RuntimeError unless ``inputs`` is a sequence of whole pair units: G rows of one order
    (or slot) of a pair, then G rows of its other order. A failure means the sampler was bypassed."""
    group = 2 * num_generations
    if len(inputs) % group:
        raise RuntimeError(f"generation batch of {len(inputs)} rows is not whole pairs of {group} rollouts")
    for start in range(0, len(inputs), group):
        block = inputs[start : start + group]
        keys = {(r["pair_id"], r.get("judge_format")) for r in block}
        first = [r["order"] for r in block[:num_generations]]
        second = [r["order"] for r in block[num_generations:]]
        if len(keys) != 1 or len(set(first)) != 1 or len(set(second)) != 1 or first[0] == second[0]:
            raise RuntimeError(f"rows {start}..{start + group - 1} are not one pair in both orders: {sorted(keys)}")


class J1GRPOTrainer(SharedPromptMixin, GRPOTrainer):
    """GRPOTrainer with pair-keeping batches and the J1 advantages; see the module docstring.

    Extra arguments: ``options`` (``J1Options``: advantage groups, loss span, invalid advantage,
    position balance, shared prompts) and ``reward_trace_dir`` (a folder: write
    the (pair, order, format) rows of every reward call per process to ``reward_trace-RANK.jsonl``).
    """

    def __init__(self, *args, options: J1Options | None = None, reward_trace_dir: str | None = None, **kwargs):
        self.options = options or J1Options()
        self.share_prompt_prefix = self.options.share_prompt_prefix
        self.reward_trace_dir = reward_trace_dir
        self._j1_trace: JsonlAppender | None = None
        super().__init__(*args, **kwargs)
        check_pair_geometry(self.args.per_device_train_batch_size, self.args.steps_per_generation, self.num_generations)
        if self.options.regroups and self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(f"--advantage_groups {self.options.advantage_groups} needs "
                             "multi_objective_aggregation=sum_then_normalize")
        self._scorer = next((f.scorer for f in self.reward_funcs if isinstance(getattr(f, "scorer", None),
                                                                               BatchScorer)), None)
        if self._scorer is None and (self.options.needs_parse or reward_trace_dir):
            raise ValueError("the J1 advantages need the J1 reward functions (j1.rewards.make_reward_funcs)")
        formulation = self.options.formulation
        answer_only = self.options.loss_span == "answer"
        self._closers = answer_markers(formulation) if answer_only else None
        self._openers = answer_markers(formulation, opening=True) if answer_only else None

    def _get_train_sampler(self, dataset=None):
        dataset = self.train_dataset if dataset is None else dataset
        return PairRepeatSampler(
            len(dataset),
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            shuffle=self.shuffle_dataset,
            seed=self.args.seed,
        )

    def _tokenize_prompts(self, prompts: list):
        # TRL renders every chat prompt with a generation prompt, which would close a prefill and
        # open a new assistant turn; prefilled prompts are rendered open instead (j1.judging.chat.render).
        if not (prompts and isinstance(prompts[0], list) and any(prefill(p) for p in prompts)):
            return super()._tokenize_prompts(prompts)
        tok = self.processing_class
        return [tok(render(tok, p), add_special_tokens=False)["input_ids"] for p in prompts], None, {}

    def _generate_and_score_completions(self, inputs):
        training = self.model.training
        if training:
            check_units(inputs, self.num_generations)
        output = super()._generate_and_score_completions(inputs)
        if training:
            self._j1_step(inputs, output)
        return output

    def _j1_step(self, inputs: list[dict], output: dict) -> None:
        """The one J1 advantage step, in place on TRL's ``output``: the loss span, then the advantages
        (pair or couple groups, the position restoring force)."""
        metrics = self._metrics["train"]
        if self._closers:
            self._mask_outside_answer(inputs, output)
        batch = self._scorer.last if self._scorer is not None else None
        if batch is not None:
            _check_batch(batch, inputs)
            self._write_trace(batch)
        rank, n = self.accelerator.process_index, len(inputs)
        local = slice(rank * n, (rank + 1) * n)
        device = output["advantages"].device
        if self.options.regroups:
            # The reward matrix TRL built from the same values (None -> NaN), every process's rows.
            columns = [[math.nan if v is None else v for v in batch.component(name)] for name in self.reward_func_names]
            rewards = gather(torch.tensor(columns, dtype=torch.float32, device=device).t().contiguous())
            valid = None
            if self.options.invalid_advantage is not None:
                valid = gather(torch.tensor(batch.component("format"), device=device)).bool()
            advantages = verdict_advantages(
                rewards, self.reward_weights, valid, self.num_generations,
                couples=self.options.advantage_groups == "couple", scale_rewards=self.scale_rewards,
                invalid_advantage=self.options.invalid_advantage)
            output["advantages"] = advantages[local].to(device)
            totals = (rewards * self.reward_weights.to(device)).nansum(dim=1).view(-1, 2 * self.num_generations)
            zero_std = nanstd(totals, dim=1)
            metrics["j1/pair_frac_reward_zero_std"].append(
                torch.isclose(zero_std, torch.zeros_like(zero_std)).float().mean().item())
        if self.options.position_balance:
            positions = gather(torch.tensor(batch.positions(), device=device))
            balance = position_balance_advantages(positions, self.options.position_balance)
            output["advantages"] = output["advantages"] + balance[local].to(device)
            named = positions[positions != 0]
            # Mean position of the batch's verdicts: +1 all first-shown, -1 all second-shown.
            metrics["j1/position_imbalance"].append(named.mean().item() if len(named) else 0.0)

    def _mask_outside_answer(self, inputs: list[dict], output: dict) -> None:
        """Apply the loss span to TRL's masks in place, with what TRL derived from the masks before: the
        count the loss divides by, and the vLLM importance-sampling ratio."""
        tok = self.processing_class
        masks = mask_outside_answer(
            output["completion_ids"], output["completion_mask"], [r["judge_format"] for r in inputs],
            lambda t: tok.decode([t]), closers=self._closers, openers=self._openers, eos_id=tok.eos_token_id,
            loss_mask=output.get("tool_mask"))
        output["completion_mask"].copy_(masks.completion_mask)
        trained = masks.completion_mask if masks.loss_mask is None else masks.completion_mask * masks.loss_mask
        # TRL counts the loss's tokens over all processes before the span narrows (TRL 1.16:
        # num_items_in_batch), and its token-summed losses (dapo, the default; cispo, vespo) divide by that
        # count: left as it was, the loss would shrink by the answer's share of the tokens (issue 52).
        output["num_items_in_batch"] = self.accelerator.gather(trained.sum()).sum()
        if "importance_sampling_ratio" in output:  # the thought is context now: the ratio is the answer's
            output["importance_sampling_ratio"] = importance_ratio(
                output["old_per_token_logps"], output["sampling_per_token_logps"], trained,
                self.vllm_importance_sampling_mode, self.vllm_importance_sampling_clip_min,
                self.vllm_importance_sampling_clip_max)
        metrics = self._metrics["train"]
        metrics["j1/tokens_after_answer"].append(sum(masks.after) / max(len(masks.after), 1))
        if masks.loss_mask is not None:
            output["tool_mask"] = masks.loss_mask
            metrics["j1/tokens_before_answer"].append(sum(masks.before) / max(len(inputs), 1))

    def _write_trace(self, batch: ScoredBatch) -> None:
        if self.reward_trace_dir is None:
            return
        if self._j1_trace is None:
            path = Path(self.reward_trace_dir) / f"reward_trace-{self.accelerator.process_index}.jsonl"
            # A call is traced with the step before the one it computes: a resumed run redoes those from
            # its checkpoint's step on, so their old lines go.
            step = self.state.global_step
            self._j1_trace = reopen_for_resume(path, step, lambda row: row.get("step", 0) < step)
        self._j1_trace.write({"process": self.accelerator.process_index, "step": self.state.global_step,
                              "rows": [[r.pair_id, r.order, r.format] for r in batch.rollouts]})

    def train(self, *args, **kwargs):
        try:
            return super().train(*args, **kwargs)
        finally:
            if self._j1_trace is not None:
                self._j1_trace.close()
                self._j1_trace = None


def _check_batch(batch: ScoredBatch, inputs: list[dict]) -> None:
    """Raise RuntimeError unless the reward functions' last batch is this generation batch."""
    rows = [(r.pair_id, r.order) for r in batch.rollouts]
    if rows != [(str(r["pair_id"]), str(r["order"])) for r in inputs]:
        raise RuntimeError("the rewards' last batch is not this generation batch: were the J1 reward functions "
                           "called by another trainer in between?")
