"""The math tasks (``tasks/mathematics.py``): lighteval 0.13's prompts, golds read at load,
bad rows refused in one line, n saved completions per problem scored by equivalence."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonlines
import pytest

pytest.importorskip("math_verify", reason="the math extra: pip install -e '.[math]'")

from mill.tasks.mathematics import AIME24, AIME25, AMC23, QWQ_INSTRUCTION, Math500  # noqa: E402

from mill.data.load import DataSource  # noqa: E402
from mill.errors import ConfigError, TaskError  # noqa: E402
from mill.runner.job import run_job  # noqa: E402
from tests.helpers import SHARED_DATA, run_mill, write_jsonl  # noqa: E402

PROBLEM = "What is $1+1$?"
MATH_ROW = {
    "problem": PROBLEM,
    "solution": "Adding, $1+1=\\boxed{2}$.",
    "answer": "2",
    "subject": "Algebra",
    "level": 1,
    "unique_id": "test/algebra/1.json",
}


def _source(tmp_path: Path, folder: str, rows: list[dict[str, Any]]) -> DataSource:
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    write_jsonl(tmp_path / folder / "test.jsonl", rows)
    return DataSource("local", str(tmp_path))


def test_prompts_and_golds_are_lightevals(tmp_path: Path) -> None:
    """The queries text for text as lighteval 0.13's prompt functions build them (its
    templates, quoted in the task module), the gold as its ``choices[0]``."""
    task = Math500(chat_template=False)
    doc = next(task.docs(_source(tmp_path, "math500", [MATH_ROW])))
    assert doc.context == (
        "Solve the following problem. The final line of your response MUST be of the "
        'following format:\n"ANSWER: $ANSWER" (without quotes) where $ANSWER is the final '
        "answer. Think step by step before answering.\n\n" + PROBLEM
    )
    assert doc.gold == "ANSWER: Adding, $1+1=\\boxed{2}$."
    aime = AIME24(chat_template=False)
    row = {"id": 60, "problem": PROBLEM, "answer": "204", "url": ""}
    doc = next(aime.docs(_source(tmp_path, "aime24", [row])))
    assert doc.context.startswith("\nSolve the following math problem efficiently and clearly.  ")
    assert "final answer is: $\\boxed{ANSWER}$. I hope it is correct' (without quotes)" in (
        doc.context
    )
    assert doc.context.endswith("answering.\n\n" + PROBLEM + "\n") and doc.gold == "204"
    assert aime.describe()["answer_check"] == {
        "checker": "math-verify", "precision": 6, "timeout_s": 5.0,
    }  # fmt: skip


def test_aime25s_local_file_is_read_as_the_hubs_rows(tmp_path: Path) -> None:
    rows = [{"prompt": PROBLEM + QWQ_INSTRUCTION, "answer": 70}, {"prompt": "2+2?", "answer": 4}]
    (tmp_path / "aime25").mkdir()
    write_jsonl(tmp_path / "aime25" / "test.jsonl", rows)
    task = AIME25(chat_template=False)
    docs = list(task.docs(DataSource("local", str(tmp_path))))
    assert [d.item["problem"] for d in docs] == [PROBLEM, "2+2?"]
    assert [d.gold for d in docs] == ["70", "4"]
    assert [task.item_id(d.item) for d in docs] == ["0", "1"]


@pytest.mark.parametrize(
    ("row", "says"),
    [
        (
            {**MATH_ROW, "solution": "We are done."},
            "task 'math500', split 'test', row 0 (unique_id 'test/algebra/1.json'): "
            "math-verify reads no answer from its gold 'ANSWER: We are done.'",
        ),
        ({**MATH_ROW, "solution": None}, "'solution'"),
        ({k: v for k, v in MATH_ROW.items() if k != "solution"}, "'solution'"),
    ],
)
def test_a_row_without_a_readable_gold_is_one_line(tmp_path: Path, row: dict, says: str) -> None:
    task = Math500(chat_template=False)
    with pytest.raises(TaskError) as err:
        task.prepare(_source(tmp_path, "math500", [row]))
    assert says in str(err.value) and "\n" not in str(err.value)
    # or skipped and counted
    skipping = Math500(chat_template=False)
    source = DataSource("local", str(tmp_path), skip_bad_rows=True)
    skipping.prepare(source)
    assert len(skipping.skipped) == 1


def test_an_answer_that_is_missing_is_one_line(tmp_path: Path) -> None:
    task = AMC23(chat_template=False)
    with pytest.raises(TaskError) as err:
        task.prepare(_source(tmp_path, "amc23", [{"id": 3, "problem": PROBLEM, "answer": None}]))
    assert "'answer'" in str(err.value) and "\n" not in str(err.value)


def test_without_math_verify_the_task_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "math_verify", None)  # as Python marks a missing module
    with pytest.raises(ConfigError) as err:
        Math500()
    assert "pip install 'mill-eval[math]'" in str(err.value) and "\n" not in str(err.value)


def _replay(tmp_path: Path, completions: dict[str, list[str]]) -> Path:
    path = tmp_path / "completions.jsonl"
    with jsonlines.open(path, "w") as out:
        for task_id, texts in completions.items():
            out.write_all({"task_id": task_id, "completion": t} for t in texts)
    return path


def test_n_saved_completions_per_problem_scored_by_equivalence(compose, tmp_path: Path) -> None:
    """The issue's command on replayed completions: pass@1 and pass@8 (unbiased), maj@8 by
    equivalence and avg@n, from each generation's verdict (recorded in the sample)."""
    rows = [
        {**MATH_ROW, "unique_id": "a"},
        {
            **MATH_ROW,
            "unique_id": "b",
            "problem": "Halve 1.",
            "solution": "So $\\boxed{\\frac{1}{2}}$.",
        },
    ]  # two problems, not one twice: a replayed answer is found by its request's prompt too
    _source(tmp_path / "data", "math500", rows)
    right_a, wrong = "Thus $\\boxed{2}$.", "Thus $\\boxed{3}$."
    half = ["$\\boxed{0.5}$", "ANSWER: 1/2", "<think>maybe \\boxed{7}</think>$\\boxed{\\frac12}$"]
    completions = {
        "a": [right_a, wrong, wrong, wrong, wrong, wrong, wrong, "<think>\\boxed{2}"],
        "b": [*half, wrong, wrong, wrong, wrong, "$\\boxed{7}$"],
    }
    cfg = compose(
        "task=math500", "model=replay", f"model.path={_replay(tmp_path, completions)}",
        "data=local", f"data.dir={tmp_path / 'data'}", "task.repeats=8",
        "+metrics=[pass_at_k,maj_at_k,avg_at_n]", "metrics.pass_at_k.k=[1,8]",
        "metrics.maj_at_k.k=8", "report.progress=never",
    )  # fmt: skip
    results = run_job(cfg, tmp_path / "run")
    with jsonlines.open(tmp_path / "run" / "samples" / "math500.jsonl") as reader:
        samples = {s["doc_id"]: s for s in reader}
    verdicts = {d: s["prediction"]["avg_at_n"]["correct"] for d, s in samples.items()}
    assert verdicts == {0: [1, 0, 0, 0, 0, 0, 0, 0], 1: [1, 1, 1, 0, 0, 0, 0, 0]}
    assert samples[0]["response"]["reasoning_unfinished"][7] is True  # its \boxed{2} not counted
    assert samples[0]["metrics"]["pass_at_k@1"] == pytest.approx(1 / 8)
    assert samples[1]["metrics"]["pass_at_k@1"] == pytest.approx(3 / 8)
    assert samples[0]["metrics"]["pass_at_k@8"] == 1.0
    # maj@8: doc 0's majority is "3" (six votes), wrong; doc 1's: 1/2 by equivalence (three
    # votes, string forms all different) against 3 (four votes)
    assert samples[0]["metrics"]["maj_at_k"] == 0.0
    assert samples[1]["metrics"]["maj_at_k"] == 0.0
    task = results.tasks["math500"]
    assert task.metrics["avg_at_n"].value == pytest.approx((1 / 8 + 3 / 8) / 2)
    assert task.metrics["avg_at_n"].n == 2  # clustered by problem: one value per problem
    assert task.generations is not None and task.generations["reasoning_unfinished"] == 1
    assert task.generations["unknown"] == 16  # saved completions: the budget is not known


