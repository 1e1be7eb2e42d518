"""benchmarks.lighteval_math (lighteval 0.13's math scoring, the reference for Mill's math
tasks) against its committed reference verdicts in benchmarks/data/math_completions/, and
that corpus's generator.

The parity tests run the script in lighteval's interpreter (``.venv-lighteval``,
``$MILL_LIGHTEVAL_PYTHON``) on a few rows of each task, every case of those rows (the
pathological row 0 left out: its timeouts cost minutes), and check every field of every
record equals the committed one. The generator test needs no lighteval.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.data.math_completions import make
from benchmarks.driver_common import REPO, SHARED_DATA, lighteval_python, module_cmd

CORPUS = REPO / "benchmarks" / "data" / "math_completions"
LIGHTEVAL = lighteval_python()
TASKS = ["math500", "aime24", "aime25", "amc23"]
ROWS = [1, 2, 7]
"""Rows (file positions) scored here: 1 and 2 have every rare case, 7 only the ordinary ones."""

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@needs_data
@pytest.mark.parametrize("task", TASKS)
def test_corpus_is_what_make_writes(task: str) -> None:
    lines = [json.dumps(c, ensure_ascii=False) + "\n" for c in make.cases(task)]
    assert (CORPUS / f"{task}.jsonl").read_text(encoding="utf-8") == "".join(lines)


@pytest.mark.parametrize("task", TASKS)
def test_reference_verdicts_cover_every_completion(task: str) -> None:
    given = _jsonl(CORPUS / f"{task}.jsonl")
    scored = _jsonl(CORPUS / f"{task}.lighteval.jsonl")
    assert [str(c["task_id"]) for c in given] == [r["task_id"] for r in scored]
    assert {r["verdict"] for r in scored} == {0, 1}
    by_case: dict[str, set[int]] = {}
    for c, r in zip(given, scored, strict=True):
        by_case.setdefault(c["case"], set()).add(r["verdict"])
    # the cases whose verdict does not depend on the row (MATH-500's golds: see the README)
    assert 1 in by_case["gold_boxed"]
    if task != "math500":
        assert by_case["gold_boxed"] == by_case["answer_line"] == {1}
    assert by_case["no_answer"] == by_case["empty"] == {0}


@pytest.mark.parity
@pytest.mark.skipif(not LIGHTEVAL.exists(), reason=f"no lighteval interpreter at {LIGHTEVAL}")
@needs_data
@pytest.mark.parametrize("task", TASKS)
def test_lighteval_math_reproduces_the_committed_verdicts(task: str, tmp_path: Path) -> None:
    ids = [str(t) for t, _ in make.rows(task)]
    chosen = {ids[i] for i in ROWS}
    given = [c for c in _jsonl(CORPUS / f"{task}.jsonl") if str(c["task_id"]) in chosen]
    expected = [r for r in _jsonl(CORPUS / f"{task}.lighteval.jsonl") if r["task_id"] in chosen]
    completions = tmp_path / "c.jsonl"
    completions.write_text("".join(json.dumps(c) + "\n" for c in given), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["--task", task, "--data", str(SHARED_DATA), "--completions", str(completions)]
    cmd = module_cmd(LIGHTEVAL, "lighteval_math", *args, "--out", str(out), "--k", "1")
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, timeout=600)
    assert _jsonl(out) == expected
    aggregates = json.loads((tmp_path / "out.aggregates.json").read_text())
    assert aggregates["completions"] == len(given)
    assert aggregates["pass@1_mean_of_verdicts"] == sum(r["verdict"] for r in expected) / len(given)


@pytest.mark.parity
@pytest.mark.skipif(not LIGHTEVAL.exists(), reason=f"no lighteval interpreter at {LIGHTEVAL}")
@needs_data
@pytest.mark.parametrize("task", ["aime24", "aime25", "amc23", "math500"])
def test_dump_prompts_prints_lighteval_queries(task: str) -> None:
    cmd = module_cmd(LIGHTEVAL, "lighteval_math", "--task", task, "--data", str(SHARED_DATA))
    done = subprocess.run(
        [*cmd, "--dump-prompts", "2"], cwd=REPO, check=True, capture_output=True, text=True
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    rows = make.rows(task)[:2]
    ours = _mill_prompts(task)
    for (task_id, _), line in zip(rows, lines, strict=True):
        shown_id, shown = line.split("\t")
        prompt = ast.literal_eval(shown)
        assert shown_id == str(task_id)
        assert prompt == ours[str(task_id)]  # Mill's task builds lighteval's query, text for text
        if task != "math500":  # AIME's prompt (aime25: QwQ's instruction taken off)
            assert prompt.startswith("\nSolve the following math problem efficiently and clearly.")
            assert "Please reason step by step" not in prompt
        else:
            assert prompt.startswith("Solve the following problem. The final line of your")


def _mill_prompts(task: str) -> dict[str, str]:
    """Mill's queries (no chat template: the text the template wraps) by the row's id."""
    pytest.importorskip("math_verify", reason="the math extra")
    from mill.tasks import mathematics

    from mill.data.load import DataSource

    made = {
        "math500": mathematics.Math500, "aime24": mathematics.AIME24,
        "aime25": mathematics.AIME25, "amc23": mathematics.AMC23,
    }[task](chat_template=False, limit=2)  # fmt: skip
    return {
        str(made.item_id(d.item)): d.context
        for d in made.docs(DataSource("local", str(SHARED_DATA)))
    }


MILL_TO_LIGHTEVAL = {
    "avg_at_n": "avg@n:n=5",
    "pass_at_k@1": "pass@k:k=1&n=5",
    "pass_at_k@2": "pass@k:k=2&n=5",
    "pass_at_k@5": "pass@k:k=5&n=5",
    "maj_at_k": "maj@n:n=5",
}
"""Mill's metric names against lighteval's, five samples per problem."""


@pytest.mark.slow
@pytest.mark.parity
@pytest.mark.skipif(not LIGHTEVAL.exists(), reason=f"no lighteval interpreter at {LIGHTEVAL}")
@needs_data
def test_aggregates_and_stderrs_equal_lightevals_to_the_last_digit(tmp_path: Path) -> None:
    """Five saved completions for each of AIME24's 30 problems, 0 to 5 of them right (so the
    per-problem values are fractions): Mill's replay run gives lighteval's value and stderr
    of avg@n, pass@k (k 1, 2, 5) and maj@n, compared with ``==``. Answers are one of two
    numbers per problem, so majority by string (lighteval) and by equivalence (Mill) agree."""
    from tests.helpers import run_mill

    completions = tmp_path / "c.jsonl"
    with completions.open("w", encoding="utf-8") as out:
        for i, (task_id, gold) in enumerate(make.rows("aime24")):
            right = i * 7 % 6
            for j in range(5):
                answer = gold if j < right else str(int(gold) + 1)
                line = {"task_id": str(task_id), "completion": f"So it is $\\boxed{{{answer}}}$."}
                out.write(json.dumps(line) + "\n")
    args = ["--task", "aime24", "--data", str(SHARED_DATA), "--completions", str(completions)]
    out = tmp_path / "lighteval.jsonl"
    cmd = module_cmd(LIGHTEVAL, "lighteval_math", *args, "--out", str(out), "--k", "1,2,5")
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, timeout=600)
    theirs = json.loads((tmp_path / "lighteval.aggregates.json").read_text())["metrics"]
    run = tmp_path / "run"
    done = run_mill(
        "task=aime24", "model=replay", f"model.path={completions}", "data=local",
        f"data.dir={SHARED_DATA}", "task.repeats=5", "metrics=[avg_at_n,pass_at_k,maj_at_k]",
        "metrics.pass_at_k.k=[1,2,5]", "metrics.maj_at_k.k=5", f"hydra.run.dir={run}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ours = json.loads((run / "results.json").read_text())["tasks"]["aime24"]["metrics"]
    for mill_name, name in MILL_TO_LIGHTEVAL.items():
        assert ours[mill_name]["value"] == theirs[name], mill_name
        assert ours[mill_name]["stderr"] == theirs[f"{name}_stderr"], mill_name
    assert 0 < theirs["avg@n:n=5"] < 1
