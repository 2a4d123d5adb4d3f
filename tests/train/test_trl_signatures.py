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
