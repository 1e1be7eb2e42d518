"""A served judge: stories260k behind llama.cpp's ``llama-server`` through
``judge=openai_completions`` with token-id prompts, against the same judge in process (the
HF backend). Its replies are nonsense (``judge.max_invalid=1.0``): the tests prove that both
backends send the same judge prompts token for token, that served judgments go through the
response cache under the served judge's identity, the invalid-reply count, and that a
judging phase killed by SIGKILL resumes without sending any judge call twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import ok, samples
from tests.support.servers import SERVED_NAME, STORIES, ServerProcess

pytestmark = pytest.mark.slow

COMMON = (
    "task=judged",  # the bundled example: 5 answers, 5 judge calls
    "model=fake",
    "judge.max_invalid=1.0",
    "judge.generation.max_gen_toks=8",
    "judge.cache=run",  # the judge's calls in the run's response cache, read back below
    "report.progress=never",
)


def _judge_prompts(cache: Path, backend: str) -> dict[str, list[int]]:
    """request content hash -> the judge's input token ids, from the run's response cache."""
    out: dict[str, list[int]] = {}
    for path in cache.glob("responses-*.sqlite"):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            keys = [
                key
                for key, identity in conn.execute("SELECT model, identity FROM models")
                if json.loads(identity).get("backend") == backend
            ]
            for key in keys:
                for request, blob in conn.execute(
                    "SELECT request, response FROM responses WHERE model = ?", (key,)
                ):
                    out[request] = json.loads(zlib.decompress(blob))["input_tokens"]
        finally:
            conn.close()
    return out


def test_served_judge_sends_the_hf_judges_prompts_token_for_token(
    native_llama_server: ServerProcess, tmp_path: Path
) -> None:
    hf = run_mill(
        *COMMON, "judge=stories260k", "judge.max_length=510", f"hydra.run.dir={tmp_path / 'hf'}"
    )
    ok(hf)
    served_args = (
        "judge=openai_completions",
        f"judge.base_url={native_llama_server.base_url}",
        f"judge.model={SERVED_NAME}",
        f"judge.tokenizer={STORIES}",
        "judge.max_length=510",
        "judge.prompt_ids=true",
        "judge.num_concurrent=4",
    )
    served = run_mill(*COMMON, *served_args, f"hydra.run.dir={tmp_path / 'served'}")
    ok(served)
    hf_prompts = _judge_prompts(tmp_path / "hf" / "cache", "hf")
    served_prompts = _judge_prompts(tmp_path / "served" / "cache", "openai_completions")
    assert len(hf_prompts) == len(served_prompts) == 5
    assert served_prompts == hf_prompts  # same requests (content hashes), same token ids
    manifest = json.loads((tmp_path / "served" / "manifest.json").read_text())
    judge = manifest["judge"]
    assert judge["identity"]["base_url"] == native_llama_server.base_url
    assert judge["settings"]["num_concurrent"] == 4
    assert judge["cache"]["computed"] == 5
    results = json.loads((tmp_path / "served" / "results.json").read_text())
    row = results["tasks"]["judged"]["metrics"]["judge_score"]
    assert row["details"]["n_invalid"] == judge["judgments"]["invalid"]
    # the same judging again on that cache: no call reaches the server
    again = run_mill(
        *COMMON, *served_args, f"runner.cache={tmp_path / 'served' / 'cache'}",
        f"hydra.run.dir={tmp_path / 'again'}",
    )  # fmt: skip
    ok(again)
    second = json.loads((tmp_path / "again" / "manifest.json").read_text())["judge"]["cache"]
    assert (second["hits"], second["computed"]) == (5, 0)


def _served_judge(base_url: str) -> tuple[str, ...]:
    return (
        "judge=openai_completions",
        f"judge.base_url={base_url}",
        f"judge.model={SERVED_NAME}",
        f"judge.tokenizer={STORIES}",
        "judge.max_length=510",
        "judge.prompt_ids=true",
        "judge.num_concurrent=1",  # one call at a time: replies equal the reference run's
    )


def _judgments(run: Path) -> dict[int, dict]:
    return {i: row["extra"]["judgments"] for i, row in samples(run, "judged").items()}


ANSWERED_BEFORE_KILL = 3
"""Judge calls the server answers before the proxy holds the next one; the bundled
questions have 2 + 2 + 1 turns, so some doc has answered and unanswered judge calls when
the kill lands (its answered reply must survive the kill)."""


def test_judging_killed_by_sigkill_resumes_without_a_repeated_judge_call(
    native_llama_server: ServerProcess, tmp_path: Path
) -> None:
    reference = tmp_path / "reference"  # the uninterrupted run, straight to the server
    ok(
        run_mill(
            *COMMON, *_served_judge(native_llama_server.base_url), f"hydra.run.dir={reference}"
        )
    )
    run = tmp_path / "run"
    with FaultProxy(native_llama_server.root_url) as proxy:
        args = (*COMMON, *_served_judge(proxy.base_url), f"hydra.run.dir={run}")
        # the first calls pass, the next one waits in the proxy, never reaching the server
        proxy.hold(10, after=ANSWERED_BEFORE_KILL, paths=("/v1/completions",))
        exe = Path(sys.executable).with_name("mill")
        proc = subprocess.Popen(
            [str(exe), *args], env={**os.environ, "CI": "1"},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while proxy.holding < 1:
                assert proc.poll() is None, proc.communicate()[1][-3000:]
                assert time.monotonic() < deadline, f"no judge call held in time: {proxy.log}"
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)  # mid-phase: calls answered, one in flight
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL
        proxy.release()  # the held call's client is dead: the proxy drops it
        deadline = time.monotonic() + 30
        while proxy.holding:
            assert time.monotonic() < deadline, proxy.log
            time.sleep(0.05)
        assert json.loads((run / "manifest.json").read_text())["status"] != "succeeded"
        assert not (run / "results.json").exists()
        resumed = run_mill(*args, "runner.resume=true")
        ok(resumed)
        outcomes = [o for _, path, o in proxy.log if path == "/v1/completions"]
        calls = [body for path, body in proxy.bodies if path == "/v1/completions"]
    assert outcomes.count("abandoned") == 1, outcomes
    # every judge call the server saw, once each: keyed by the whole request body
    reached = Counter(
        json.dumps(body, sort_keys=True)
        for body, outcome in zip(calls, outcomes, strict=True)
        if outcome != "abandoned"
    )
    assert sorted(reached.values()) == [1] * 5, reached.most_common(2)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["attempts"] == 2
    cache = manifest["judge"]["cache"]
    # every reply received before the kill was kept: the resumed run read them back
    assert (cache["hits"], cache["computed"]) == (ANSWERED_BEFORE_KILL, 5 - ANSWERED_BEFORE_KILL)
    # the same results as the uninterrupted run: scores, and every judge reply per sample
    want = json.loads((reference / "results.json").read_text())
    got = json.loads((run / "results.json").read_text())
    assert got["tasks"] == want["tasks"]
    assert _judgments(run) == _judgments(reference)
    assert (
        manifest["judge"]["judgments"]
        == json.loads((reference / "manifest.json").read_text())["judge"]["judgments"]
    )
