"""``j1.backends.decode`` and ``j1.backends.sharedprefix.generate`` on the device: the tokens of ``model.generate`` on the
same device, greedy and sampled under one seed, in fp32, with prompts repeated (each distinct prompt's
prefill shared by its rows) and left-padded to different lengths.

``j1.backends.sharedprefix.generate`` decodes with ``j1.backends.decode`` where the device's choice says so
(``j1.device.fast_decode``: the CPU), else with ``generate`` over the shared prompt cache; ``j1.backends.decode``
is called directly too, so that it is proven on the device whichever path the default takes."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from j1.backends import decode, sharedprefix

pytestmark = pytest.mark.gpu

TEXTS = ["Which response is better?", "a b", "The cat sat on the mat and then it slept for a while."]
# Rows of the batch: the prompts repeated and out of order, as TRL gives a prompt's rollouts.
REPEATS = (0, 1, 0, 2, 1, 2, 2, 0)
# One token in 11 stops a row: rows end at different steps and the batch is compacted on the way.
STOPS = list(range(3, 49152, 11))

CASES = [
    ("greedy", dict(do_sample=False), None),
    ("greedy, early stops", dict(do_sample=False), STOPS),
    ("sampled", dict(do_sample=True, temperature=1.0, top_k=0), None),
    ("sampled, top-p and top-k, early stops", dict(do_sample=True, temperature=0.9, top_p=0.8, top_k=50), STOPS),
    # The minimum length holds the stops back (its processor's tensor must be on the logits' device).
    ("greedy, min_new_tokens", dict(do_sample=False, min_new_tokens=6), STOPS),
    ("sampled, min_new_tokens", dict(do_sample=True, temperature=0.8, top_k=0, min_new_tokens=6), STOPS),
]


def _load(path: str, device: str):
    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).eval()
    return model, tok


@pytest.fixture(scope="module")
def tiny(tiny_model, device):
    return _load(str(tiny_model), device)


@pytest.fixture(scope="module")
def embedded(device):
    """The embedded model's folder: trained weights here, random ones of the same shape on the GPU machine."""
    from j1.models import resolve_model

    return _load(resolve_model(None), device)


def _batch(tok, device, repeats):
    enc = tok(TEXTS, return_tensors="pt", padding=True, add_special_tokens=False)
    index = torch.tensor(repeats)
    ids, mask = enc.input_ids[index].to(device), enc.attention_mask[index].to(device)
    assert (mask == 0).any(), "the prompts must be left-padded to different lengths"
    return ids, mask


# j1.backends.decode itself; j1.backends.sharedprefix as the device chooses; j1.backends.sharedprefix's generate path (a GPU's
# choice, taken here on any device).
PATHS = ["j1.decode", "sharedprefix", "sharedprefix-generate"]


def _same_as_generate(model, tok, device, options, stops, generations, monkeypatch, path, *, repeats=REPEATS,
                      max_new_tokens=12):
    """The tokens of ``path`` are ``model.generate``'s."""
    if path == "sharedprefix-generate":
        import j1.device

        monkeypatch.setattr(j1.device, "fast_decode", lambda device: False)
    direct = path == "j1.decode"
    ids, mask = _batch(tok, device, repeats)
    kw = dict(max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id, **options)
    if stops is not None:
        kw["eos_token_id"] = stops
    with torch.no_grad():
        torch.manual_seed(0)  # seeds the CUDA generators too
        ref = model.generate(input_ids=ids, attention_mask=mask, **kw)
        torch.manual_seed(0)
        if direct:
            sampling = decode.sampling_for(model, kw)
            assert sampling is not None, "j1.backends.decode does not take these options"
            got = decode.generate(model, ids, mask, sampling)
        else:
            got = sharedprefix.generate(model, ids, mask, **kw)
    assert generations.on(device)
    if direct:
        assert "j1.decode" in generations.engines
    elif path == "sharedprefix-generate":
        assert generations.engines == {"generate"}
    assert got.device.type == device
    assert got.shape == ref.shape, (got.shape, ref.shape)
    differ = (got != ref).nonzero().tolist()
    assert not differ, f"first (row, column) that differs from generate: {differ[0]}"
    return ids, got


@pytest.mark.parametrize("name,options,stops", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("path", PATHS)
def test_tiny_model_same_tokens_as_generate(tiny, device, generations, monkeypatch, path, name, options, stops):
    model, tok = tiny
    ids, got = _same_as_generate(model, tok, device, options, stops, generations, monkeypatch, path)
    new = got[:, ids.shape[1]:]
    if "min_new_tokens" in options:  # no row stopped before its minimum
        assert (new[:, : options["min_new_tokens"]] != tok.pad_token_id).all()
    elif stops is not None:  # rows did stop, at different steps (greedy past a minimum may repeat a token)
        lengths = (new != tok.pad_token_id).sum(1)
        assert (new == tok.pad_token_id).any() and len(set(lengths.tolist())) > 1


# SmolLM2's shape (grouped-query attention, 30 blocks): j1.backends.decode greedy and sampled, and the default path.
EMBEDDED_CASES = [("j1.decode", CASES[0]), ("j1.decode", CASES[5]), ("sharedprefix", CASES[5])]


@pytest.mark.parametrize("path,case", EMBEDDED_CASES, ids=[f"{p}-{c[0]}" for p, c in EMBEDDED_CASES])
def test_embedded_model_same_tokens_as_generate(embedded, device, generations, monkeypatch, path, case):
    model, tok = embedded
    _, options, stops = case
    # fewer rows and tokens: this model has 85 times the tiny one's weights (135M against 1.6M)
    _same_as_generate(model, tok, device, options, stops, generations, monkeypatch, path, repeats=(0, 1, 0, 2),
                      max_new_tokens=8)
