"""Faults between Mill and a real llama.cpp server: 429/500 for a while are retried and the run
succeeds; a server killed mid-run gives one line and exit 2, and ``runner.resume=true``
completes the folder after the server is back, sending only the missing requests. A server
that lies or stalls (the fault proxy rewrites, pads or trickles its real answers) ends the
run with one line naming the request and the server, exit 2 and no results.json: a
log-probability above 0 or not a number, fewer or more tokens than the prompt has, a body
over ``model.max_response_mb``, an answer slower than ``model.timeout_s`` in all."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import mill_command, run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import completions_args, error_lines
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow


def _api(base_url: str, *extra: str) -> list[str]:
    # llama-cpp-python takes text prompts (no probe request)
    return completions_args(base_url, "model.prompt_ids=false", "model.backoff_s=0.2", *extra)


def test_429_and_500_for_a_while_are_retried_and_the_run_succeeds(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    with FaultProxy(llama_server.root_url) as proxy:
        proxy.fail(2, status=429, retry_after=1, paths=("/v1/completions",))
        proxy.fail(3, status=500, paths=("/v1/completions",))
        proc = run_mill(
            "task=arc_easy",
            "task.limit=5",
            *_api(proxy.base_url, "model.max_retries=6"),
            f"hydra.run.dir={tmp_path / 'run'}",
        )
        counts = proxy.counts()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert counts["faulted"] == 5
    usage = json.loads((tmp_path / "run" / "results.json").read_text())["usage"]["arc_easy"]
    # every request answered once; the faulted attempts were retried, not counted twice
    assert usage["requests"] == 20
    assert counts["forwarded"] == 20 + 1  # + GET /models


def _committed(run: Path) -> int:
    total = 0
    for path in (run / "cache").glob("responses-*.sqlite"):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            total += conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        except sqlite3.Error:
            pass
        finally:
            conn.close()
    return total


def test_server_killed_mid_run_then_resume_sends_only_missing_requests(
    start_llama_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = start_llama_server()
    run = tmp_path / "run"
    args = [
        "task=arc_easy",
        "task.limit=40",
        *_api(server.base_url, "model.max_retries=2"),
        f"hydra.run.dir={run}",
    ]
    proc = subprocess.Popen(
        [*mill_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 240
        while _committed(run) < 30:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no responses committed in time"
            time.sleep(0.1)
        server.kill()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, stderr[-3000:]
    lines = error_lines(stderr)
    assert len(lines) == 1 and f"model.base_url={server.base_url}" in lines[0], stderr[-3000:]
    assert "Traceback" not in stderr
    finished = _committed(run)
    assert 30 <= finished < 160

    server.start()  # back on the same port
    resumed = run_mill(*args, "runner.resume=true")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    results = json.loads((run / "results.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "succeeded"
    assert manifest["cache"]["hits"] == finished
    assert manifest["cache"]["computed"] == 160 - finished
    # the resumed run sent only the missing requests
    assert results["usage"]["arc_easy"]["requests"] == 160 - finished


def _logprobs(body: dict[str, Any]) -> dict[str, Any]:
    return body["choices"][0]["logprobs"]


def _scored(value: Any) -> Callable[[Any], Any]:
    """The last prompt token's log-probability (a scored one) becomes ``value``."""

    def change(body: Any) -> Any:
        _logprobs(body)["token_logprobs"][-2] = value
        return body

    return change


def _top(value: Any) -> Callable[[Any], Any]:
    """One top log-probability of the last prompt token becomes ``value``."""

    def change(body: Any) -> Any:
        top = _logprobs(body)["top_logprobs"][-2]
        top[next(iter(top))] = value
        return body

    return change


def _tokens(k: int) -> Callable[[Any], Any]:
    """``k`` more echoed tokens (``-k``: fewer), every per-token list alike."""

    def change(body: Any) -> Any:
        lp = _logprobs(body)
        for key in ("tokens", "text_offset", "token_logprobs", "top_logprobs"):
            if isinstance(lp.get(key), list):
                lp[key] = [lp[key][-1]] * k + lp[key] if k > 0 else lp[key][-k:]
        return body

    return change


