"""The judged tasks' files (:mod:`mill.judging.questions`): question rows checked, their
references and baseline answers attached, Arena-Hard's files read; and the one face,
``mill.judging``, gives every name it lists."""

from __future__ import annotations

import importlib
import logging
import pkgutil
from pathlib import Path

import pytest

import mill.judging
from mill.errors import TaskError
from mill.judging import arena_hard_rows, question_rows, read_rows
from tests.helpers import write_jsonl


def test_rows_take_the_references_file_over_their_own_and_the_baselines_answers(
    tmp_path: Path,
) -> None:
    refs = tmp_path / "refs.jsonl"
    write_jsonl(refs, [{"question_id": 2, "choices": [{"turns": ["file's ref"]}]}])
    base = tmp_path / "base.jsonl"
    write_jsonl(base, [{"id": "1", "turns": ["b1", "b2"]}])
    rows = [
        {"id": 1, "turns": ["q1", "q2", "q3"], "category": "math", "reference": ["own"]},
        {"question_id": 2, "turns": ["p1"], "reference": ["row's ref"]},
        {"turns": ["r1"]},
    ]
    got = question_rows(rows, "q.jsonl", str(refs), str(base), max_turns=2)
    assert got == [
        {
            "id": "1",
            "turns": ["q1", "q2"],
            "category": "math",
            "reference": ["own"],
            "baseline": ["b1", "b2"],
        },
        {"id": "2", "turns": ["p1"], "category": "default", "reference": ["file's ref"]},
        {"id": "3", "turns": ["r1"], "category": "default"},  # no id: its line number
    ]


@pytest.mark.parametrize("turns", [None, [], "one string", ["ok", 3]])
def test_a_row_without_a_list_of_string_turns_is_refused_naming_file_and_row(turns) -> None:
    rows = [{"id": "a", "turns": ["fine"]}, {"id": "b", "turns": turns}]
    with pytest.raises(TaskError, match=r"^q\.jsonl: question 2 has no 'turns' \(a list of"):
        question_rows(rows, "q.jsonl", None, None, None)


def test_repeated_question_ids_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    rows = [{"id": "a", "turns": ["x"]}, {"id": "a", "turns": ["y"]}]
    with caplog.at_level(logging.WARNING):
        assert len(question_rows(rows, "q.jsonl", None, None, None)) == 2
    assert "q.jsonl (question file): 1 row(s) repeat a document id" in caplog.text


def test_arena_hards_files_give_prompts_and_the_baselines_answers(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "question.jsonl",
        [{"uid": "u1", "prompt": "Hi?", "category": "arena-hard-v0.1"}],
    )
    write_jsonl(
        tmp_path / "model_answer_gpt-4-0314.jsonl",
        [{"uid": "u1", "messages": [{"content": "Q"}, {"content": {"answer": "Hello."}}]}],
    )
    rows, baseline = arena_hard_rows(tmp_path)
    assert rows == [{"id": "u1", "turns": ["Hi?"], "category": "arena-hard-v0.1"}]
    assert baseline == {"u1": ["Hello."]}


def test_a_bad_answer_file_is_one_task_error(tmp_path: Path) -> None:
    bad = tmp_path / "refs.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(TaskError, match="reference answers"):
        read_rows(bad, "reference answers")


def test_the_face_gives_every_name_it_lists_from_its_module() -> None:
    """``mill.judging`` lists each name once and gives, for each, the object of the
    judging module that defines it; every public class and function of those modules that
    another package uses is on the list."""
    names = mill.judging.__all__
    assert len(names) == len(set(names))
    modules = [
        importlib.import_module(f"mill.judging.{m.name}")
        for m in pkgutil.iter_modules(mill.judging.__path__)
    ]
    for name in names:
        homes = [m for m in modules if getattr(m, name, None) is getattr(mill.judging, name)]
        assert homes, name
    for used in ("Judging", "WaitingDoc", "DispatchFn", "is_judged", "judge_job", "JudgeScore"):
        assert used in names
