"""The judged tasks' files: question rows checked, with their reference and baseline answers
attached (``task=judged``, ``mt_bench``), and Arena-Hard's question and baseline files.

The tasks (``mill.tasks.judged``) build their docs and turns from these rows; the files'
formats are in docs/judging.md ("Question files").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mill.data.load import warn_duplicate_ids
from mill.errors import TaskError
from mill.files import read_jsonl

ARENA_BASELINE = "model_answer_gpt-4-0314.jsonl"
"""Arena-Hard v0.1's baseline answers (gpt-4-0314), beside ``question.jsonl``."""


def read_rows(path: str | Path, what: str) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file (:func:`mill.files.read_jsonl`), TaskError when bad."""
    return read_jsonl(path, what, TaskError)


def row_id(row: dict[str, Any]) -> str:
    """A row's question id: ``id``, else FastChat's ``question_id``."""
    return str(row.get("id", row.get("question_id", "")))


def answer_turns(row: dict[str, Any]) -> list[str]:
    """An answer row's turns: FastChat's ``choices[0].turns`` or plain ``turns``."""
    if row.get("choices"):
        return [str(t) for t in row["choices"][0]["turns"]]
    return [str(t) for t in row.get("turns") or []]


def answers_by_id(path: str | None, what: str) -> dict[str, list[str]]:
    """Question id -> the turns of an answer file (references, a baseline); empty without
    one."""
    return {row_id(r): answer_turns(r) for r in read_rows(path, what)} if path else {}


def question_rows(
    rows: list[dict[str, Any]],
    questions: str,
    references: str | None,
    baseline: str | None,
    max_turns: int | None,
) -> list[dict[str, Any]]:
    """The question rows checked (``turns``: a list of strings; TaskError naming the file
    ``questions`` and the row) as ``{"id", "turns", "category", "reference"?,
    "baseline"?}``: the first ``max_turns`` turns, the references file's answer over the
    row's own ``reference``, the baseline's answer; repeated ids are warned about."""
    refs = answers_by_id(references, "reference answers")
    base = answers_by_id(baseline, "baseline answers")
    out: list[dict[str, Any]] = []
    for n, row in enumerate(rows, 1):
        turns = row.get("turns")
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise TaskError(
                f"{questions}: question {n} has no 'turns' (a list of strings); "
                'each line needs {"id", "turns": [str, ...]}'
            )
        if max_turns is not None:
            turns = turns[:max_turns]
        rid = row_id(row) or str(n)
        item = {"id": rid, "turns": turns, "category": str(row.get("category") or "default")}
        reference = refs.get(rid) or row.get("reference")  # the references file wins
        if reference:
            item["reference"] = [str(t) for t in reference]
        if rid in base:
            item["baseline"] = base[rid]
        out.append(item)
    warn_duplicate_ids(out, f"{questions} (question file)")
    return out


def arena_answer(row: dict[str, Any]) -> list[str]:
    """An Arena-Hard answer row's text (``messages[-1].content.answer``)."""
    content = row["messages"][-1]["content"]
    return [str(content["answer"] if isinstance(content, dict) else content)]


def arena_hard_rows(folder: Path) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Arena-Hard's prompts in ``folder`` (``question.jsonl``) as question rows, and its
    baseline's answers by prompt id (:data:`ARENA_BASELINE`)."""
    questions = read_rows(folder / "question.jsonl", "Arena-Hard question file")
    answers = read_rows(folder / ARENA_BASELINE, "baseline answers")
    baseline = {str(r["uid"]): arena_answer(r) for r in answers}
    rows = [
        {"id": str(q["uid"]), "turns": [str(q["prompt"])], "category": str(q["category"])}
        for q in questions
    ]
    return rows, baseline
