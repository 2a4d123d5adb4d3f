"""j1.backends.decode gives transformers' ``generate`` tokens (greedy, and sampled under one seed) while it
compacts finished rows away and reads each shared prompt's cache in place."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from j1.backends import decode, sharedprefix


@pytest.fixture(scope="module")
def tiny(tiny_model):
    tok = AutoTokenizer.from_pretrained(tiny_model, padding_side="left")
    return AutoModelForCausalLM.from_pretrained(tiny_model).eval(), tok


def _prompts(tok, texts, repeats):
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    index = torch.tensor(repeats)  # rows of the batch, prompts repeated and out of order as TRL may give them
    return enc.input_ids[index], enc.attention_mask[index]


TEXTS = ["Which response is better?", "a b", "The cat sat on the mat and then it slept for a while."]
# Many stop tokens: rows finish at different steps, so the batch is compacted on the way.
STOPS = list(range(3, 49152, 11))

CASES = [
    ("greedy", dict(do_sample=False), None),
    ("greedy, early stops", dict(do_sample=False), STOPS),
    ("sampled", dict(do_sample=True, temperature=1.0, top_k=0), None),
    ("sampled t=0.7", dict(do_sample=True, temperature=0.7, top_k=0, top_p=1.0), None),
    ("sampled, top-p and top-k, early stops", dict(do_sample=True, temperature=0.9, top_p=0.8, top_k=50), STOPS),
]


@pytest.mark.parametrize("name,options,stops", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("repeats", [(0, 1, 2), (0, 1, 0, 2, 1, 2, 2, 0)], ids=["distinct", "repeated"])
def test_same_tokens_as_generate(tiny, name, options, stops, repeats):
    model, tok = tiny
    ids, mask = _prompts(tok, TEXTS, repeats)
    kw = dict(max_new_tokens=12, pad_token_id=tok.pad_token_id, **options)
    if stops is not None:
        kw["eos_token_id"] = stops
    with torch.no_grad():
        torch.manual_seed(0)
        ref = model.generate(input_ids=ids, attention_mask=mask, **kw)
        torch.manual_seed(0)
        got = decode.generate(model, ids, mask, decode.sampling_for(model, kw))
    assert got.shape == ref.shape and torch.equal(got, ref)
    if stops is not None:  # rows did stop early, at different steps
        new = ref[:, ids.shape[1]:]
        assert (new == tok.pad_token_id).any() and len(set((new != tok.pad_token_id).sum(1).tolist())) > 1


def test_finished_rows_leave_the_batch(tiny, monkeypatch):
    model, tok = tiny
    ids, mask = _prompts(tok, TEXTS, (0, 1, 0, 2, 1, 2, 2, 0))
    widths = []
    step = decode._step
    monkeypatch.setattr(decode, "_step", lambda m, b, s: widths.append(tuple(b.row.shape)) or step(m, b, s))
    sampling = decode.Sampling(max_new_tokens=12, eos_token_ids=tuple(STOPS), pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        decode.generate(model, ids, mask, sampling)
    # 3 prompts x up to 3 samples at first; fewer slots once rows finish.
    assert widths[0] == (3, 3) and widths[-1][0] * widths[-1][1] < 9


def test_sharedprefix_generate_uses_it_and_matches(tiny, monkeypatch):
    model, tok = tiny
    ids, mask = _prompts(tok, TEXTS, (0, 0, 1, 1, 2, 2))
    calls = []
    real = decode.generate
    monkeypatch.setattr(decode, "generate", lambda *a, **k: calls.append(1) or real(*a, **k))
    kw = dict(max_new_tokens=6, do_sample=True, temperature=0.8, top_k=0, pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        torch.manual_seed(3)
        got = sharedprefix.generate(model, ids, mask, **kw)
        torch.manual_seed(3)
        ref = model.generate(input_ids=ids, attention_mask=mask, **kw)
    assert calls and torch.equal(got, ref)


@pytest.mark.parametrize(
    "options,expected",
    [
        (dict(max_new_tokens=8), decode.Sampling(max_new_tokens=8, eos_token_ids=(2,), pad_token_id=2)),
        (dict(max_new_tokens=8, do_sample=True, temperature=0.5, top_k=0, top_p=0.9, eos_token_id=[2, 7]),
         decode.Sampling(max_new_tokens=8, do_sample=True, temperature=0.5, top_p=0.9, eos_token_ids=(2, 7),
                         pad_token_id=2)),
        (dict(max_new_tokens=8, min_new_tokens=4), decode.Sampling(max_new_tokens=8, eos_token_ids=(2,),
                                                                   pad_token_id=2, min_new_tokens=4)),
        # What this path does not do goes to generate.
        (dict(max_new_tokens=8, num_beams=2), None),
        (dict(max_new_tokens=8, repetition_penalty=1.2), None),
        (dict(max_new_tokens=8, suppress_tokens=[5]), None),
        (dict(max_new_tokens=8, no_repeat_ngram_size=3), None),
        (dict(max_new_tokens=None), None),
    ],
)
def test_sampling_options(options, expected):
    config = GenerationConfig(eos_token_id=2, pad_token_id=2)
    config.update(**options)
    assert decode.Sampling.from_generation_config(config) == expected


def test_min_new_tokens_holds_the_stop_back(tiny):
    model, tok = tiny
    ids, mask = _prompts(tok, TEXTS, (0, 1, 2))
    kw = dict(max_new_tokens=10, min_new_tokens=6, eos_token_id=STOPS, pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        ref = model.generate(input_ids=ids, attention_mask=mask, **kw)
        got = decode.generate(model, ids, mask, decode.sampling_for(model, kw))
    assert torch.equal(got, ref) and (got[:, ids.shape[1]:ids.shape[1] + 6] != tok.pad_token_id).all()


def test_only_llama_family_layouts_are_supported(tiny):
    model, _ = tiny
    assert decode.supports(model)
    assert not decode.supports(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_embedded_model_greedy_matches_generate(dtype):
    # The real judge: two judge prompts, 4 samples each sharing the prompt, greedy, in both weight types.
    from j1.formats import get_format
    from j1.judging.chat import render
    from j1.models import resolve_model
    from j1.pairs import render_both

    path = resolve_model(None)
    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
    texts = [render(tok, m) for _, m in render_both(get_format("pav", "compact"), "What is 2 + 3?", "5.", "6.")]
    ids, mask = _prompts(tok, texts, (0, 0, 1, 1))
    kw = dict(max_new_tokens=16, do_sample=False, pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        ref = model.generate(input_ids=ids, attention_mask=mask, **kw)
        got = decode.generate(model, ids, mask, decode.sampling_for(model, kw))
    if dtype == torch.float32:
        assert torch.equal(got, ref)
        return
    # bf16 logits tie often (8 bits of mantissa), and where the CPU only emulates bf16 the two paths round
    # differently: a row may part from generate only where its two tokens are tied in generate's own logits.
    assert got.shape == ref.shape and torch.equal(got[:, : ids.shape[1]], ref[:, : ids.shape[1]])
    for row in range(ref.shape[0]):
        diff = (got[row] != ref[row]).nonzero()
        if len(diff) == 0:
            continue
        at = int(diff[0])
        extra = torch.ones(1, at - ids.shape[1], dtype=mask.dtype)
        with torch.no_grad():
            logits = model(input_ids=ref[row : row + 1, :at],
                           attention_mask=torch.cat([mask[row : row + 1], extra], 1)).logits[0, -1].float()
        best = float(logits.max())
        ulp = 2.0 ** -7 * abs(best)  # one bf16 step at this magnitude
        assert best - float(logits[got[row, at]]) <= ulp, (row, at, best, float(logits[got[row, at]]))


@pytest.mark.parametrize("options", [dict(do_sample=False), dict(do_sample=True, temperature=1.0, top_k=0)],
                         ids=["greedy", "sampled"])
def test_rows_that_end_stop_there_and_the_others_do_not_change(tiny, options):
    # ends() completes row 1 at its 3rd token and row 4 at its 1st: they are padded from there on and leave
    # the batch; every other row gets the tokens it gets without ends (sampled: the same random draws).
    model, tok = tiny
    ids, mask = _prompts(tok, TEXTS, (0, 1, 0, 2, 1, 2))
    kw = dict(max_new_tokens=8, pad_token_id=tok.pad_token_id, **options)
    at = {1: 3, 4: 1}
    seen = {r: 0 for r in range(6)}
    done_rows = []

    def ends(rows, tokens):
        complete = []
        for r in rows:
            seen[r] += 1
            if at.get(r) == seen[r]:
                complete.append(r)
        return complete

    with torch.no_grad():
        torch.manual_seed(5)
        ref = decode.generate(model, ids, mask, decode.sampling_for(model, kw))
        torch.manual_seed(5)
        got = decode.generate(model, ids, mask, decode.sampling_for(model, kw), on_done=done_rows.extend, ends=ends)
    new_ref, new_got = ref[:, ids.shape[1]:], got[:, ids.shape[1]:]
    for r in range(6):
        keep = at.get(r, 8)
        assert torch.equal(new_got[r, :keep], new_ref[r, :keep])
        assert (new_got[r, keep:] == tok.pad_token_id).all()
    assert seen[1] == 3 and seen[4] == 1  # no token was decoded for them after their end
    assert sorted(done_rows) == [1, 4]


def test_generate_stops_the_rows_ends_names_through_its_stopping_criteria(tiny):
    # The same contract through transformers' generate (sharedprefix.reporting), which pads finished rows.
    model, tok = tiny
    ids, mask = _prompts(tok, TEXTS, (0, 1, 2))
    kw = dict(max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        ref = model.generate(input_ids=ids, attention_mask=mask, **kw)
        stopper = sharedprefix.reporting(model, ends=lambda rows, tokens: [r for r in rows if r == 2])
        got = model.generate(input_ids=ids, attention_mask=mask, stopping_criteria=stopper, **kw)
    L = ids.shape[1]
    assert torch.equal(got[:2, : ref.shape[1]], ref[:2]) and torch.equal(got[2, : L + 1], ref[2, : L + 1])
    assert (got[2, L + 1:] == tok.pad_token_id).all()
