"""The bridge and Mill's engine against lm-evaluation-harness 0.4.13 itself (dev only:
``pytest -m parity tests/lmeval``). Both sides run here: lm-eval's ``simple_evaluate`` with
its ``hf`` model, and ``mill task=lm_eval`` (or lm-eval with ``MillLM``), on the same model
and local files. Per request |delta log-likelihood| <= 1e-4 (relative for whole-document
rolling sums), identical is_greedy, generations, filtered answers and per-doc metrics;
task and group values equal (within 1e-4 relative where a per-doc value is continuous).
See benchmarks/lmeval_bridge_parity.py and docs/lm-eval.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lmeval.conftest import parity_script, skip_without_lm_eval, skip_without_shared

pytestmark = [pytest.mark.parity, skip_without_lm_eval, skip_without_shared]

BRIDGE = {
    "arc_easy_mc": 8,  # multiple choice + !function process_docs
    "arc_group": 4,  # group with aggregate_metric_list (micro acc, macro acc_norm)
    "gsm8k": 3,  # generate_until with strict-match and flexible-extract filters
    "wikitext_rolling": 3,  # loglikelihood_rolling
    "leaderboard_bbh": 2,  # BBH from the original BIG-Bench-Hard files
}


def _check(report: dict) -> None:
    problems = [f"{r['task']}: {p}" for r in report["tasks"] for p in r["problems"]]
    assert not problems, problems[:10]
    assert report["ok"]
    for row in report["tasks"]:
        assert row["docs"] > 0 and row["requests"] > 0
        if not row["task"].startswith("mill_wikitext"):  # rolling sums: relative, checked above
            assert row["max_abs_dll"] <= 1e-4, row
        for key, m in row["metrics"].items():
            assert m["lm_eval"] is not None, key


@pytest.mark.parametrize("workload", sorted(BRIDGE))
def test_bridge_equals_lm_eval(workload: str, tmp_path: Path) -> None:
    script = parity_script()
    report = script.run([workload], "stories260k", BRIDGE[workload], None, 8, tmp_path)
    _check(report)
    if workload == "gsm8k":
        assert sum(r["generations"] for r in report["tasks"]) == BRIDGE[workload]
    if workload == "arc_group":
        assert {g["kind"] for g in report["groups"]} == {"micro", "macro"}


@pytest.mark.parametrize("workload", ["arc_easy_mc", "gsm8k"])
def test_mill_engine_in_lm_eval_equals_hf(workload: str, tmp_path: Path) -> None:
    script = parity_script()
    report = script.run([workload], "stories260k", 4, None, 8, tmp_path, engine=True)
    _check(report)


def _chat_model(folder: Path) -> Path:
    """stories260k with a chat template on its tokenizer."""
    import shutil
    from importlib import resources

    from tests.helpers import make_chat_tokenizer

    source = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))
    shutil.copytree(source, folder)
    return make_chat_tokenizer(folder)


@pytest.mark.parametrize("multiturn", [True, False])
def test_bridge_with_chat_template_equals_lm_eval(multiturn: bool, tmp_path: Path) -> None:
    """``task.chat_template``/``fewshot_as_multiturn``/``system_prompt`` against lm-eval's
    ``apply_chat_template``/``fewshot_as_multiturn``/``system_instruction``."""
    script = parity_script()
    model = _chat_model(tmp_path / "model")
    chat = script.chat_settings(True, multiturn, "Answer the question.")
    report = script.run(["arc_easy_mc"], str(model), 3, 2, 8, tmp_path, chat=chat)
    _check(report)
    lines = (tmp_path / "mill_run" / "samples" / "mill_arc_easy.jsonl").read_text().splitlines()
    context = json.loads(lines[0])["extra"]["lm_eval"]["arguments"][0][0]
    # the template ran: the system prompt, then 2 shots + the question as user turns (each
    # shot's answer an assistant turn) or all in one user turn
    assert context.startswith("<s><|system|>\nAnswer the question.<|end|>\n")
    assert context.count("<|user|>") == (3 if multiturn else 1)
    assert context.count("<|assistant|>") == (3 if multiturn else 1)


def test_mill_engine_in_lm_eval_with_chat_template_equals_hf(tmp_path: Path) -> None:
    script = parity_script()
    model = _chat_model(tmp_path / "model")
    chat = script.chat_settings(True, True, None)
    report = script.run(["arc_easy_mc"], str(model), 3, 2, 8, tmp_path, chat=chat, engine=True)
    _check(report)
