"""Batched greedy generation (chunked prefill, KV slots written in place, per-row retirement)
against ``transformers``' own ``generate`` run one prompt at a time."""

from __future__ import annotations

from importlib import resources

import pytest
import torch

from mill.model.hf import HFCausalLM
from mill.types import GenerationArgs, OutputType, Request
from tests.model.generation_cases import STORY

PROMPTS = STORY[:6]


@pytest.fixture(scope="module")
def llama() -> HFCausalLM:
    return HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))


_REFERENCES: dict[tuple[str, int, str], tuple[str, list[int]]] = {}


def _reference(model: HFCausalLM, prompt: str, max_new: int, stop: str) -> tuple[str, list[int]]:
    key = (prompt, max_new, stop)
    if key not in _REFERENCES:
        ids = torch.tensor([model._encode(prompt)])
        out = model.model.generate(ids, max_new_tokens=max_new, do_sample=False)
        new = out[0, ids.shape[1] :]
        text = model.tokenizer.decode(new, skip_special_tokens=True).split(stop)[0]
        _REFERENCES[key] = (text, new.tolist())
    return _REFERENCES[key]


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize(
    ("token_budget", "cache_budget"),
    [(16384, 65536), (24, 65536), (24, 40)],
    ids=["one-prefill", "chunked-prefill", "small-decode-batches"],
)
def test_batched_generation_equals_one_at_a_time(
    llama: HFCausalLM, token_budget: int, cache_budget: int
) -> None:
    args = GenerationArgs(until=("!",), max_gen_toks=30)
    reqs = [
        Request(OutputType.GENERATIVE, "t", i, 0, p, generation=args) for i, p in enumerate(PROMPTS)
    ]
    llama.token_budget, llama.cache_budget = token_budget, cache_budget
    try:
        outs = llama.generate_until(reqs)
    finally:
        llama.token_budget, llama.cache_budget = 16384, 65536
    for prompt, out in zip(PROMPTS, outs, strict=True):
        text, tokens = _reference(llama, prompt, 30, "!")
        assert out.text == text, prompt
        assert out.output_tokens == tokens[: len(out.output_tokens)], prompt


@pytest.mark.slow  # real model, seconds of compute
def test_rows_retire_at_their_own_stop(llama: HFCausalLM) -> None:
    args = GenerationArgs(until=(".",), max_gen_toks=60)
    reqs = [
        Request(OutputType.GENERATIVE, "t", i, 0, p, generation=args) for i, p in enumerate(PROMPTS)
    ]
    outs = llama.generate_until(reqs)
    lengths = [len(o.output_tokens) for o in outs]
    for out in outs:
        decoded = llama.tokenizer.decode(out.output_tokens)
        if len(out.output_tokens) < 60:  # stopped: the stop string came with the last token
            assert "." in decoded and "." not in llama.tokenizer.decode(out.output_tokens[:-1])
    assert len(set(lengths)) > 1  # rows did not wait for the slowest one


def test_the_seeded_sampler_draws_from_the_tempered_distribution() -> None:
    from mill.model.engine.generation import SeededSampler

    logits = torch.tensor([[0.0, 1.0, 2.0, float("-inf"), 0.5, -1.0]])
    rows, steps = 200, 200
    draws = rows * steps
    # 200 seeded rows drawing 200 times each (40,000 generators, one per draw, left ~200 MB
    # of freed heap behind that a later test's RSS measurement reused)
    sampler = SeededSampler(range(rows), temperature=0.8)
    batch = logits.expand(rows, -1)
    picked = [t for _ in range(steps) for t in sampler(batch, list(range(rows)))]
    counts = torch.bincount(torch.tensor(picked), minlength=6)
    expected = torch.softmax(logits[0] / 0.8, -1) * draws
    assert counts[3] == 0  # probability 0: never drawn
    seen = expected > 0
    chi2 = float((((counts[seen] - expected[seen]) ** 2) / expected[seen]).sum())
    assert chi2 < 20.5  # 4 degrees of freedom: p = 0.0004


def test_a_sampled_row_depends_on_its_own_seed_alone() -> None:
    from mill.model.engine.generation import SeededSampler

    logits = torch.randn(5, 50257, generator=torch.Generator().manual_seed(0))
    alone = [SeededSampler([s], 0.8)(logits[i : i + 1], [0])[0] for i, s in enumerate(range(5))]
    together = SeededSampler(list(range(5)), 0.8)(logits, list(range(5)))
    reordered = SeededSampler(list(range(5)), 0.8)(logits[[4, 2, 0]], [4, 2, 0])
    assert together == alone
    assert reordered == [alone[4], alone[2], alone[0]]


