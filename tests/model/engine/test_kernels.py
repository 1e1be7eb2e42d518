"""The fused tanh-GELU: every Python GELU module of a real GPT-2 is replaced, scores move by
rounding only, and ``fused_gelu=false`` keeps the model's own modules."""

from __future__ import annotations

import pytest
from transformers.activations import GELUTanh, NewGELUActivation

from mill.model.random import random_gpt2
from tests.helpers import choice_requests, full_forward_oracle


@pytest.mark.slow  # real model, seconds of compute
def test_fused_gelu_replaces_every_python_gelu_and_scores_stay_equal() -> None:
    fused = random_gpt2(n_layer=3, n_embd=64, seed=1)
    plain = random_gpt2(n_layer=3, n_embd=64, seed=1, fused_gelu=False)
    acts = [type(block.mlp.act) for block in fused.model.transformer.h]
    assert acts == [GELUTanh] * 3
    assert [type(block.mlp.act) for block in plain.model.transformer.h] == [NewGELUActivation] * 3
    assert fused.identity()["fused_gelu"] and not plain.identity()["fused_gelu"]
    reqs = choice_requests("Question: which one is blue?\nAnswer:", ["the sky", "grass", "sun"])
    for req, a, b in zip(reqs, fused.loglikelihood(reqs), plain.loglikelihood(reqs), strict=True):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-5)
        assert a.is_greedy == b.is_greedy
        assert b.logprob == pytest.approx(
            full_forward_oracle(plain, req.context, req.continuation)[0], abs=1e-5
        )
