"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_model_no_hub(monkeypatch):
    """Loading a model or asking the hub fails the test: bad input must be caught before either."""
    import datasets
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("bad input reached a model load or a hub request")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
