"""MT-Bench on the fake model with a scripted judge: FastChat's own aggregation
(``fastchat/llm_judge/show_result.py``, fschat 0.2.36, a dev extra) of Mill's
``model_judgment`` file gives the same first-turn, second-turn and overall scores as
Mill's results.json."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from mill.runner.job import run_job

show_result = pytest.importorskip("fastchat.llm_judge.show_result")

QUESTIONS = Path(__file__).parents[2] / "mill/resources/data/mt_bench/question.jsonl"


def _script() -> dict[str, str]:
    """A judge reply per (question, turn): turn-2 keys first (a turn-2 prompt repeats the
    first question); grades vary, every seventh judgment does not parse."""
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    replies = {}
    for turn in (1, 0):
        for i, row in enumerate(rows):
            n = 2 * i + turn
            replies[row["turns"][turn]] = "no verdict" if n % 7 == 3 else f"[[{1 + n * 5 % 10}]]"
    return replies


def _fastchat_scores(path: Path) -> dict[str, float]:
    args = argparse.Namespace(
        input_file=str(path), bench_name="mt_bench", model_list=None, judge_model="fake"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show_result.display_result_single(args)
    text = out.getvalue()
    found = {}
    for section, key in (("First turn", "turn_1"), ("Second turn", "turn_2"), ("Average", "all")):
        block = text.split(f"########## {section} ##########")[1]
        found[key] = float(re.search(r"^fake\s+(?:\d\s+)?(\S+)$", block, re.M).group(1))
    return found


def test_fastchats_show_result_gives_mills_mt_bench_scores(compose, tmp_path) -> None:
    cfg = compose(
        "task=mt_bench", "model=fake", "judge=fake", "judge.max_invalid=1.0",
        "report.progress=never",
    )  # fmt: skip
    cfg.judge.replies = _script()
    results = run_job(cfg, tmp_path / "run")
    row = results.tasks["mt_bench"].metrics["mt_bench_score"]
    assert row.n == 80 and row.details["n_invalid"] == 23  # n % 7 == 3 for n < 160
    path = tmp_path / "run/model_judgment/mt_bench_mt_bench_score.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 160 and {x["model"] for x in lines} == {"fake"}
    fastchat = _fastchat_scores(path)
    mill = {"turn_1": row.details["turn_1"], "turn_2": row.details["turn_2"], "all": row.value}
    assert fastchat == pytest.approx(mill, abs=5e-7)  # pandas prints 6 decimals
    # reference-guided categories used the math rubrics, as FastChat's gen_judgment.py
    math = [x for x in lines if x["question_id"] in range(111, 121)]
    assert {tuple(x["judge"]) for x in math} == {
        ("fake", "single-math-v1"),
        ("fake", "single-math-v1-multi-turn"),
    }
