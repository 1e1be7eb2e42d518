"""MT-Bench end to end against FastChat 0.2.36: one deterministic judge server on
127.0.0.1 (:mod:`tests.runner.judge_server`) answers both Mill's run (candidate answers and
judge calls) and FastChat's own ``gen_judgment.py`` (run as a script on Mill's answers,
its OpenAI transport pointed at the same server); every judge prompt, every parsed
judgment and the per-turn, per-category and overall scores of FastChat's
``show_result.py`` equal Mill's, in single grading and pairwise against a baseline."""

from __future__ import annotations

import argparse
import builtins
import contextlib
import io
import json
import re
import runpy
import shutil
import sys
import types
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mill.runner.job import run_job
from tests.runner.judge_server import judge_server

# fschat 0.2.36's common.py imports ``anthropic`` for its Anthropic judges at the top; this
# test's judge is an OpenAI-compatible server, so that client is never called: an empty
# module stands in for the package when it is not installed.
sys.modules.setdefault("anthropic", types.ModuleType("anthropic"))
common = pytest.importorskip("fastchat.llm_judge.common")
show_result = pytest.importorskip("fastchat.llm_judge.show_result")

pytestmark = pytest.mark.slow

DATA = Path(__file__).parents[2] / "mill/resources/data/mt_bench"
GEN_JUDGMENT = Path(common.__file__).with_name("gen_judgment.py")


