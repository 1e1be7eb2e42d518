"""Faults between Mill and a real llama.cpp server: 429/500 for a while are retried and the run
succeeds; a server killed mid-run gives one line and exit 2, and ``runner.resume=true``
completes the folder after the server is back, sending only the missing requests."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import completions_args, error_lines
from tests.served.servers import ServerProcess

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
    exe = Path(sys.executable).with_name("mill")
    proc = subprocess.Popen(
        [str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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
