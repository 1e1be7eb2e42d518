"""Each output type end to end in process: on the fake model (fast tier) and on the tiny
real models (slow)."""

from __future__ import annotations

from pathlib import Path

import jsonlines
import pytest

from mill.runner.job import run_job


@pytest.mark.parametrize(
    ("task", "model", "metric"),
    [
        ("arc_easy", "fake", "acc"),
        ("gsm8k", "fake", "exact_match_strict"),
        ("wikitext", "fake", "word_perplexity"),
        pytest.param("arc_easy", "gpt2_random", "acc", marks=pytest.mark.slow),
        pytest.param("gsm8k", "stories260k", "exact_match_strict", marks=pytest.mark.slow),
        pytest.param("wikitext", "gpt2_random", "word_perplexity", marks=pytest.mark.slow),
    ],
)
def test_output_type_end_to_end(
    compose, tmp_path: Path, task: str, model: str, metric: str
) -> None:
    cfg = compose(f"task={task}", f"model={model}", "task.limit=4", "report.progress=never")
    results = run_job(cfg, tmp_path)
    row = results.metric(task, metric)
    assert row.n in (3, 4) and row.value is not None
    with jsonlines.open(tmp_path / "samples" / f"{task}.jsonl") as reader:
        samples = list(reader)
    assert len(samples) == row.n
    response = samples[0]["response"]
    if task == "gsm8k":
        assert response["text"] and response["output_tokens"][0]
        assert samples[0]["fewshot_ids"] and len(samples[0]["fewshot_ids"]) == 5
        # the metric's extraction hook: the prediction is what each extracting metric read
        assert set(samples[0]["prediction"]) == set(results.tasks[task].metrics)
    elif task == "wikitext":
        assert response["logprobs"][0] < 0 and samples[0]["metrics"][metric][1] > 0
    else:
        assert len(response["logprobs"]) == len(samples[0]["choices"])
