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
        assert response["text"] and "output_tokens" not in response  # runner.sample_tokens
        assert samples[0]["fewshot_ids"] and len(samples[0]["fewshot_ids"]) == 5
        # the metric's extraction hook: the prediction is what each extracting metric read
        assert set(samples[0]["prediction"]) == set(results.tasks[task].metrics)
    elif task == "wikitext":
        assert response["logprobs"][0] < 0 and samples[0]["metrics"][metric][1] > 0
    else:
        assert len(response["logprobs"]) == len(samples[0]["choices"])


def test_every_generation_is_read_through_the_reasoning_rule(compose, tmp_path: Path) -> None:
    """The metrics read ``text_post_processed``: a closed block scores as its answer alone,
    an unclosed one scores 0 (whatever it holds) and is counted; samples keep both texts
    and whether the budget ended the generation."""
    answers = {
        "plain": "#### 18",
        "closed": "<think>maybe #### 3</think> #### 18",
        "unfinished": "<think>so #### 18",
        "kept": "<think>so #### 18",
    }
    rows = {}
    for case, answer in answers.items():
        tags = ["reasoning.tags=[]"] if case == "kept" else []
        cfg = compose(
            "task=gsm8k", "model=fake", f"model.answer='{answer}'", "task.limit=2",
            "report.progress=never", *tags,
        )  # fmt: skip
        results = run_job(cfg, tmp_path / case)
        with jsonlines.open(tmp_path / case / "samples" / "gsm8k.jsonl") as reader:
            sample = next(s for s in reader if s["doc_id"] == 0)
        rows[case] = (sample, results.tasks["gsm8k"])
    plain, closed, unfinished, kept = (rows[c][0] for c in answers)
    assert plain["metrics"]["exact_match_strict"] == 1.0
    assert closed["metrics"] == plain["metrics"]
    assert closed["response"]["text"] == [answers["closed"]]
    assert closed["response"]["text_post_processed"] == ["#### 18"]
    assert unfinished["metrics"]["exact_match_strict"] == 0.0
    assert unfinished["response"]["text_post_processed"] == [""]
    assert unfinished["response"]["reasoning_unfinished"] == [True]
    assert kept["metrics"]["exact_match_flexible"] == 1.0  # the rule off: the text is read
    assert plain["response"]["hit_max_gen_toks"] == [False]
    task = rows["unfinished"][1]
    assert task.generations == {
        "generations": 2, "hit_max_gen_toks": 0, "truncation_rate": 0.0, "unknown": 0,
        "reasoning_unfinished": 2,
    }  # fmt: skip
    assert task.settings["reasoning_tags"] == [["<think>", "</think>"]]
    assert rows["kept"][1].settings["reasoning_tags"] == []


def test_a_generation_cut_by_the_budget_is_counted(compose, tmp_path: Path) -> None:
    cfg = compose(
        "task=gsm8k", "model=fake", "model.answer='" + "x" * 40 + "'", "task.limit=3",
        "task.generation.max_gen_toks=16", "report.progress=never",
    )  # fmt: skip
    results = run_job(cfg, tmp_path)
    generations = results.tasks["gsm8k"].generations
    assert generations is not None
    assert generations["hit_max_gen_toks"] == 3 and generations["truncation_rate"] == 1.0
