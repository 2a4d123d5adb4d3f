"""Every tensor j1 makes is made on the device of what it serves (STYLE 18).

CI has no GPU, so a tensor made on the CPU beside a CUDA model shows only on a GPU (as the minimum-length
processor of ``j1.backends.decode`` did: ``isin`` on a CPU tensor). These tests catch that class of bug on the
CPU: ``FactoryWatch`` records every tensor factory (``torch.zeros``, ``torch.tensor``, ...) that code in
``src/j1`` calls without a ``device``, while each path runs on a tiny model; and the logits processors
j1 builds are asked for the ``meta`` device and must hold nothing elsewhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode
from transformers import AutoModelForCausalLM, AutoTokenizer

from j1.backends import decode, sharedprefix

SRC = str(Path(__file__).resolve().parents[1] / "src" / "j1")
FACTORIES = {torch.zeros, torch.ones, torch.full, torch.empty, torch.tensor, torch.as_tensor, torch.arange,
             torch.rand, torch.randn, torch.randint, torch.randperm, torch.eye, torch.linspace}
# Made on the CPU on purpose: a sampler's index permutation (a CPU generator) is not a model tensor.
ALLOWED = {("train/sft.py", "randperm")}


class FactoryWatch(TorchFunctionMode):
    """Records ``(file:line, factory)`` for each tensor factory called from src/j1 with no ``device``."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            frame = sys._getframe(1)  # the caller of the factory (torch's own internals are not j1's to fix)
            name = frame.f_code.co_filename
            if name.startswith(SRC):
                where = name[len(SRC) + 1:]
                if (where, func.__name__) not in ALLOWED:
                    self.found.append(f"{where}:{frame.f_lineno} torch.{func.__name__}")
        return func(*args, **kwargs)


def test_the_watch_sees_a_factory_without_a_device():
    # The watch itself: a factory called from a file under src/j1 is caught, one with a device is not.
    code = compile("import torch\nx = torch.zeros(2)\ny = torch.ones(2, device='cpu')\n", f"{SRC}/fake.py", "exec")
    with FactoryWatch() as watch:
        exec(code, {})
    assert watch.found == ["fake.py:2 torch.zeros"]


@pytest.fixture(scope="module")
def tiny(tiny_model):
    tok = AutoTokenizer.from_pretrained(tiny_model, padding_side="left")
    return AutoModelForCausalLM.from_pretrained(tiny_model).eval(), tok


def _batch(tok):
    enc = tok(["Which response is better?", "a b"], return_tensors="pt", padding=True, add_special_tokens=False)
    index = torch.tensor([0, 1, 0, 1])  # repeated prompts: the shared prefill and the slot grid
    return enc.input_ids[index], enc.attention_mask[index]


GENERATE = [
    ("greedy, min_new_tokens", dict(do_sample=False, min_new_tokens=3)),
    ("sampled, top-k/top-p", dict(do_sample=True, temperature=0.8, top_k=20, top_p=0.9)),
    ("generate's own path (repetition penalty)", dict(do_sample=False, repetition_penalty=1.1)),
]


@pytest.mark.parametrize("name,options", GENERATE, ids=[g[0] for g in GENERATE])
def test_generation_makes_no_tensor_off_device(tiny, name, options):
    model, tok = tiny
    ids, mask = _batch(tok)
    stops = list(range(3, 49152, 7))  # rows end at different steps: compaction runs too
    with FactoryWatch() as watch:
        sharedprefix.generate(model, ids, mask, max_new_tokens=8, pad_token_id=tok.pad_token_id,
                              eos_token_id=stops, **options)
    assert watch.found == []


def test_logits_processors_sit_on_the_device_asked():
    sampling = decode.Sampling(max_new_tokens=4, do_sample=True, temperature=0.7, top_k=5, top_p=0.9, min_p=0.1,
                               eos_token_ids=(2, 7), min_new_tokens=2)
    processors = sampling.processors(10, torch.device("meta"))
    tensors = [(type(p).__name__, k, v) for p in processors for k, v in vars(p).items() if isinstance(v, torch.Tensor)]
    assert tensors, "the minimum-length processor holds the end-of-sequence ids"
    assert all(v.device.type == "meta" for _, _, v in tensors), tensors


def test_probe_and_local_backend_make_no_tensor_off_device(tiny):
    from j1.backends.base import SamplingParams
    from j1.backends.local import LocalBackend
    from j1.probe.runner import next_token_logprobs

    model, tok = tiny
    backend = LocalBackend.from_model(model, tok)
    with FactoryWatch() as watch:
        next_token_logprobs(model, tok, ["a b c", "Which one?"], [5, 6], batch_size=2)
        list(backend.stream([[{"role": "user", "content": "Pick A or B."}]] * 2,
                            SamplingParams(n=2, max_new_tokens=4, temperature=1.0, seed=0)))
    assert watch.found == []


def test_advantages_make_no_tensor_off_device():
    from j1.train.advantages import position_balance_advantages, verdict_advantages

    rewards = torch.tensor([[1.0], [0.0], [0.0], [1.0], [1.0], [1.0], [0.0], [0.0]])
    valid = torch.tensor([True, True, False, True, True, True, True, True])
    with FactoryWatch() as watch:
        for couples in (False, True):
            verdict_advantages(rewards, torch.ones(1), valid, 2, couples=couples, invalid_advantage=-1.0)
        position_balance_advantages(torch.tensor([1.0, -1.0, 0.0]), 0.5)
    assert watch.found == []
