"""Every scoring path of the engine against the oracle (one full forward per request, as
lm-eval computes it), on the real tiny models, plus the work each path does."""

from __future__ import annotations

import pytest

from mill.model.engine import scoring
from mill.model.hf import HFCausalLM
from mill.types import OutputType, Request
from tests.helpers import choice_requests, docs_requests, full_forward_oracle

SHOTS = "".join(
    f"Question: Which animal says {w}?\nAnswer: the {a}\n\n"
    for w, a in [("moo", "cow"), ("woof", "dog"), ("meow", "cat"), ("quack", "duck")] * 3
)  # ~170 GPT-2 tokens, ~450 stories260K tokens: a shared prefix that fits both models
CHOICES = ["a big red ball", "the sun", "water", "sand and small rocks"]


def _workload() -> list[Request]:
    reqs = []
    for d, q in enumerate(["Which is wet?", "Which is hot?", "Which is round?"]):
        reqs += choice_requests(SHOTS + f"Question: {q}\nAnswer:", CHOICES, d)  # long shared prefix
    reqs += choice_requests("Question: Which is small?\nAnswer:", CHOICES, 3)  # short: packed pass
    reqs += choice_requests("Q: pick one\nA:", ["A", "B", "C", "D"], 4)  # single tokens
    reqs += choice_requests("Q: pick one\nA:", ["A", "B"], 5)  # duplicates of doc 4's requests
    reqs.append(Request(OutputType.LOGPROBS, "t", 6, 0, "", "Hello there"))  # empty context
    reqs.append(Request(OutputType.LOGPROBS, "t", 7, 0, "The dog ran. " * 300, " home"))
    return reqs


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(scoring, name)

    def wrapper(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(scoring, name, wrapper)
    return calls


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize("which", ["gpt2", "llama"])
@pytest.mark.parametrize("tree", [True, False], ids=["4d-mask", "expanded-cache"])
def test_every_path_matches_a_full_forward_per_request(
    which: str, tree: bool, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = request.getfixturevalue(which)
    if not tree:  # the fallback for attention kernels without custom masks
        monkeypatch.setattr(model._forward, "supports_4d_mask", lambda: False)
    spies = {n: _spy(monkeypatch, n) for n in ("_packed_pass", "_shared_pass", "_full_pass")}
    reqs = _workload()
    responses = model.loglikelihood(reqs)
    for req, res in zip(reqs, responses, strict=True):
        want, greedy = full_forward_oracle(model, req.context, req.continuation)
        assert res.logprob == pytest.approx(want, abs=1e-4), req.id
        assert res.is_greedy == greedy, req.id
    assert responses[-1].truncated_tokens_count > 0
    assert spies["_full_pass"] and spies["_shared_pass"]  # truncated; long contexts
    assert bool(spies["_packed_pass"]) == tree


@pytest.mark.slow  # real model, seconds of compute
def test_shared_prefix_runs_once_and_work_stays_small(
    gpt2: HFCausalLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contexts sharing few-shot examples run them once; single-token choices need no
    continuation pass; identical requests are scored once; the head sees only scored
    positions."""
    fed: list[int] = []
    handle = gpt2.model.base_model.register_forward_pre_hook(
        lambda m, a, k: fed.append(int(k["input_ids"].numel())), with_kwargs=True
    )
    head_rows: list[int] = []
    logits = gpt2._forward.logits

    def spy(h, lo=0, hi=None):
        if lo == 0:  # the first vocabulary tile of a block of positions
            head_rows.append(h.shape[0])
        return logits(h, lo, hi)

    monkeypatch.setattr(gpt2._forward, "logits", spy)
    try:
        docs = [SHOTS + f"Question: Which is item {d}?\nAnswer:" for d in range(6)]
        reqs = docs_requests(docs, ["A", "B", "C", "D"])
        reqs += reqs[:4]  # exact duplicates
        responses = gpt2.loglikelihood(reqs)
    finally:
        handle.remove()
    ctx_tokens = [len(gpt2.encode_pair(c, " A")[0]) for c in docs]
    shared = min(ctx_tokens)  # upper bound of the common prefix
    assert sum(fed) < shared + sum(n - shared for n in ctx_tokens) + 6 * 8
    assert sum(fed) < sum(ctx_tokens) / 3  # far less than once per doc
    assert sum(head_rows) == len(docs)  # one scored position per doc (single tokens)
    assert [r.logprob for r in responses[-4:]] == [r.logprob for r in responses[:4]]
    for req, res in zip(reqs[:8], responses[:8], strict=True):
        assert res.logprob == pytest.approx(
            full_forward_oracle(gpt2, req.context, req.continuation)[0], abs=1e-4
        )


def test_packed_rows_report_their_padding_once(gpt2: HFCausalLM) -> None:
    """Short docs with multi-token choices are packed into rows; the padding the responses
    report, summed, is exactly the positions the model ran beyond the real ones (each
    doc's context once, each choice but its last token)."""
    fed: list[int] = []
    handle = gpt2.model.base_model.register_forward_pre_hook(
        lambda m, a, k: fed.append(int(k["input_ids"].numel())), with_kwargs=True
    )
    # two blocks of different lengths: each takes a row of the longer's width
    docs = [f"Question {d}: " + "which one is it? " * (1 + 3 * d) + "\nAnswer:" for d in range(2)]
    reqs = docs_requests(docs, CHOICES)
    try:
        responses = gpt2.loglikelihood(reqs)
    finally:
        handle.remove()
    real = 0
    for doc in docs:
        pairs = [gpt2.encode_pair(doc, f" {c}") for c in CHOICES]
        real += len(pairs[0][0]) + sum(len(cont) - 1 for _, cont in pairs)
    padded = sum(r.padded_tokens_count for r in responses)
    assert padded > 0  # the shorter block's row
    assert sum(fed) == real + padded


def test_single_token_choices_cost_one_forward_pass_per_doc(gpt2: HFCausalLM) -> None:
    calls: list[int] = []
    handle = gpt2.model.base_model.register_forward_pre_hook(
        lambda m, a, k: calls.append(1), with_kwargs=True
    )
    gpt2.batch_size = 1  # one doc per forward pass
    try:
        reqs = docs_requests([f"Q{d}: short question?\nA:" for d in range(3)], list("ABCD"))
        gpt2.loglikelihood(reqs)
    finally:
        gpt2.batch_size = "auto"
        handle.remove()
    assert len(calls) == 3


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize("tree", [True, False], ids=["4d-mask", "expanded-cache"])
def test_truncated_choices_of_one_length_share_one_window(
    tree: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Left-truncated requests (every context longer than the window, as ARC 25-shot on a
    1024-token model): choices of equal length have the same window and run its context
    once; log-likelihoods equal the full forward of each request, and input_tokens and
    truncated_tokens_count equal the full pass's (share_prefix=false)."""
    from mill.model.random import random_gpt2

    model = random_gpt2(n_layer=2, n_embd=64, seed=0, max_length=96)
    if not tree:
        monkeypatch.setattr(model._forward, "supports_4d_mask", lambda: False)
    choices = ["A", "B", "the sun", "the moon", "sand and small rocks", "water"]
    contexts = [SHOTS + f"Question: Which is item {d}?\nAnswer:" for d in range(3)]
    reqs = docs_requests(contexts, choices)
    fed: list[int] = []
    handle = model.model.base_model.register_forward_pre_hook(
        lambda m, a, k: fed.append(int(k["input_ids"].numel())), with_kwargs=True
    )
    try:
        responses = model.loglikelihood(reqs)
    finally:
        handle.remove()
    model.share_prefix = False  # one full pass per request: the reference path
    full = model.loglikelihood(reqs)
    windows = 0
    for req, res, ref in zip(reqs, responses, full, strict=True):
        want, greedy = full_forward_oracle(model, req.context, req.continuation)
        assert res.logprob == pytest.approx(want, abs=1e-4), req.id
        assert res.is_greedy == greedy, req.id
        assert res.truncated_tokens_count == ref.truncated_tokens_count > 0, req.id
        assert res.input_tokens == ref.input_tokens, req.id
        windows += model.max_length
    lengths = {len(model.encode_pair(reqs[0].context, " " + c)[1]) for c in choices}
    assert len(lengths) < len(choices)  # some choices share a window
    # a window's context runs once per (doc, continuation length), not once per choice:
    # here half as many windows as requests, so well under 3/4 of the full passes' tokens
    assert len(lengths) * 2 == len(choices)
    assert sum(fed) < 0.75 * windows


def test_packed_rows_take_the_width_that_wastes_least() -> None:
    """Blocks of one length each take a row of their own width (a fixed 256 would leave
    ten rows of 140 almost half empty); mixed blocks share rows; every block fits."""
    from mill.model.engine.scoring import _first_fit, _row_width

    assert _row_width([140] * 10) == 140
    lengths = [200, 120, 80, 70, 50, 40, 30, 10]
    width = _row_width(lengths)
    place, fill = _first_fit(lengths, width)
    assert width >= max(lengths) and all(used <= width for used in fill)
    assert sum(fill) == sum(lengths) and len(place) == len(lengths)
    assert len(fill) * width - sum(lengths) <= 0.2 * sum(lengths)
