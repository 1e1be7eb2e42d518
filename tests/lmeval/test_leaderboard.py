"""Open LLM Leaderboard v2 normalised scores (pure arithmetic, no lm-eval needed)."""

from __future__ import annotations

import math

import pytest

from mill.lm_eval.leaderboard import TASKS, as_group_rows, leaderboard_scores, normalise


def test_normalise_formula() -> None:
    assert normalise(0.25, 0.25) == 0.0
    assert normalise(1.0, 0.25) == 100.0
    assert normalise(0.1, 0.25) == 0.0  # below chance clips at 0
    assert normalise(0.625, 0.25) == pytest.approx(50.0)
    assert normalise(0.3, 0.0) == pytest.approx(30.0)  # MATH / IFEval: lower bound 0
    with pytest.raises(ValueError):
        normalise(0.5, 1.0)


def _row(value: float, stderr: float = 0.01) -> dict[str, float]:
    return {"value": value, "stderr": stderr}


def test_scores_per_task_and_overall() -> None:
    subtasks = {
        "leaderboard_bbh": ["bbh_a", "bbh_b"],
        "leaderboard_gpqa": ["gpqa_main"],
        "leaderboard_math_hard": ["math_algebra"],
        "leaderboard_ifeval": ["leaderboard_ifeval"],
        "leaderboard_musr": ["musr_mm"],
        "leaderboard_mmlu_pro": ["leaderboard_mmlu_pro"],
    }
    rows = {
        "bbh_a": {"acc_norm,none": _row(0.75)},  # 2 choices: (0.75-0.5)/0.5 = 50
        "bbh_b": {"acc_norm,none": _row(0.1)},  # 5 choices: below chance -> 0
        "gpqa_main": {"acc_norm,none": _row(0.4)},  # 4 choices: 20
        "math_algebra": {"exact_match,none": _row(0.05)},  # 5
        "leaderboard_ifeval": {
            "prompt_level_strict_acc,none": _row(0.2),
            "inst_level_strict_acc,none": _row(0.4),
        },  # mean 0.3 -> 30
        "musr_mm": {"acc_norm,none": _row(0.5)},  # 2 choices: 0
        "leaderboard_mmlu_pro": {"acc,none": _row(0.28)},  # 10 choices: 20
    }
    baselines = {"bbh_a": 0.5, "bbh_b": 0.2, "gpqa_main": 0.25, "musr_mm": 0.5}
    baselines["leaderboard_mmlu_pro"] = 0.1
    baselines["math_algebra"] = 0.5  # ignored: generative tasks have lower bound 0
    out = leaderboard_scores(subtasks, rows, baselines)
    scores = {k: v["score"] for k, v in out["tasks"].items()}
    assert scores == pytest.approx(
        {
            "leaderboard_bbh": 25.0,
            "leaderboard_gpqa": 20.0,
            "leaderboard_math_hard": 5.0,
            "leaderboard_ifeval": 30.0,
            "leaderboard_musr": 0.0,
            "leaderboard_mmlu_pro": 20.0,
        }
    )
    assert out["overall"]["score"] == pytest.approx(100.0 / 6)
    assert out["overall"]["n"] == len(TASKS) == 6
    bbh_a = out["tasks"]["leaderboard_bbh"]["subtasks"]["bbh_a"]
    assert bbh_a["stderr"] == pytest.approx(0.01 * 100 / 0.5)
    group = as_group_rows(out)
    assert group["metrics"]["overall (normalised)"]["macro"]["value"] == pytest.approx(100 / 6)
    assert "normalization" in group["source"]


def test_partial_suite_has_no_overall() -> None:
    out = leaderboard_scores(
        {"leaderboard_bbh": ["a"]}, {"a": {"acc_norm,none": _row(0.5, None)}}, {"a": 1 / 3}
    )
    assert "overall" not in out
    assert out["tasks"]["leaderboard_bbh"]["score"] == pytest.approx(25.0)
    assert out["tasks"]["leaderboard_bbh"]["stderr"] is None
    assert not math.isnan(out["tasks"]["leaderboard_bbh"]["score"])
