"""J1GRPOTrainer overrides private GRPOTrainer methods; each follows the signature of the TRL version
named in j1.train.trl_grpo. When the installed TRL moves one, this fails and names the method."""

from __future__ import annotations

import inspect

import pytest
import trl
from trl import GRPOTrainer

from j1.train.trl_grpo import TRL_SIGNATURES, TRL_VERSION, J1GRPOTrainer


def _params(fn) -> list[str]:
    return [n for n, p in inspect.signature(fn).parameters.items()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("method", sorted(TRL_SIGNATURES))
def test_trl_still_has_the_signature_we_override(method):
    expected = TRL_SIGNATURES[method]
    assert hasattr(GRPOTrainer, method), (
        f"TRL {trl.__version__} has no GRPOTrainer.{method}; J1GRPOTrainer overrides it as in TRL {TRL_VERSION}")
    got = _params(getattr(GRPOTrainer, method))
    # Extra trailing (multimodal) keywords are passed through by **kwargs; the leading ones must match.
    assert got[: len(expected)] == expected, (
        f"GRPOTrainer.{method} in TRL {trl.__version__} takes {got}, J1GRPOTrainer follows TRL {TRL_VERSION}'s "
        f"{expected}: update the override (src/j1/train/trl_grpo.py or shared_prompt.py)")


@pytest.mark.parametrize("method", sorted(TRL_SIGNATURES))
def test_our_overrides_take_those_parameters(method):
    ours = getattr(J1GRPOTrainer, method)
    assert ours is not getattr(GRPOTrainer, method), f"J1GRPOTrainer does not override {method}"
    assert _params(ours) == TRL_SIGNATURES[method]


def test_a_changed_signature_is_caught(monkeypatch):
    # The check can fail: a TRL whose method lost a parameter is reported.
    monkeypatch.setattr(GRPOTrainer, "_tokenize_prompts", lambda self: None)
    with pytest.raises(AssertionError, match="_tokenize_prompts in TRL"):
        test_trl_still_has_the_signature_we_override("_tokenize_prompts")


# Lines of TRL 1.16's GRPOTrainer that j1 redoes after narrowing the loss span (j1.train.trl_grpo,
# j1.train.rollout_correction) or relies on for the KL reference (j1.train.recipe.reference_adapter).
# When TRL rewrites one, j1's copy may no longer match it: this names the line to re-read.
TRL_LINES = {
    "_generate_and_score_completions": [
        "loss_mask = completion_mask if tool_mask is None else completion_mask * tool_mask",
        "num_items_in_batch = self.accelerator.gather(loss_mask.sum()).sum()",
        "per_token_logps_diff = (old_per_token_logps - sampling_per_token_logps) * mask",
        "per_token_logps_diff = torch.nan_to_num(per_token_logps_diff, nan=0.0)",
        "per_sequence_logps_diff = per_token_logps_diff.sum(dim=-1, keepdim=True)",
        'with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):',
    ],
    "_compute_loss": [
        'normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes',
        'per_token_loss = per_token_loss * inputs["importance_sampling_ratio"]',
    ],
}


@pytest.mark.parametrize("method", sorted(TRL_LINES))
def test_trl_still_computes_what_j1_redoes(method):
    source = inspect.getsource(getattr(GRPOTrainer, method))
    for line in TRL_LINES[method]:
        assert line in source, (f"GRPOTrainer.{method} in TRL {trl.__version__} no longer has `{line}`; j1 follows "
                                f"TRL {TRL_VERSION}: re-read it (src/j1/train/trl_grpo.py, rollout_correction.py)")
