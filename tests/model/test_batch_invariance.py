"""A log-likelihood's bits do not depend on the batch it lands in (issue 53, class 1).

With ``model.batch_invariant=true`` (the default) every context's group of requests (a
question's choices) is scored in forward passes of its own, so the tensors its numbers
come from are a function of that group alone: the same bits, the same ``is_greedy`` and the
same ``padded_tokens_count`` at batch size 1, 2, 7 or auto, under any token budget, and for
any subset of the docs (what a resumed run or one data-parallel worker scores). The real
stories260K model, real tasks' requests: zero-shot ARC (the packed pass), ARC with three
shots placed first (the shared-prefix cache), long contexts (the context pass and the
continuation tree) and WikiText's rolling windows.

``model.batch_invariant=false`` batches contexts together (faster on tiny models); the last
test shows that its numbers then move with the batch, which is what the setting is for.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest

from mill.data.load import DataSource
from mill.evaluator import build_requests
from mill.model.hf import HFCausalLM
from mill.progress import NullProgress
from mill.runner.build import build_metrics, build_tasks
from mill.types import OutputType, Request, Response

# (batch_size, token_budget): one context per pass or many, a budget below a row's size
BATCHINGS = [("auto", 4096), (1, 4096), (2, 4096), (7, 4096), ("auto", 256)]

TASKS = {
    "arc_zeroshot": ["task=arc_easy", "task.limit=8"],
    "arc_fewshot": [
        "task=arc_easy",
        "task.limit=6",
        "task.num_fewshot=3",
        "task.fewshot_split=validation",
        "task.fewshot_sampler=first_n",
    ],
    # 12 shots: contexts beyond the packed pass's 512 tokens (context pass, then the tree)
    "arc_long": [
        "task=arc_easy",
        "task.limit=3",
        "task.num_fewshot=12",
        "task.fewshot_split=validation",
    ],
    "wikitext": ["task=wikitext", "task.limit=2"],
}


@pytest.fixture(scope="module")
def stories() -> HFCausalLM:
    return HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))


def _requests(compose: Any, model: HFCausalLM, overrides: list[str]) -> list[Request]:
    cfg = compose(*overrides, "data=bundled")
    tasks, _ = build_tasks(cfg.task, [])
    metrics = build_metrics(cfg.get("metrics"), tasks, [])
    plan = build_requests(tasks, metrics, model, DataSource("bundled"), NullProgress())
    return plan.requests


def _score(model: HFCausalLM, requests: list[Request], batching: tuple[Any, int]) -> dict:
    model.batch_size, model.token_budget = batching
    rolling = requests[0].output_type is OutputType.PERPLEXITY
    score = model.loglikelihood_rolling if rolling else model.loglikelihood
    responses: list[Response] = score(requests)
    return {
        r.id: (resp.logprob, resp.is_greedy, resp.padded_tokens_count)
        for r, resp in zip(requests, responses, strict=True)
    }


@pytest.mark.parametrize("task", list(TASKS))
def test_same_bits_at_every_batch_size_and_for_any_subset_of_docs(
    compose: Any, stories: HFCausalLM, task: str
) -> None:
    requests = _requests(compose, stories, TASKS[task])
    assert stories.batch_invariant
    try:
        reference = _score(stories, requests, BATCHINGS[0])
        assert len(reference) == len(requests) and len({r.doc_id for r in requests}) > 1
        for batching in BATCHINGS[1:]:
            # == on floats: the same bits, not the same to a tolerance
            assert _score(stories, requests, batching) == reference, batching
        # what a resumed run (the unfinished docs) or one of two workers (every other doc)
        # scores: whole docs, in batches of another composition
        docs = sorted({r.doc_id for r in requests})
        for part in (docs[1::2], docs[len(docs) // 2 :]):  # both non-empty: 2+ docs
            subset = [r for r in requests if r.doc_id in part]
            got = _score(stories, subset, BATCHINGS[0])
            assert got == {r.id: reference[r.id] for r in subset}, part
    finally:
        stories.batch_size, stories.token_budget = "auto", 4096


def test_batched_contexts_move_with_the_batch(compose: Any, stories: HFCausalLM) -> None:
    """The fast path the setting turns off: contexts packed together round differently
    (which is why it is off by default), to float rounding."""
    requests = _requests(compose, stories, TASKS["arc_zeroshot"])
    stories.batch_invariant = False
    try:
        runs = [_score(stories, requests, b) for b in (("auto", 4096), (1, 4096))]
    finally:
        stories.batch_invariant = True
        stories.batch_size, stories.token_budget = "auto", 4096
    assert runs[0].keys() == runs[1].keys()
    moved = [k for k in runs[0] if runs[0][k][0] != runs[1][k][0]]
    assert moved, "batched scoring happened to give the same bits"
    assert max(abs(runs[0][k][0] - runs[1][k][0]) for k in moved) < 1e-4
