"""Crash-safe resume: SIGKILL a run midway, rerun it, nothing finished is recomputed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import mill_command, run_mill

# 12 docs x 4 choices, one doc per forward pass: long enough to be killed midway
ARGS = ("task=arc_easy", "model=gpt2_random", "task.limit=12", "model.batch_size=1")
TOTAL = 48


def _cached(folder: Path) -> int:
    """Responses committed so far (a read-only look, as any other process could take)."""
    files = list((folder / "cache").glob("responses-*.sqlite"))
    if not files:
        return 0
    try:
        with sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.Error:  # the writer is still creating the tables
        return 0


def _kill_midway(folder: Path, at_least: int) -> int:
    cmd = mill_command()
    proc = subprocess.Popen(
        [*cmd, *ARGS, f"hydra.run.dir={folder}"],
        env={**os.environ, "CI": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if _cached(folder) >= at_least:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    return _cached(folder)


@pytest.mark.slow
def test_sigkilled_run_resumes_without_recomputing(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    finished = _kill_midway(folder, at_least=12)
    assert 12 <= finished < TOTAL
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "running" and not (folder / "results.json").exists()

    # the plain command refuses the folder, so does a resume that changes a setting
    again = run_mill(*ARGS, f"hydra.run.dir={folder}")
    assert again.returncode == 2 and "already exists" in again.stderr
    # a refused command never touches the folder's manifest
    assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
    changed = run_mill(*ARGS, "task.limit=11", "runner.resume=true", f"hydra.run.dir={folder}")
    assert changed.returncode == 2 and "task.limit" in changed.stderr
    assert [line for line in changed.stderr.splitlines() if "error" in line.lower()] == [
        line for line in changed.stderr.splitlines() if line.startswith("mill: error: ")
    ]
    # resume takes it over, with a lower KV-cache budget (memory only, never scores)
    resumed = run_mill(
        *ARGS, "runner.resume=true", "model.cache_budget=2048", f"hydra.run.dir={folder}"
    )
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["attempts"] == 2
    cache = manifest["cache"]
    # every request finished before the kill came from the cache; only the rest ran
    assert cache["entries_before"] == finished == cache["hits"]
    assert cache["computed"] == TOTAL - finished and cache["shared"] == 0

    # identical to a run that was never interrupted (and never cached)
    reference = tmp_path / "reference"
    proc = run_mill(*ARGS, "runner.cache=false", f"hydra.run.dir={reference}")
    assert proc.returncode == 0, proc.stderr
    for name in ("arc_easy.jsonl",):
        assert (folder / "samples" / name).read_bytes() == (
            reference / "samples" / name
        ).read_bytes()
    got = json.loads((folder / "results.json").read_text())["tasks"]
    want = json.loads((reference / "results.json").read_text())["tasks"]
    assert got == want
    assert not list((folder / "samples").glob("*.partial.jsonl"))

    # a finished run is never resumed or overwritten
    before = (folder / "results.json").read_bytes()
    done = run_mill(*ARGS, "runner.resume=true", f"hydra.run.dir={folder}")
    assert done.returncode == 2 and "nothing to resume" in done.stderr
    assert (folder / "results.json").read_bytes() == before


def test_shared_cache_folder_serves_any_run_of_the_same_model(compose, tmp_path: Path) -> None:
    """On the fake model: another seed is another model (its identity), as another
    random GPT-2 is (tests/runner/test_cache.py keys real weights)."""
    from mill.runner.job import run_job

    cache = tmp_path / "cache"
    base = ("task=arc_easy", "model=fake", "task.limit=3", "report.progress=never")
    for name, extra in (("a", ()), ("b", ()), ("c", ("model.seed=1",))):
        run_job(compose(*base, *extra, f"runner.cache={cache}"), tmp_path / name)
    stats = {k: json.loads((tmp_path / k / "manifest.json").read_text())["cache"] for k in "abc"}
    assert (stats["a"]["hits"], stats["a"]["computed"]) == (0, 12)
    assert (stats["b"]["hits"], stats["b"]["computed"]) == (12, 0)
    assert (stats["c"]["hits"], stats["c"]["computed"]) == (0, 12)  # another model
    a = (tmp_path / "a" / "samples" / "arc_easy.jsonl").read_bytes()
    assert a == (tmp_path / "b" / "samples" / "arc_easy.jsonl").read_bytes()
    assert not (tmp_path / "a" / "cache").exists()
