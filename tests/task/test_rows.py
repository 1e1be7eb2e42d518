"""Bad rows: a missing or null field stops :meth:`Task.prepare` with task, split, row and
field named (built-in and YAML tasks), or is skipped and counted when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mill.tasks.arc import ArcEasy

from mill.data.load import DataSource
from mill.errors import ConfigError, TaskError
from mill.task import YamlTask
from mill.task.rows import MissingField, Row, strict
from tests.helpers import ARC_ROW, write_jsonl


def test_row_refuses_missing_and_null_fields_but_get_stays_optional() -> None:
    row = strict({"a": None, "b": {"c": None, "d": [1, None]}, "e": "x"})
    assert isinstance(row, Row) and row["e"] == "x" and row.get("a") is None
    with pytest.raises(MissingField, match="field 'a' is null"):
        row["a"]
    with pytest.raises(MissingField, match="lacks field 'z'"):
        row["z"]
    with pytest.raises(MissingField, match=r"field 'b.c' is null"):
        row["b"]["c"]
    assert row["b"]["d"][0] == 1
    with pytest.raises(MissingField, match=r"field 'b.d\[1\]' is null"):
        list(row["b"]["d"])
    assert json.loads(json.dumps(row)) == {"a": None, "b": {"c": None, "d": [1, None]}, "e": "x"}


def test_builtin_task_names_the_null_field_not_gold_outside_choices(tmp_path: Path) -> None:
    lacking = {k: v for k, v in ARC_ROW.items() if k != "answerKey"}
    data = str(write_jsonl(tmp_path / "arc.jsonl", [ARC_ROW, lacking, ARC_ROW]))
    task = ArcEasy(dataset={"data_files": {"test": data}})
    with pytest.raises(TaskError) as info:
        task.prepare(DataSource("bundled"))
    message = str(info.value)
    assert "task 'arc_easy', split 'test'" in message and "row 1 of" in message
    assert "field 'answerKey' is null" in message and "not among" not in message


def test_skipping_bad_rows_counts_them_and_keeps_doc_ids(tmp_path: Path) -> None:
    null_text = {**ARC_ROW, "question": {**ARC_ROW["question"], "stem": None}}
    data = str(
        write_jsonl(
            tmp_path / "arc.jsonl", [ARC_ROW, null_text, ARC_ROW, {**ARC_ROW, "answerKey": "E"}]
        )
    )
    task = ArcEasy(dataset={"data_files": {"test": data}})
    source = DataSource("bundled", skip_bad_rows=True)
    task.prepare(source)
    assert [d.id for d in task.docs(source)] == [0, 2]
    assert [(s["split"], s["row"]) for s in task.skipped] == [("test", 1), ("test", 3)]
    assert "field 'question.stem' is null" in task.skipped[0]["error"]
    assert "gold answer is not among its 2 choices" in task.skipped[1]["error"]


def _arc_repeating_labels(tmp_path: Path) -> tuple[Any, str]:
    choices = [{"text": "left", "label": "A"}, {"text": "right", "label": "A"}]
    row = {**ARC_ROW, "question": {**ARC_ROW["question"], "choices": choices}, "answerKey": "A"}
    data = str(write_jsonl(tmp_path / "arc.jsonl", [ARC_ROW, row]))
    return ArcEasy(dataset={"data_files": {"test": data}}), "its choice labels repeat 'A'"


def _yaml_repeating_texts(tmp_path: Path) -> tuple[Any, str]:
    rows = [{"q": "a?", "c": ["x", "y"], "a": "x"}, {"q": "b?", "c": ["x", "x", "y"], "a": "x"}]
    data = str(write_jsonl(tmp_path / "mine.jsonl", rows))
    task = YamlTask(
        name="mine",
        output_type="logprobs",
        doc_to_text="Q: {{q}}",
        doc_to_choice="{{c}}",
        doc_to_target="{{a}}",
        dataset={"data_files": {"test": data}},
    )
    return task, "its choices repeat 'x'"


AMBIGUOUS_GOLD = {
    "ARC: two choices labelled A, answerKey A": _arc_repeating_labels,
    "a YAML task: the gold text twice among the choices": _yaml_repeating_texts,
}


@pytest.mark.parametrize("case", AMBIGUOUS_GOLD)
def test_a_gold_answer_naming_two_choices_is_a_bad_row(case: str, tmp_path: Path) -> None:
    """Issue 53, class 3: the gold is not the first of two choices it names; the row is
    refused at load (one line naming it), or skipped and counted when asked."""
    task, named = AMBIGUOUS_GOLD[case](tmp_path)
    with pytest.raises(TaskError) as info:
        task.prepare(DataSource("bundled"))
    message = str(info.value)
    assert f"split 'test', subject 'default', doc 1: {named}" in message, message
    assert "names 2 choices; fix the data" in message and "\n" not in message
    task, _ = AMBIGUOUS_GOLD[case](tmp_path)
    source = DataSource("bundled", skip_bad_rows=True)
    task.prepare(source)
    assert [d.id for d in task.docs(source)] == [0]
    assert [(s["row"], named in s["error"]) for s in task.skipped] == [(1, True)]


def test_yaml_task_names_the_null_field_and_its_template(tmp_path: Path) -> None:
    data = str(write_jsonl(tmp_path / "mine.jsonl", [{"q": "a?", "a": "b"}, {"q": None, "a": "c"}]))
    task = YamlTask(
        name="mine",
        output_type="generative",
        doc_to_text="Q: {{q}}",
        doc_to_target="a",
        dataset={"data_files": {"test": data}},
    )
    with pytest.raises(TaskError) as info:
        task.prepare(DataSource("bundled"))
    assert "task 'mine', split 'test', subject 'default', doc 1" in str(info.value)
    assert "field 'q' is null (doc_to_text reads it)" in str(info.value)


def test_whole_numbers_only() -> None:
    """A task built from Python holds its settings to the schema's rules (the same check
    as at composition): never truncated."""
    with pytest.raises(ConfigError, match=r"^task\.limit=2\.5 is not allowed: give a whole"):
        ArcEasy(limit=2.5)
    with pytest.raises(ConfigError, match=r"^task\.limit='abc' is not allowed: give a whole"):
        ArcEasy(limit="abc")
    with pytest.raises(ConfigError, match=r"^task\.repeats=0 is not allowed"):
        ArcEasy(repeats=0)
    with pytest.raises(ConfigError, match=r"^task\.num_fewshot=-1 is not allowed"):
        ArcEasy(num_fewshot=-1)
    assert ArcEasy(limit=3).limit == 3 and ArcEasy(limit=3.0).spec.limit == 3
