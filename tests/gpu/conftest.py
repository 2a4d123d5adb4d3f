"""Fixtures of the GPU suite: what each command is given to run on ``device`` (tests/conftest.py), and
spies that record where the tensors of a run were (the commands do not say where they ran).

Every test here is marked ``gpu``: skipped without CUDA, run on the CPU under ``J1_TEST_DEVICE=cpu``.
The models are the tiny random Llama (``tiny_model``) and the embedded model's folder, which on the GPU
machine holds random weights of SmolLM2's shape: tests assert what holds for any weights (token
identity, counts, files, devices, finish reasons), never a verdict's accuracy."""

from __future__ import annotations

import pytest
from train.tiny import write_pairs


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_torch_thread):
    """One torch thread: on the CPU the tiny models run faster so (tests/conftest.py); a GPU run ignores it."""
    yield


@pytest.fixture(autouse=True)
def _on_device(device):
    """Every test here takes ``device``: it is written for either device, so ``J1_TEST_DEVICE=cpu`` runs it."""
    yield


@pytest.fixture
def pair_file(tmp_path):
    return write_pairs(tmp_path / "pairs.jsonl")


@pytest.fixture(scope="session")
def trl_flags(device) -> list[str]:
    """TRL flags of a training run on ``device``: TRL takes CUDA by itself, and bf16 there (the recipe's
    mixed precision); on the CPU it is told so, in fp32 (no bf16 units here)."""
    common = ["--report_to", "none", "--logging_steps", "1", "--dataloader_num_workers", "0"]
    if device == "cpu":
        return [*common, "--bf16", "false", "--use_cpu", "true"]
    return [*common, "--bf16", "true"]


class Generations(list):
    """(engine, device of the prompt ids, device of the model) of each generation call."""

    def on(self, device: str) -> bool:
        """Whether there were generations and each had its ids and its model on ``device``."""
        return bool(self) and all(ids == model == device for _, ids, model in self)

    @property
    def engines(self) -> set[str]:
        return {engine for engine, _, _ in self}


@pytest.fixture
def generations(monkeypatch) -> Generations:
    """Every generation of the test, as (engine, device of the prompt ids, device of the model): engine
    "j1.decode" (``j1.backends.decode.generate``) or "generate" (transformers' ``generate``, which TRL, the local
    backend off the CPU and ``j1.backends.sharedprefix``'s other path call). Which engine runs is the device's
    choice (``j1.device``); that both stay on the device is what these tests check."""
    from transformers import GenerationMixin

    from j1.backends import decode

    calls = Generations()
    real_decode, real_generate = decode.generate, GenerationMixin.generate

    def spy_decode(model, ids, mask, sampling, **kw):
        calls.append(("j1.decode", ids.device.type, next(model.parameters()).device.type))
        return real_decode(model, ids, mask, sampling, **kw)

    def spy_generate(self, *args, **kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        calls.append(("generate", None if ids is None else ids.device.type, next(self.parameters()).device.type))
        return real_generate(self, *args, **kwargs)

    monkeypatch.setattr(decode, "generate", spy_decode)
    monkeypatch.setattr(GenerationMixin, "generate", spy_generate)
    return calls


@pytest.fixture
def trained_devices(monkeypatch) -> list[str]:
    """The device of the model after each ``Trainer.train`` of the test (GRPO and SFT trainers alike)."""
    from transformers import Trainer

    devices: list[str] = []
    real = Trainer.train

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        devices.append(next(self.model.parameters()).device.type)
        return out

    monkeypatch.setattr(Trainer, "train", spy)
    return devices


@pytest.fixture
def shared_prompt_calls(monkeypatch) -> list[str]:
    """The names of the ``j1.backends.sharedprefix`` passes called in the test (generation, log-probs): what GRPO
    runs with ``--share_prompt_prefix true`` only, on any device."""
    from j1.backends import sharedprefix

    calls: list[str] = []
    for name in ("generate", "completion_logps"):
        real = getattr(sharedprefix, name)

        def spy(*args, _name=name, _real=real, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(sharedprefix, name, spy)
    return calls
