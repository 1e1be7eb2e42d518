"""The HF backend on real tiny models: lm-eval tokenization semantics, the shared-prefix fast
path against a full forward per request, rolling windows, and generation."""

from __future__ import annotations

import pytest
import torch

from mill.model.hf import HFCausalLM
from mill.model.rolling import rolling_windows
from mill.types import GenerationArgs, OutputType, Request
from tests.helpers import choice_requests, full_forward_oracle

CHOICES = ["water", "a big rock made of ice and snow", "steam", "sand", "Lily"]


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize("which", ["gpt2", "llama"])
def test_shared_prefix_matches_full_forward(which: str, request: pytest.FixtureRequest) -> None:
    model = request.getfixturevalue(which)
    reqs = choice_requests("Question: Which is a liquid?\nAnswer:", CHOICES)
    reqs += choice_requests(
        "Once upon a time, there was a little girl named", ["Lily.", "Tom"], doc=1
    )
    reqs.append(Request(OutputType.LOGPROBS, "t", 2, 0, "", "Hello there"))
    for req, res in zip(reqs, model.loglikelihood(reqs), strict=True):
        want, greedy = full_forward_oracle(model, req.context, req.continuation)
        assert res.logprob == pytest.approx(want, abs=1e-4)
        assert res.is_greedy == greedy


@pytest.mark.slow  # real model, seconds of compute
def test_scores_do_not_depend_on_batching(llama: HFCausalLM) -> None:
    reqs = [
        r for d in range(6) for r in choice_requests(f"Story {d}: the cat sat on the", CHOICES, d)
    ]
    runs = []
    for batch_size, budget in (("auto", 16384), (1, 16384), (8, 16384), (64, 16384), ("auto", 64)):
        llama.batch_size, llama.token_budget = batch_size, budget
        runs.append([r.logprob for r in llama.loglikelihood(reqs)])
    llama.batch_size, llama.token_budget = "auto", 16384
    for other in runs[1:]:
        assert other == pytest.approx(runs[0], abs=1e-5)


def test_encode_pair_moves_trailing_space_and_handles_empty_context(gpt2: HFCausalLM) -> None:
    ctx, cont = gpt2.encode_pair("Answer: ", "Paris")
    assert gpt2.tokenizer.decode(cont) == " Paris"
    assert gpt2.tokenizer.decode(ctx) == "Answer:"
    ctx, cont = gpt2.encode_pair("", "Hello")
    assert ctx == [gpt2.tokenizer.eos_token_id]  # GPT-2 has no BOS: EOS is the prefix
    assert gpt2.tokenizer.decode(cont) == "Hello"


def test_left_truncation_is_counted(llama: HFCausalLM) -> None:
    long_context = "The dog ran. " * 200  # > 512 tokens
    req = Request(OutputType.LOGPROBS, "t", 0, 0, long_context, " home")
    (res,) = llama.loglikelihood([req])
    want, _ = full_forward_oracle(llama, req.context, req.continuation)
    assert res.truncated_tokens_count > 0
    assert res.logprob == pytest.approx(want, abs=1e-4)


def test_rolling_windows_score_every_token_once() -> None:
    tokens = list(range(100, 123))
    windows = rolling_windows(tokens, prefix_token=0, max_length=5)
    assert [t for _, cont in windows for t in cont] == tokens
    assert windows[0] == ([0], [100, 101, 102, 103, 104])
    for ctx, cont in windows:
        assert len(ctx) + len(cont) - 1 <= 5  # each window fits the model
    last_ctx, last_cont = windows[-1]
    assert len(last_ctx) + len(last_cont) - 1 == 5  # the partial last window has full context


@pytest.mark.slow  # real model, seconds of compute
def test_loglikelihood_rolling_equals_sum_over_windows(llama: HFCausalLM) -> None:
    text = "Once upon a time there was a cat. " * 70
    (res,) = llama.loglikelihood_rolling([Request(OutputType.PERPLEXITY, "t", 0, 0, "", text)])
    tokens = llama._encode(text)
    total = 0.0
    for ctx, cont in rolling_windows(tokens, llama.prefix_token_id, llama.max_length):
        ids = torch.tensor([(ctx + cont)[:-1]])
        with torch.no_grad():
            logp = torch.log_softmax(llama.model(ids).logits[0].float(), -1)[-len(cont) :]
        total += float(logp.gather(-1, torch.tensor(cont)[:, None]).sum())
    assert len(res.output_tokens) == len(tokens) > llama.max_length
    assert res.logprob == pytest.approx(total, abs=1e-3)


@pytest.mark.slow  # real model, seconds of compute
def test_generation_matches_hf_generate_and_stops_per_row(llama: HFCausalLM) -> None:
    prompts = ["Once upon a time", "The little dog", "Lily and Tom went to the park. They"]
    args = GenerationArgs(until=(".",), max_gen_toks=40)
    reqs = [
        Request(OutputType.GENERATIVE, "t", i, 0, p, generation=args) for i, p in enumerate(prompts)
    ]
    outs = llama.generate_until(reqs)
    for prompt, out in zip(prompts, outs, strict=True):
        ids = torch.tensor([llama._encode(prompt)])
        ref = llama.model.generate(ids, max_new_tokens=40, do_sample=False)[0, ids.shape[1] :]
        ref_text = llama.tokenizer.decode(ref, skip_special_tokens=True).split(".")[0]
        assert out.text == ref_text
        assert "." not in out.text
        assert out.output_tokens == ref.tolist()[: len(out.output_tokens)]
    # rows retire on their own stop: no row generated past its first stop
    assert all(llama.tokenizer.decode(o.output_tokens).count(".") <= 1 for o in outs)
