"""Shared fixtures of the model tests: the two real tiny models and the full-forward oracle."""

from __future__ import annotations

from importlib import resources

import pytest

from mill.model.hf import HFCausalLM
from mill.model.random import random_gpt2


@pytest.fixture(scope="module")
def gpt2() -> HFCausalLM:
    """A seeded random 2 x 64 GPT-2 with the real GPT-2 tokenizer."""
    return random_gpt2(n_layer=2, n_embd=64, seed=0)


@pytest.fixture(scope="module")
def llama() -> HFCausalLM:
    """The shipped stories260K Llama."""
    return HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))
