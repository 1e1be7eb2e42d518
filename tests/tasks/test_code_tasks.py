"""Code tasks: prompts, targets and programs of HumanEval and MBPP (rows of our own in MBPP's
schema, test_setup_code included), code taken from chat answers, and the evaluator's
execution step (verdicts into metrics and sample records) on the fake model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mill.tasks.humaneval import HumanEval, HumanEvalInstruct
from mill.tasks.mbpp import MBPP, MBPPInstruct

from mill.data.load import DataSource, bundled_data_dir
from mill.errors import ConfigError
from mill.evaluator import evaluate_tasks
from mill.execution import Verdict
from mill.metrics.config import build_metric, metric_config
from mill.metrics.repeats import PassAtK
from mill.model.fake import FakeLM
from mill.progress import NullProgress
from mill.task.code import fenced_code
from tests.helpers import write_jsonl

BUNDLED = DataSource("bundled")
# the sample shipped in the package (the rows `HumanEval` reads from `data=bundled`)
HUMANEVAL = bundled_data_dir() / "humaneval" / "HumanEval.jsonl"

# MBPP rows of our own, in the hub schema of google-research-datasets/mbpp (full)
MBPP_ROWS = [
    {
        "task_id": 11,
        "text": "Write a function to add two numbers.",
        "code": "def add(a, b):\r\n  return a + b",
        "test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(-1, 1) == 0"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 12,
        "text": "Write a function to count the keys of the global table.",
        "code": "def count_keys():\r\n  return len(TABLE)",
        "test_list": [
            "assert count_keys() == 2",
            "assert TABLE['a'] == 1",
            "assert count_keys() + 1 == 3",
        ],
        "test_setup_code": "TABLE = {'a': 1, 'b': 2}",
        "challenge_test_list": [],
    },
]


def _mbpp(tmp_path: Path, cls: type = MBPP, **kwargs: Any) -> Any:
    path = write_jsonl(tmp_path / "test.jsonl", MBPP_ROWS)
    return cls(
        num_fewshot=3,
        fewshot_sampler="first_n",
        dataset={"data_files": {"test": str(path)}},
        **kwargs,
    )


def test_humaneval_prompt_target_and_program() -> None:
    task = HumanEval(limit=2)
    docs = list(task.docs(BUNDLED))
    row = json.loads(HUMANEVAL.read_text().splitlines()[0])
    assert docs[0].context == row["prompt"]
    assert docs[0].gold == row["test"] + "\ncheck(has_close_elements)"
    (request,) = task.requests(docs[0])
    assert request.item_id == "HumanEval/0"
    assert request.generation is not None
    assert request.generation.until == ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
    assert request.generation.max_gen_toks == 1024 and not request.generation.do_sample
    program = task.program(row, row["canonical_solution"])
    assert program == (
        row["prompt"] + row["canonical_solution"] + "\n" + row["test"] + "\n"
        "check(has_close_elements)"
    )


def test_humaneval_instruct_continues_the_opened_block() -> None:
    task = HumanEvalInstruct(limit=1)
    (doc,) = task.docs(BUNDLED)
    prompt = doc.item["prompt"]
    assert doc.context == (
        "Write a solution to the following problem and make sure that it passes the tests:\n"
        f"```python\n{prompt}\n```\n"
        f"Here is the completed function:\n```python\n{prompt}\n"
    )
    body = "    return True\n"
    # the answer continues the block: its code runs to the closing fence
    assert task.program(doc.item, body + "```\nExplanation.").startswith(prompt + body + "\n")
    # a model that opened its own block: the block's content, not lm-eval's empty prefix
    own = f"```python\ndef has_close_elements(numbers, threshold):\n{body}```"
    assert task.code(own) == f"def has_close_elements(numbers, threshold):\n{body}"
    # no fence at all: the whole answer
    assert task.code(body) == body


@pytest.mark.parametrize(
    ("answer", "opened", "code"),
    [
        ("x = 1\n```\ntext", True, "x = 1\n"),
        ("x = 1\n", True, "x = 1\n"),
        ("  ```py\nx = 1\n```", True, "x = 1\n"),
        ("Here:\n```python\nx = 1\n```\n```python\ny = 2\n```", False, "x = 1\n"),
        ("Here:\n```\nx = 1\n", False, "x = 1\n"),  # unclosed: to the end
        ("x = 1", False, "x = 1"),
    ],
)
def test_fenced_code(answer: str, opened: bool, code: str) -> None:
    assert fenced_code(answer, opened) == code


def test_mbpp_prompt_is_the_papers_three_shot(tmp_path: Path) -> None:
    task = _mbpp(tmp_path)
    docs = list(task.docs(DataSource("hub")))
    shot = (
        "You are an expert Python programmer, and here is your task: Write a function to "
        "find the similar elements from the given two tuple lists. Your code should pass "
        "these tests:\n\nassert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)\n"
    )
    assert docs[0].context.startswith(shot)
    assert docs[0].context.count("[DONE]\n\n") == 3
    assert docs[0].context.endswith(
        "You are an expert Python programmer, and here is your task: Write a function to add "
        "two numbers. Your code should pass these tests:\n\nassert add(1, 2) == 3\n"
        "assert add(0, 0) == 0\nassert add(-1, 1) == 0\n[BEGIN]\n"
    )
    (request,) = task.requests(docs[0])
    assert request.item_id == "Mbpp/11" and request.generation is not None
    assert request.generation.until == ("[DONE]",)


def test_mbpp_program_runs_test_setup_code_first(tmp_path: Path) -> None:
    task = _mbpp(tmp_path)
    plain, with_setup = (d.item for d in task.docs(DataSource("hub")))
    # no setup code: lm-eval's code_eval program, completion + "\n" + tests
    assert task.program(plain, "def add(a, b):\n  return a + b") == (
        "def add(a, b):\n  return a + b\nassert add(1, 2) == 3\nassert add(0, 0) == 0\n"
        "assert add(-1, 1) == 0"
    )
    program = task.program(with_setup, "def count_keys():\n  return len(TABLE)")
    assert program.startswith("TABLE = {'a': 1, 'b': 2}\ndef count_keys():")
    namespace: dict[str, Any] = {}
    exec(compile(program, "<mbpp>", "exec"), namespace)  # our own row: the setup is needed


def test_mbpp_instruct_extracts_the_block(tmp_path: Path) -> None:
    task = _mbpp(tmp_path, MBPPInstruct)
    doc = next(iter(task.docs(DataSource("hub"))))
    assert doc.context.endswith("assert add(-1, 1) == 0\n```python\n")
    assert "\n```python\ndef similar_elements" in doc.context
    program = task.program(doc.item, "def add(a, b):\n  return a + b\n```\nDone.")
    assert program.startswith("def add(a, b):\n  return a + b\n\nassert add(1, 2) == 3")


def _verdicts_by_source(programs: list[str], on_verdict: Any) -> list[Verdict]:
    """An executor for the fast tier (no processes): a program passes when it holds the
    marker the fake model was told to write. The sandbox itself is tested in
    tests/execution and end to end in test_code_e2e.py."""
    out = []
    for index, program in enumerate(programs):
        verdict = (
            Verdict("passed", duration_s=0.1)
            if "PASS" in program
            else Verdict("failed", "AssertionError", 0.2, "Traceback ...")
        )
        on_verdict(index, verdict)
        out.append(verdict)
    return out


def test_pipeline_scores_from_verdicts_and_records_them(tmp_path: Path) -> None:
    task = HumanEval(limit=3)
    metrics = {task.name: [build_metric("pass_at_k", metric_config("pass_at_k"), [])]}
    records: list[Any] = []
    programs: list[str] = []

    def execute(batch: list[str], on_verdict: Any) -> list[Verdict]:
        programs.extend(batch)
        return _verdicts_by_source(batch, on_verdict)

    results = evaluate_tasks(
        [task], metrics, FakeLM(answer="    return 1  # PASS"), BUNDLED, records.append,
        NullProgress(), execute=execute,
    )  # fmt: skip
    assert len(programs) == 3 and all(p.endswith(")") for p in programs)
    assert results["humaneval"].metrics["pass_at_k"]["value"] == 1.0
    records.sort(key=lambda r: r.doc_id)
    assert records[0].execution == [
        {"status": "passed", "message": "", "duration_s": 0.1, "output_tail": ""}
    ]
    assert records[0].to_json()["execution"][0]["status"] == "passed"
    failing: list[Any] = []
    results = evaluate_tasks(
        [HumanEval(limit=2)], metrics, FakeLM(answer="    return 0"), BUNDLED,
        failing.append, NullProgress(), execute=_verdicts_by_source,
    )  # fmt: skip
    assert results["humaneval"].metrics["pass_at_k"]["value"] == 0.0
    assert failing[0].execution[0]["message"] == "AssertionError"


def test_pass_at_k_list_over_sampled_repeats() -> None:
    task = HumanEval(limit=2, repeats=4, generation={"do_sample": True, "temperature": 0.8})
    node = metric_config("pass_at_k").copy()
    node.k = [1, 2]
    parts = build_metric("pass_at_k", node, []).parts()
    assert [m.name for m in parts] == ["pass_at_k@1", "pass_at_k@2"]
    seen = iter(range(1000))

    def execute(batch: list[str], on_verdict: Any) -> list[Verdict]:
        # docs' programs arrive in repeat order; pass one of every four
        out = [Verdict("passed" if next(seen) % 4 == 0 else "failed") for _ in batch]
        for i, v in enumerate(out):
            on_verdict(i, v)
        return out

    results = evaluate_tasks(
        [task], {task.name: parts}, FakeLM(), BUNDLED, lambda r: None, NullProgress(),
        execute=execute,
    )  # fmt: skip
    metrics = results["humaneval"].metrics
    assert metrics["pass_at_k@1"]["value"] == pytest.approx(0.25)  # n=4, c=1: 1/4
    assert metrics["pass_at_k@2"]["value"] == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert metrics["pass_at_k@2"]["stderr"] == 0.0


def test_repeats_below_the_largest_k_is_refused_before_the_model() -> None:
    task = HumanEval(repeats=2, generation={"do_sample": True, "temperature": 0.8})
    problem = PassAtK(k=[1, 5]).check_task(task)
    assert problem is not None and "task.repeats >= 5" in problem


def test_executing_task_needs_an_executor() -> None:
    task = HumanEval(limit=1)
    metrics = {task.name: [PassAtK()]}
    with pytest.raises(ConfigError, match="runs programs"):
        evaluate_tasks([task], metrics, FakeLM(), BUNDLED, lambda r: None, NullProgress())


@pytest.mark.parametrize(
    ("answer", "leading", "first"),
    [
        # prose before the model's own block: lm-eval (leading) takes the prose
        (
            "Sure! Here is the solution: ```python\nx = 1\n```",
            "Sure! Here is the solution: ",
            "x = 1\n",
        ),  # noqa: E501
        ("Sure!\n```py\nx = 1\n```\n```python\ny = 2\n```", "Sure!\n", "x = 1\n"),
        # the answer continues the opened block: its closing fence has no tag, both agree
        ("x = 1\n```\nExplanation.", "x = 1\n", "x = 1\n"),
        ("x = 1\n```\nOr:\n```python\ny = 2\n```", "x = 1\n", "y = 2\n"),
        ("x = 1\n", "x = 1\n", "x = 1\n"),
    ],
)
def test_code_block_leading_is_lm_evals_and_first_takes_the_first_tagged_block(
    answer: str, leading: str, first: str
) -> None:
    assert fenced_code(answer, True) == fenced_code(answer, True, "leading") == leading
    assert fenced_code(answer, True, "first") == first


def test_humaneval_instruct_code_block_setting() -> None:
    prose = "Sure! Here is the solution: ```python\n    return True\n```"
    assert HumanEvalInstruct(limit=1).code(prose) == "Sure! Here is the solution: "
    task = HumanEvalInstruct(limit=1, code_block="first")
    assert task.code(prose) == "    return True\n"
    assert task.describe()["code_block"] == "first"
    with pytest.raises(
        ConfigError, match=r"^task\.code_block='last' is unknown: give one of leading or first"
    ) as err:
        HumanEvalInstruct(limit=1, code_block="last")
    assert "\n" not in str(err.value)