def _transport(url: str, sent: list[dict[str, Any]]) -> Any:
    """FastChat's ``chat_completion_openai`` with the request sent to ``url`` (fschat
    0.2.36 calls the pre-1.0 ``openai`` module; the request is the one it builds)."""

    def chat_completion_openai(model, conv, temperature, max_tokens, api_dict=None):  # noqa: ANN001, ANN202
        body = {
            "model": model,
            "messages": conv.to_openai_api_messages(),
            "n": 1,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        sent.append(body)
        request = urllib.request.Request(
            f"{url}/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["choices"][0]["message"]["content"]

    return chat_completion_openai


def _fastchat_data(root: Path, answers: dict[int, list[str]], baseline: Path | None) -> None:
    """FastChat's ``data/mt_bench`` layout: questions, GPT-4's reference answers, the
    candidate's answers (``mill``) and the baseline's (``base``)."""
    bench = root / "data/mt_bench"
    (bench / "model_answer").mkdir(parents=True)
    (bench / "reference_answer").mkdir()
    shutil.copy(DATA / "question.jsonl", bench / "question.jsonl")
    shutil.copy(DATA / "reference_answer_gpt-4.jsonl", bench / "reference_answer/gpt-4.jsonl")
    shutil.copy(DATA / "judge_prompts.jsonl", root / "data/judge_prompts.jsonl")
    lines = [
        {"question_id": qid, "model_id": "mill", "choices": [{"index": 0, "turns": turns}]}
        for qid, turns in sorted(answers.items())
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines)
    (bench / "model_answer/mill.jsonl").write_text(text)
    if baseline is not None:
        shutil.copy(baseline, bench / "model_answer/base.jsonl")


def _gen_judgment(root: Path, url: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> list:
    """FastChat's ``gen_judgment.py`` run as a script in ``root``; the bodies it sent."""
    sent: list[dict[str, Any]] = []
    monkeypatch.chdir(root)
    monkeypatch.setattr(common, "chat_completion_openai", _transport(url, sent))
    monkeypatch.setattr(builtins, "input", lambda *_: "")
    argv = ["gen_judgment.py", "--judge-file", "data/judge_prompts.jsonl", *args]
    monkeypatch.setattr(sys, "argv", argv)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        runpy.run_path(str(GEN_JUDGMENT), run_name="__main__")
    return sent


def _show(fn: Any, **kw: Any) -> str:
    args = argparse.Namespace(bench_name="mt_bench", model_list=None, **kw)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(args)
    return out.getvalue()


def _mill(compose: Any, url: str, out: Path, *extra: str) -> tuple[Any, list[dict]]:
    cfg = compose(
        "task=mt_bench", "model=openai_chat", f"model.base_url={url}", "model.model=cand",
        "judge=openai_chat", f"judge.base_url={url}", "judge.model=gpt-4",
        "judge.num_concurrent=4", "model.num_concurrent=4", "report.progress=never",
        *extra,
    )  # fmt: skip
    results = run_job(cfg, out)
    samples = [json.loads(x) for x in (out / "samples/mt_bench.jsonl").read_text().splitlines()]
    return results, samples


def _judge_bodies(seen: list[dict[str, Any]]) -> list[str]:
    """The judge requests' conversations and settings, canonical and sorted."""
    return sorted(
        json.dumps([b["messages"], b["max_tokens"], float(b["temperature"])], sort_keys=True)
        for b in seen
        if b.get("model") == "gpt-4"
    )


def test_mt_bench_single_equals_fastchat_end_to_end(compose, tmp_path, monkeypatch) -> None:
    with judge_server() as server:
        results, samples = _mill(compose, server.url, tmp_path / "run")
        mill_bodies = _judge_bodies(server.seen)
        answers = {int(s["extra"]["id"]): s["extra"]["turns"] for s in samples}
        root = tmp_path / "fastchat"
        _fastchat_data(root, answers, None)
        fastchat_sent = _gen_judgment(root, server.url, monkeypatch, "--model-list", "mill")
    assert len(mill_bodies) == 160
    # the same 160 judge prompts, byte for byte (system and user), at FastChat's settings
    assert mill_bodies == _judge_bodies(fastchat_sent)
    judgments = root / "data/mt_bench/model_judgment/gpt-4_single.jsonl"
    theirs = [json.loads(x) for x in judgments.read_text().splitlines()]
    ours = {
        (int(s["extra"]["id"]), int(r["key"][1:])): r["judgment"]
        for s in samples
        for r in s["extra"]["judgments"]["mt_bench_score"]
    }
    assert {
        (x["question_id"], x["turn"]): (None if x["score"] == -1 else x["score"]) for x in theirs
    } == ours  # noqa: E501
    row = results.tasks["mt_bench"].metrics["mt_bench_score"]
    assert row.details["n_invalid"] == sum(x["score"] == -1 for x in theirs) > 0
    text = _show(show_result.display_result_single, input_file=str(judgments), judge_model="gpt-4")
    found = {}
    for section, key in (("First turn", "turn_1"), ("Second turn", "turn_2"), ("Average", "all")):
        block = text.split(f"########## {section} ##########")[1]
        found[key] = float(re.search(r"^mill\s+(?:\d\s+)?(\S+)$", block, re.M).group(1))
    mill = {"turn_1": row.details["turn_1"], "turn_2": row.details["turn_2"], "all": row.value}
    assert found == pytest.approx(mill, abs=5e-7)  # pandas prints 6 decimals
    print(f"\nsingle: Mill {mill} | FastChat {found} | invalid {row.details['n_invalid']}")
    # per category: FastChat's judgments grouped by the question's category
    category = {
        json.loads(x)["question_id"]: json.loads(x)["category"]
        for x in (DATA / "question.jsonl").read_text().splitlines()
    }
    subjects = results.tasks["mt_bench"].subjects
    for name in set(category.values()):
        grades = [
            x["score"] for x in theirs if category[x["question_id"]] == name and x["score"] != -1
        ]
        assert subjects[name]["mt_bench_score"].value == pytest.approx(
            sum(grades) / len(grades), abs=1e-12
        )


def test_mt_bench_pairwise_equals_fastchat_end_to_end(compose, tmp_path, monkeypatch) -> None:
    questions = [json.loads(x) for x in (DATA / "question.jsonl").read_text().splitlines()]
    baseline = tmp_path / "base.jsonl"
    baseline.write_text(
        "".join(
            json.dumps(
                {
                    "question_id": q["question_id"],
                    "model_id": "base",
                    "choices": [
                        {"index": 0, "turns": [f"Base {q['question_id']}.{k}" for k in (1, 2)]}
                    ],  # noqa: E501
                }
            )
            + "\n"
            for q in questions
        )
    )
    with judge_server() as server:
        results, samples = _mill(
            compose, server.url, tmp_path / "run", "+metrics=[win_rate]",
            f"task.baseline={baseline}",
        )  # fmt: skip
        mill_bodies = _judge_bodies(server.seen)
        answers = {int(s["extra"]["id"]): s["extra"]["turns"] for s in samples}
        root = tmp_path / "fastchat"
        _fastchat_data(root, answers, baseline)
        fastchat_sent = _gen_judgment(
            root, server.url, monkeypatch, "--mode", "pairwise-baseline",
            "--baseline-model", "base", "--model-list", "mill",
        )  # fmt: skip
    assert len(mill_bodies) == 320
    assert mill_bodies == _judge_bodies(fastchat_sent)  # pair-math-v1 with references too
    judgments = root / "data/mt_bench/model_judgment/gpt-4_pair.jsonl"
    theirs = [json.loads(x) for x in judgments.read_text().splitlines()]
    verdict = {"model_1": "A", "model_2": "B", "tie": "C", "error": None}
    swapped = {"model_1": "B", "model_2": "A", "tie": "C", "error": None}
    ours = {
        (int(s["extra"]["id"]), r["key"]): r["judgment"]
        for s in samples
        for r in s["extra"]["judgments"]["win_rate"]
    }
    for x in theirs:
        q, t = x["question_id"], x["turn"]
        assert ours[(q, f"t{t}/ab")] == verdict[x["g1_winner"]]
        assert ours[(q, f"t{t}/ba")] == swapped[x["g2_winner"]]
    assert any("[[B]]" in x["g1_judgment"] and x["g1_winner"] == "model_1" for x in theirs)
    text = _show(
        show_result.display_result_pairwise,
        input_file=str(judgments), judge_model="gpt-4", baseline_model="base",
    )  # fmt: skip
    line = next(x for x in text.splitlines() if x.startswith("mill"))
    win, loss, tie, _, _, adjusted = (float(v) for v in line.split()[1:])
    row = results.tasks["mt_bench"].metrics["win_rate"]
    assert (row.details["wins"], row.details["losses"], row.details["ties"]) == (win, loss, tie)
    assert row.value == pytest.approx(adjusted, abs=5e-7)
    print(f"\npairwise: Mill {row.value:.6f} (w/l/t {win}/{loss}/{tie}) | FastChat {adjusted}")
