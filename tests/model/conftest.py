"""Shared fixtures of the model tests: the two real tiny models and the full-forward oracle."""

from __future__ import annotations

from importlib import resources

import pytest
import torch

from mill.model.hf import HFCausalLM
from mill.model.random import random_gpt2
from mill.types import OutputType, Request


@pytest.fixture(scope="module")
def gpt2() -> HFCausalLM:
    """A seeded random 2 x 64 GPT-2 with the real GPT-2 tokenizer."""
    return random_gpt2(n_layer=2, n_embd=64, seed=0)


@pytest.fixture(scope="module")
def llama() -> HFCausalLM:
    """The shipped stories260K Llama."""
    return HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))


def full_forward_oracle(model: HFCausalLM, context: str, continuation: str) -> tuple[float, bool]:
    """One full forward over ``(context + continuation)[-(L+1):][:-1]``, as lm-eval computes it:
    (sum of the continuation's log-probabilities, whether every token is the argmax)."""
    ctx, cont = model.encode_pair(context, continuation)
    ids = torch.tensor([(ctx + cont)[-(model.max_length + 1) :][:-1]])
    with torch.no_grad():
        logp = torch.log_softmax(model.model(ids).logits[0].float(), -1)[-len(cont) :]
    target = torch.tensor(cont)
    return float(logp.gather(-1, target[:, None]).sum()), bool((logp.argmax(-1) == target).all())


def choice_requests(context: str, choices: list[str], doc: int = 0) -> list[Request]:
    """One LOGPROBS request per choice (a leading space added), all sharing ``context``."""
    return [
        Request(OutputType.LOGPROBS, "t", doc, i, context, " " + c) for i, c in enumerate(choices)
    ]
