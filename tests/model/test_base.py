"""mill.model.base: the sampling seed every backend derives for a sampled request."""

from __future__ import annotations

import hashlib

from mill.model.base import SERVER_SEED_BITS, request_seed, server_seed
from mill.model.served.openai_api import OpenAICompletions
from mill.model.tokenizing import GenerationJob
from mill.types import GenerationArgs, OutputType, Request

SAMPLED = Request(
    OutputType.GENERATIVE, "gsm8k", 3, 1, "Q: 2+2?\nA:",
    generation=GenerationArgs(until=("\n",), max_gen_toks=8, do_sample=True, temperature=0.7),
)  # fmt: skip


def test_request_seed_is_the_first_8_bytes_of_the_digest_of_seed_and_id() -> None:
    assert SAMPLED.id == "gsm8k/3/choice/1"
    # the values the HF backend has always drawn with (its samples stay as they were)
    assert request_seed(1234, SAMPLED.id) == 8910529964915330773
    assert request_seed(0, "humaneval/0/choice/9") == 5288818454745693978
    digest = hashlib.sha256(b"1234\x00gsm8k/3/choice/1").digest()
    assert request_seed(1234, SAMPLED.id) == int.from_bytes(digest[:8], "big")
    assert request_seed(1234, "gsm8k/3/choice/2") != request_seed(1234, SAMPLED.id)  # repeats
    assert request_seed(1235, SAMPLED.id) != request_seed(1234, SAMPLED.id)


def test_server_seed_is_the_request_seeds_top_31_bits() -> None:
    for seed, rid in ((1234, SAMPLED.id), (0, "humaneval/0/choice/9"), (7, "a/b/choice/0")):
        full = request_seed(seed, rid)
        assert server_seed(seed, rid) == full >> 33 < 2**SERVER_SEED_BITS
    # a uint32 for llama.cpp, never its "random seed" value 0xFFFFFFFF; an int64 for vLLM
    assert SERVER_SEED_BITS == 31
    assert server_seed(1234, SAMPLED.id) == 1037322213


def test_served_and_hf_requests_carry_the_shared_seed() -> None:
    from mill.model.hf import _sampler

    sampler = _sampler([SAMPLED], (0.7, 1234, 1.0))
    (generator,) = sampler.generators
    assert generator.initial_seed() == request_seed(1234, SAMPLED.id)

    model = OpenAICompletions.__new__(OpenAICompletions)
    model.sampling = {}
    job = GenerationJob(0, [1, 2], 0, ("\n",), 8, (0.7, 1234, 1.0))
    payload = model._generation_payload(job, SAMPLED)
    assert payload["seed"] == server_seed(1234, SAMPLED.id) and payload["temperature"] == 0.7
    greedy = GenerationJob(0, [1, 2], 0, ("\n",), 8, None)
    assert model._generation_payload(greedy, SAMPLED)["seed"] == 0