def test_nucleus_sampling_draws_from_the_renormalised_nucleus() -> None:
    """``top_p``: tokens sorted by probability are kept while the mass before them is below
    top_p; draws follow the kept tokens' renormalised probabilities, and the rest never
    appear."""
    from mill.model.engine.generation import SeededSampler

    logits = torch.tensor([[0.0, 1.0, 2.0, float("-inf"), 0.5, -1.0]])
    probs = torch.softmax(logits[0] / 0.8, -1)
    order = torch.argsort(probs, descending=True)
    before = torch.cumsum(probs[order], 0) - probs[order]
    kept = order[before < 0.7]  # the nucleus of top_p = 0.7
    rows, steps = 100, 200
    sampler = SeededSampler(range(rows), temperature=0.8, top_p=0.7)
    picked = [t for _ in range(steps) for t in sampler(logits.expand(rows, -1), list(range(rows)))]
    counts = torch.bincount(torch.tensor(picked), minlength=6)
    outside = [i for i in range(6) if i not in kept.tolist()]
    assert counts[outside].sum() == 0 and len(kept) < 5
    expected = probs[kept] / probs[kept].sum() * rows * steps
    chi2 = float((((counts[kept] - expected) ** 2) / expected).sum())
    assert chi2 < 16.3  # at most 3 degrees of freedom: p = 0.001
    # a tiny top_p keeps the most likely token alone: greedy
    greedy = SeededSampler(range(4), temperature=0.8, top_p=1e-6)
    assert greedy(logits.expand(4, -1), list(range(4))) == [2, 2, 2, 2]
    # top_p = 1 draws exactly as before it existed
    plain = SeededSampler([7], 0.8)(logits, [0])
    assert SeededSampler([7], 0.8, top_p=1.0)(logits, [0]) == plain


def _nucleus_rows(rows: int, vocab: int) -> torch.Tensor:
    """Logits whose nuclei range from one token to most of the vocabulary, with ties (of
    rounded logits) inside, at and past every nucleus boundary, and -inf tokens."""
    g = torch.Generator().manual_seed(1)
    spread = torch.logspace(-1, 1.3, rows)[:, None]  # flat rows to peaked ones
    logits = (torch.randn(rows, vocab, generator=g) * spread).round(decimals=1)
    logits[::5, : vocab // 3] = float("-inf")
    return logits


def test_a_nucleus_drawn_from_candidates_equals_one_drawn_from_the_whole_sort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nucleus draw sorts only its most likely candidates and sorts a row whole when
    its nucleus reaches their least weight: every draw equals the whole sort's, for
    nuclei inside the candidates, past them and ending in ties at their edge."""
    from mill.model.engine import generation
    from mill.model.engine.generation import SeededSampler

    rows, vocab, steps = 64, 2048, 6
    logits = _nucleus_rows(rows, vocab)
    sorted_whole = 0

    def draws(candidates: int) -> list[list[int]]:
        nonlocal sorted_whole
        monkeypatch.setattr(generation, "NUCLEUS_CANDIDATES", candidates)
        calls = {"whole": 0}
        real = generation._sorted_candidates

        def counted(weights: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
            calls["whole"] += weights.shape[0] if k >= weights.shape[-1] else 0  # rows
            return real(weights, k)

        monkeypatch.setattr(generation, "_sorted_candidates", counted)
        sampler = SeededSampler(range(rows), temperature=0.7, top_p=0.9)
        out = [sampler(logits, list(range(rows))) for _ in range(steps)]
        if candidates < vocab:
            sorted_whole = calls["whole"]
        return out

    whole = draws(vocab)
    for candidates in (4, 16, 64, 256):
        assert draws(candidates) == whole, candidates
        # some rows' nuclei reached past the candidates, some stayed inside
        assert 0 < sorted_whole < rows * steps, (candidates, sorted_whole)


def test_nucleus_ties_at_the_edge_of_the_candidates_are_sorted_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Equal weights straddling the candidates' edge: which of them the candidates hold is
    the selection's choice, so a nucleus that reaches them draws as the whole sort does
    (the lowest token ids first), and one that stops before them keeps the favourite."""
    from mill.model.engine import generation
    from mill.model.engine.generation import SeededSampler

    candidates = generation.NUCLEUS_CANDIDATES
    vocab = candidates * 4
    logits = torch.full((1, vocab), -30.0)
    logits[0, -3] = 5.0  # the favourite, a high token id
    logits[0, 1 : 2 * candidates] = 0.0  # ties, twice as many as the candidates

    def draws(top_p: float, count: int) -> list[int]:
        sampler = SeededSampler([3], temperature=1.0, top_p=top_p)
        return [sampler(logits, [0])[0] for _ in range(count)]

    wide = draws(0.99, 300)  # the nucleus: the favourite and ties past the candidates
    assert set(wide) <= {vocab - 3, *range(1, 2 * candidates)}
    assert max(t for t in wide if t != vocab - 3) >= candidates
    assert draws(1e-3, 20) == [vocab - 3] * 20  # the favourite alone
    monkeypatch.setattr(generation, "NUCLEUS_CANDIDATES", vocab)  # every row sorted whole
    assert draws(0.99, 300) == wide
