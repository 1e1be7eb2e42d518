"""Scores do not depend on how requests are batched (issue 3, point 4; issue 53).

The same tasks run through the real evaluator on the real stories260K model with batch
sizes 1, 8 and 64 and with token budgets from tiny to large. Every per-request
log-likelihood is the same float (``model.batch_invariant=true``, the default: each context
is scored in passes of its own, tests/model/test_batch_invariance.py), every is_greedy flag
and generation is identical, and so is every metric (accuracies and exact matches exactly;
perplexities, which are exponentials of sums of log-likelihoods, to 1e-9 relative).
"""

from __future__ import annotations

import math
from importlib import resources
from typing import Any

import pytest

from mill.data.load import DataSource
from mill.evaluator import evaluate_tasks
from mill.model.hf import HFCausalLM
from mill.progress import NullProgress
from mill.runner.build import build_metrics, build_tasks

SETTINGS = [
    ("auto", 16384),
    (1, 16384),
    (8, 16384),
    (64, 16384),
    ("auto", 256),  # smaller than most rows: one row per batch, chunked prefill
    ("auto", 2048),
]


@pytest.fixture(scope="module")
def stories() -> HFCausalLM:
    return HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))


TASKS = {
    # 3 shots placed first_n: long shared prefixes across docs (the prefix-cache path)
    "arc_fewshot": [
        "task=arc_easy",
        "task.limit=10",
        "task.num_fewshot=3",
        "task.fewshot_split=validation",
        "task.fewshot_sampler=first_n",
    ],
    "arc_zeroshot": ["task=arc_easy", "task.limit=12"],  # short contexts: packed pass
    "wikitext": ["task=wikitext", "task.limit=2"],  # rolling windows (max_length 512)
    "gsm8k": [
        "task=gsm8k",
        "task.limit=5",
        "task.num_fewshot=1",
        "task.generation.max_gen_toks=24",
    ],
}


def _run(compose, model: HFCausalLM, overrides: list[str]) -> tuple[list[Any], dict[str, Any]]:
    cfg = compose(*overrides, "data=bundled")
    tasks, _ = build_tasks(cfg.task, [])
    metrics = build_metrics(cfg.get("metrics"), tasks, [])
    records: list[Any] = []
    results = evaluate_tasks(
        tasks, metrics, model, DataSource("bundled"), records.append, NullProgress()
    )
    records.sort(key=lambda r: (r.task, r.doc_id))
    values = {name: m["value"] for result in results.values() for name, m in result.metrics.items()}
    return records, values


@pytest.mark.slow
@pytest.mark.parametrize("task", list(TASKS))
def test_batching_does_not_change_scores(compose, stories: HFCausalLM, task: str) -> None:
    runs = []
    try:
        for batch_size, budget in SETTINGS:
            stories.batch_size, stories.token_budget = batch_size, budget
            stories.cache_budget = 4 * budget
            runs.append(_run(compose, stories, TASKS[task]))
    finally:
        stories.batch_size, stories.token_budget = "auto", 16384
        stories.cache_budget = 4 * 16384
    base_records, base_values = runs[0]
    assert base_records, "the task produced no docs"
    for (records, values), setting in zip(runs[1:], SETTINGS[1:], strict=True):
        assert len(records) == len(base_records), setting
        for ours, ref in zip(records, base_records, strict=True):
            a, b = ours.response, ref.response
            assert len(a.logprobs) == len(b.logprobs), setting
            scored = b.output_tokens if b.logprobs else []
            for lp_a, lp_b, _tokens in zip(a.logprobs, b.logprobs, scored, strict=True):
                assert lp_a == lp_b, (setting, lp_a, lp_b)  # the same bits
            assert a.argmax_logits_eq_gold == b.argmax_logits_eq_gold, setting
            assert a.text == b.text, setting
            assert a.output_tokens == b.output_tokens, setting
        assert values.keys() == base_values.keys()
        for name, value in values.items():
            if "perplexity" in name or "bits" in name:
                assert math.isclose(value, base_values[name], rel_tol=1e-9), (name, setting)
            else:
                assert value == base_values[name], (name, setting)
