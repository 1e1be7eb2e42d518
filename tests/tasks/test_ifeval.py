"""task=ifeval: its prompts (chat template, or plain text warned once), rows it refuses
before any model loads, IFEval's response files through model=replay, and the pipeline's
four accuracies on the bundled excerpt (GPT-4's responses) and the fake model."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from mill.tasks.ifeval import IFEval

from mill.data.load import DataSource, bundled_data_dir
from mill.errors import ConfigError, TaskError
from mill.evaluator import evaluate_tasks
from mill.metrics.config import build_metric, metric_config
from mill.model.fake import FakeLM
from mill.model.replay import ReplayLM
from mill.progress import NullProgress
from mill.types import ReasoningRule
from tests.helpers import write_jsonl

BUNDLED = DataSource("bundled")
GPT4 = bundled_data_dir() / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl"
METRICS = IFEval.METRICS


def _metrics(task: IFEval) -> dict[str, list[Any]]:
    return {task.name: [build_metric(m, metric_config(m), []) for m in METRICS]}


def _local(tmp_path: Path, rows: list[dict[str, Any]]) -> DataSource:
    (tmp_path / "ifeval").mkdir()
    write_jsonl(tmp_path / "ifeval" / "input_data.jsonl", rows)
    return DataSource("local", str(tmp_path))


ROW = {
    "key": 7,
    "prompt": "Write a haiku. Do not use commas.",
    "instruction_id_list": ["punctuation:no_comma"],
    "kwargs": [{}],
}


def test_the_prompt_is_the_user_turn_of_the_chat_template() -> None:
    turns: list[Any] = []

    def chat(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        turns.append((messages, add_generation_prompt))
        return "<user>" + messages[0]["content"] + "<assistant>"

    doc = next(IFEval(limit=1).docs(BUNDLED, chat=chat))
    prompt = json.loads((bundled_data_dir() / "ifeval" / "input_data.jsonl").open().readline())
    assert turns[0] == ([{"role": "user", "content": prompt["prompt"]}], True)
    assert doc.context == f"<user>{prompt['prompt']}<assistant>"
    assert doc.gold == tuple(prompt["instruction_id_list"])


def test_without_a_chat_template_the_prompt_is_plain_text_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = IFEval(limit=3)
    with caplog.at_level(logging.WARNING, logger="mill"):
        docs = list(task.docs(BUNDLED, chat=None))
    assert [r.message for r in caplog.records].count(
        "task ifeval: the model has no chat template; each prompt is sent as plain text"
    ) == 1
    assert docs[0].context == docs[0].item["prompt"]
    assert task.describe()["conversation_format"] == "plain_text"
    assert task.chat_template  # the setting itself is kept for the next model


def test_generation_is_greedy_1280_tokens_without_stop_strings() -> None:
    request = IFEval(limit=1).requests(next(IFEval(limit=1).docs(BUNDLED)))[0]
    assert request.generation.until == () and request.generation.max_gen_toks == 1280
    assert not request.generation.do_sample


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"instruction_id_list": ["punctuation:no_semicolon"]},
            "row 0 (key 7): unknown IFEval instruction 'punctuation:no_semicolon'",
        ),
        (
            {"kwargs": [{"num_words": 10}]},
            "row 0 (key 7): instruction 'punctuation:no_comma': kwargs unknown ['num_words']",
        ),
        ({"kwargs": [{}, {}]}, "1 instruction ids but 2 kwargs"),
    ],
)
def test_rows_it_cannot_check_stop_before_any_model(
    tmp_path: Path, change: dict[str, Any], says: str
) -> None:
    source = _local(tmp_path, [{**ROW, **change}])
    with pytest.raises(TaskError) as err:
        IFEval().prepare(source)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert "data.skip_bad_rows=true" in str(err.value)


def test_skip_bad_rows_skips_and_counts_them(tmp_path: Path) -> None:
    bad = {**ROW, "key": 8, "instruction_id_list": ["nope:nope"]}
    source = DataSource("local", str(tmp_path), skip_bad_rows=True)
    (tmp_path / "ifeval").mkdir()
    write_jsonl(tmp_path / "ifeval" / "input_data.jsonl", [ROW, bad])
    task = IFEval()
    docs = list(task.docs(source))
    assert [d.item["key"] for d in docs] == [7] and len(task.skipped) == 1


def test_replay_answers_by_prompt_and_refuses_a_file_that_does_not_cover_them(
    tmp_path: Path,
) -> None:
    task = IFEval(limit=3)
    docs = list(task.docs(BUNDLED))
    requests = [r for d in docs for r in task.requests(d)]
    answers = [json.loads(line) for line in GPT4.read_text().splitlines()]
    by_prompt = {a["prompt"]: a["response"] for a in answers}
    got = ReplayLM(str(GPT4)).generate_until(requests)
    assert [r.text for r in got] == [by_prompt[d.item["prompt"]] for d in docs]
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps(answers[0]) + "\n")
    with pytest.raises(ConfigError) as err:
        ReplayLM(str(short)).generate_until(requests)
    assert "has no completion for task 'ifeval' id 'I am planning a trip to Japan" in str(err.value)
    assert "\n" not in str(err.value)


def test_the_pipeline_scores_gpt4s_bundled_responses() -> None:
    task = IFEval()
    records: list[Any] = []
    results = evaluate_tasks(
        [task], _metrics(task), ReplayLM(str(GPT4)), BUNDLED, records.append, NullProgress()
    )
    metrics = results["ifeval"].metrics
    # the same numbers from the checker itself, prompt by prompt
    from mill.metrics.ifeval import doc_verdicts

    docs = {d.id: d for d in task.docs(BUNDLED)}
    found = [doc_verdicts(docs[r.doc_id], r.response.text[0]) for r in records]
    strict = [v for f in found for v in f.strict]
    assert metrics["prompt_level_strict_acc"]["value"] == sum(all(f.strict) for f in found) / 20
    assert metrics["inst_level_strict_acc"]["value"] == sum(strict) / len(strict)
    assert metrics["inst_level_loose_acc"]["n"] == 20
    assert metrics["inst_level_strict_acc"]["stderr"] is not None
    record = records[0]
    assert record.metrics["inst_level_strict_acc"] == [int(v) for v in found[0].strict]
    assert record.gold == docs[record.doc_id].gold


def test_the_reasoning_rule_removes_the_block_before_checking(tmp_path: Path) -> None:
    source = _local(tmp_path, [ROW])
    answer = "<think>first, commas, more commas</think>A haiku without a comma"
    scores = {}
    for tags in ([], [["<think>", "</think>"]]):
        task = IFEval()
        results = evaluate_tasks(
            [task],
            _metrics(task),
            FakeLM(answer=answer),
            source,
            lambda r: None,
            NullProgress(),
            reasoning=ReasoningRule.parse(tags),
        )
        scores[len(tags)] = results["ifeval"].metrics["prompt_level_strict_acc"]["value"]
    assert scores == {0: 0.0, 1: 1.0}


def test_ifeval_metrics_refuse_other_tasks() -> None:
    from mill.tasks.gsm8k import GSM8K

    metric = build_metric("inst_level_strict_acc", metric_config("inst_level_strict_acc"), [])
    assert "use it with task=ifeval" in str(metric.check_task(GSM8K()))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rows", "answers", "says"),
    [
        (
            [{**ROW, "instruction_id_list": ["punctuation:no_semicolon"]}],
            None,
            "unknown IFEval instruction 'punctuation:no_semicolon'",
        ),
        (
            [{**ROW, "kwargs": [{"relation": "at most"}]}],
            None,
            "kwargs unknown ['relation']",
        ),
        ([ROW], [{"prompt": "another prompt", "response": "x"}], "has no completion"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_results(
    tmp_path: Path, rows: list[dict[str, Any]], answers: list[dict[str, Any]] | None, says: str
) -> None:
    from tests.helpers import run_mill

    (tmp_path / "data" / "ifeval").mkdir(parents=True)
    write_jsonl(tmp_path / "data" / "ifeval" / "input_data.jsonl", rows)
    model = ["model=fake"]
    if answers is not None:
        write_jsonl(tmp_path / "answers.jsonl", answers)
        model = ["model=replay", f"model.path={tmp_path / 'answers.jsonl'}"]
    out = tmp_path / "run"
    proc = run_mill(
        "task=ifeval", *model, "data=local", f"data.dir={tmp_path / 'data'}",
        f"hydra.run.dir={out}",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mill: error")]
    assert len(errors) == 1 and says in errors[0] and "Traceback" not in proc.stderr
    assert not (out / "results.json").exists()