def _usage(body: Any) -> Any:
    body["usage"]["prompt_tokens"] = "many"
    return body


def _choice_not_an_object(body: Any) -> Any:
    body["choices"] = ["-0.5"]
    return body


IMPOSSIBLE_ANSWERS: dict[str, tuple[Callable[[Any], Any] | int, list[str], str]] = {
    # name: (rewrite of the first echo answer, or a padded size in bytes; overrides; message)
    "log-probability +50": (_scored(50.0), [], "impossible log-probability 50.0 at prompt token"),
    "log-probability a string": (_scored("-0.5"), [], 'impossible log-probability "-0.5"'),
    "log-probability NaN": (_scored(math.nan), [], "impossible log-probability NaN"),
    "log-probability null": (_scored(None), [], "returned no log-probability for a scored token"),
    "top log-probability +5": (_top(5.0), [], "impossible log-probability 5.0"),
    "3 tokens fewer than the prompt": (_tokens(-3), [], "prompt tokens where the local tokenizer"),
    "3 tokens more than the prompt": (_tokens(3), [], "prompt tokens where the local tokenizer"),
    "usage not a number": (_usage, [], "usage counts are not numbers"),
    "a choice that is not an object": (_choice_not_an_object, [], "choice that is not an object"),
    "body over model.max_response_mb": (
        2 * 1024 * 1024,
        ["model.max_response_mb=1"],
        "the answer is larger than model.max_response_mb=1",
    ),
}


def _failed_with_one_line(proc: subprocess.CompletedProcess[str], run: Path) -> str:
    """The run failed as bad input does: exit 2, one line, no traceback, no results.json, a
    manifest marked failed whose log holds the same line. Returns the line."""
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not list(run.rglob("results.json"))
    assert json.loads((run / "manifest.json").read_text())["status"] == "failed"
    assert lines[0].removeprefix("mill: error: ") in (run / "mill.log").read_text()
    return lines[0]


@pytest.mark.parametrize("name", IMPOSSIBLE_ANSWERS)
def test_impossible_answers_end_the_run_with_one_line_naming_request_and_server(
    llama_server: ServerProcess, tmp_path: Path, name: str
) -> None:
    fault, extra, fragment = IMPOSSIBLE_ANSWERS[name]
    run = tmp_path / "run"
    with FaultProxy(llama_server.root_url) as proxy:
        if isinstance(fault, int):
            proxy.pad(1, fault, paths=("/v1/completions",))
        else:
            proxy.rewrite(1, fault, paths=("/v1/completions",))
        proc = run_mill(
            "task=arc_easy",
            "task.limit=2",
            *_api(proxy.base_url, *extra),
            f"hydra.run.dir={run}",
        )
        outcomes = [o for _, _, o in proxy.log]
    assert any(o.startswith(("rewrite:200", "pad:200")) for o in outcomes), outcomes
    line = _failed_with_one_line(proc, run)
    assert "request arc_easy/" in line and f"model.base_url={proxy.base_url}" in line, line
    assert fragment in line, line


def test_an_answer_trickled_past_timeout_s_ends_the_run_in_bounded_time(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    with FaultProxy(llama_server.root_url) as proxy:
        # a byte every 2 s: each socket read gets one before a 2 s read timeout would
        # fire, and the whole answer (over 500 bytes) would take over 1000 s
        proxy.trickle(1, chunk=1, every_s=1.9, paths=("/v1/completions",))
        start = time.monotonic()
        proc = run_mill(
            "task=arc_easy",
            "task.limit=2",
            *_api(proxy.base_url, "model.timeout_s=2", "model.max_retries=0"),
            f"hydra.run.dir={run}",
        )
        took = time.monotonic() - start
        assert ("POST", "/v1/completions", "trickle:200") in proxy.log
    line = _failed_with_one_line(proc, run)
    assert "no complete answer within model.timeout_s=2 s" in line, line
    assert "request arc_easy/" in line and f"model.base_url={proxy.base_url}" in line, line
    # Mill's start-up and the tokenizer's load (45 s on a loaded 2-core machine), then 2 s
    assert took < 240, took