def test_maj_at_k_counts_equivalent_forms_as_one_vote(compose, tmp_path: Path) -> None:
    rows = [{**MATH_ROW, "unique_id": "b", "solution": "So $\\boxed{\\frac{1}{2}}$."}]
    _source(tmp_path / "data", "math500", rows)
    votes = ["$\\boxed{0.5}$", "$\\boxed{3}$", "ANSWER: 1/2", "$\\boxed{3}$", "$\\boxed{\\frac12}$"]
    cfg = compose(
        "task=math500", "model=replay", f"model.path={_replay(tmp_path, {'b': votes})}",
        "data=local", f"data.dir={tmp_path / 'data'}", "task.repeats=5", "+metrics=[maj_at_k]",
        "metrics.maj_at_k.k=5", "report.progress=never",
    )  # fmt: skip
    results = run_job(cfg, tmp_path / "run")
    assert results.tasks["math500"].metrics["maj_at_k"].value == 1.0  # by string "3" would win


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "math500").is_dir(), reason=f"no {SHARED_DATA}/math500")
@pytest.mark.parametrize(
    ("task", "rows"), [(Math500, 500), (AIME24, 30), (AIME25, 30), (AMC23, 40)]
)
def test_every_row_of_the_shared_files_loads_with_a_readable_gold(task: Any, rows: int) -> None:
    made = task(chat_template=False)
    docs = list(made.docs(DataSource("local", str(SHARED_DATA))))
    assert len(docs) == rows and not made.skipped
    ids = [made.item_id(d.item) for d in docs]
    assert len(set(ids)) == rows


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "aime24").is_dir(), reason=f"no {SHARED_DATA}/aime24")
def test_the_issues_command_runs_on_replay(tmp_path: Path) -> None:
    """``mill task=aime24 task.repeats=8 'metrics=[pass_at_k]' 'metrics.pass_at_k.k=[1,8]'``
    on saved completions: each problem's gold answer boxed in its first completion."""
    rows = [json.loads(line) for line in (SHARED_DATA / "aime24" / "test.jsonl").open()]
    completions = {
        str(r["id"]): [f"$\\boxed{{{r['answer']}}}$"] + ["$\\boxed{1000}$"] * 7 for r in rows
    }
    done = run_mill(
        "task=aime24", "model=replay", f"model.path={_replay(tmp_path, completions)}",
        "data=local", f"data.dir={SHARED_DATA}", "task.repeats=8", "metrics=[pass_at_k]",
        "metrics.pass_at_k.k=[1,8]", f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    metrics = results["tasks"]["aime24"]["metrics"]
    assert metrics["pass_at_k@1"]["value"] == pytest.approx(1 / 8)
    assert metrics["pass_at_k@8"]["value"] == 1.0 and metrics["pass_at_k@8"]["n"] == 30
