"""model=replay: saved completions in the three accepted formats, and the one-line refusals."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mill.errors import ConfigError
from mill.model.replay import ReplayLM
from mill.types import GenerationArgs, OutputType, Request


def _request(doc: int, index: int = 0, item_id: str | None = None) -> Request:
    return Request(
        OutputType.GENERATIVE, "humaneval", doc, index, "ctx", generation=GenerationArgs(),
        item_id=item_id if item_id is not None else f"HumanEval/{doc}",
    )  # fmt: skip


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_human_eval_samples_repeats_in_order(tmp_path: Path) -> None:
    path = _lines(
        tmp_path / "samples.jsonl",
        [
            {"task_id": "HumanEval/0", "completion": "a0"},
            {"task_id": "HumanEval/1", "completion": "b0"},
            {"task_id": "HumanEval/0", "completion": "a1"},
        ],
    )
    model = ReplayLM(str(path))
    seen: list[str] = []
    out = model.generate_until(
        [_request(0, 1), _request(1), _request(0, 0)], lambda q, r: seen.append(r.text or "")
    )
    assert [r.text for r in out] == ["a1", "b0", "a0"] == seen
    assert model.identity()["completions_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_evalplus_solutions_and_integer_ids(tmp_path: Path) -> None:
    path = _lines(tmp_path / "s.jsonl", [{"task_id": 11, "solution": "def f(): pass"}])
    (out,) = ReplayLM(str(path)).generate_until([_request(0, item_id="Mbpp/11")])
    assert out.text == "def f(): pass"


def test_bigcode_list_of_lists_in_doc_order(tmp_path: Path) -> None:
    path = tmp_path / "generations.json"
    path.write_text(json.dumps([["x0", "x1"], ["y0", "y1"]]))
    out = ReplayLM(str(path)).generate_until([_request(1, 1), _request(0, 0)])
    assert [r.text for r in out] == ["y1", "x0"]


def test_missing_id_names_the_first_before_any_answer(tmp_path: Path) -> None:
    path = _lines(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "completion": "a"}])
    answered: list[str] = []
    with pytest.raises(ConfigError, match="no completion for task 'humaneval' id 'HumanEval/3'"):
        ReplayLM(str(path)).generate_until(
            [_request(0), _request(3), _request(4)], lambda q, r: answered.append(q.id)
        )
    assert answered == []


def test_fewer_completions_than_repeats(tmp_path: Path) -> None:
    path = _lines(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "completion": "a"}])
    with pytest.raises(ConfigError, match=r"has 1 completion\(s\).*asks 3 \(task.repeats\)"):
        ReplayLM(str(path)).generate_until([_request(0, i) for i in range(3)])


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json\n", "line 1 is not JSON"),
        ('{"completion": "x"}\n', "line 1 has no task_id"),
        ('{"task_id": "a", "completion": 3}\n', "no completion or solution string"),
        ('[["a"], "b"]', "not all lists of strings"),
        ("", "holds no completions"),
    ],
)
def test_bad_files_get_one_line(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError, match=why) as caught:
        ReplayLM(str(path))
    assert "\n" not in str(caught.value)


def test_replay_refuses_logprobs_and_perplexity(tmp_path: Path) -> None:
    path = _lines(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "completion": "a"}])
    model = ReplayLM(str(path))
    assert model.refusal(OutputType.GENERATIVE) is None
    for kind in (OutputType.LOGPROBS, OutputType.PERPLEXITY):
        assert "generation only" in str(model.refusal(kind))
