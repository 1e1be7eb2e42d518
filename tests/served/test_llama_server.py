"""The llama.cpp server fixture end to end: stories260k converted to GGUF and served over HTTP
gives the same prompt log-probs and the same greedy text as transformers fp32."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.support.servers import SERVED_NAME, STORIES, ServerProcess, echo_logprobs, http_json

pytestmark = pytest.mark.slow

PROMPTS = [
    "Once upon a time, there was a little girl named Lily.",
    'Tim and his mom went to the park. They saw a big dog! The dog said: "Woof, woof?"',
    "The sun was hot. Ben wanted to swim in the lake, but his dad said no.",
]


@pytest.fixture(scope="module")
def hf():
    tok = AutoTokenizer.from_pretrained(STORIES)
    model = AutoModelForCausalLM.from_pretrained(STORIES, dtype=torch.float32).eval()
    return tok, model


def _hf_logprobs(hf, text: str) -> tuple[list[int], np.ndarray]:
    tok, model = hf
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, -1)[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    return ids, logp.numpy()


def test_models_endpoint_names_the_alias(llama_server: ServerProcess) -> None:
    status, body = http_json(llama_server.base_url + "/models")
    assert status == 200
    assert [m["id"] for m in body["data"]] == [SERVED_NAME]


@pytest.mark.parametrize("text", PROMPTS)
def test_echoed_prompt_logprobs_match_transformers(
    llama_server: ServerProcess, hf, text: str
) -> None:
    ids, ref = _hf_logprobs(hf, text)
    lp = echo_logprobs(llama_server, text)
    tok = hf[0]
    n_prompt = len(ids) - 1  # the server echoes the prompt tokens after BOS
    # Same tokenization: the echoed pieces are the HF tokens after BOS.
    assert lp["tokens"][:n_prompt] == tok.convert_ids_to_tokens(ids[1:])
    got = lp["token_logprobs"][:n_prompt]
    # The first prompt token's log-prob (after BOS) is not reported by llama-cpp-python.
    assert got[0] is None
    diff = np.abs(np.array(got[1:], dtype=np.float64) - ref[1:])
    assert diff.max() < 1e-4, (diff.max(), diff.argmax())
    assert len(lp["token_logprobs"]) == n_prompt + 1  # plus the one generated token


def test_greedy_generation_matches_transformers(llama_server: ServerProcess, hf) -> None:
    tok, model = hf
    prompt = "Once upon a time"
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=40, do_sample=False)
    expected = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    status, body = http_json(
        llama_server.base_url + "/completions",
        {
            "model": SERVED_NAME,
            "prompt": prompt,
            "max_tokens": 40,
            "temperature": 0.0,
            "repeat_penalty": 1.0,
            "top_k": 0,
            "top_p": 1.0,
            "min_p": 0.0,
            "seed": 0,
        },
    )
    assert status == 200, body
    got = body["choices"][0]["text"]
    assert got == expected
    assert len(got) > 50
