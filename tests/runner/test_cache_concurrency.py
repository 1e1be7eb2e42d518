"""Two real `mill` processes sharing one cache folder at the same time both finish with
the numbers of an uncached run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.helpers import mill_command, run_mill

ARGS = ("task=arc_easy", "model=gpt2_random", "task.limit=6", "model.batch_size=1")
TOTAL = 24


@pytest.mark.slow
def test_two_runs_share_one_cache_folder_at_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # a fresh $MILL_CACHE: the two also race to build the model and to hash its files
    env = {**os.environ, "CI": "1", "MILL_CACHE": str(tmp_path / "mill-cache")}
    cmd = mill_command()
    procs = [
        subprocess.Popen(
            [*cmd, *ARGS, f"runner.cache={cache}", f"hydra.run.dir={tmp_path / name}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    for proc, err in zip(procs, errors, strict=True):
        assert proc.returncode == 0, err

    reference = run_mill(
        *ARGS,
        "runner.cache=false",
        f"hydra.run.dir={tmp_path / 'ref'}",
        env={"MILL_CACHE": env["MILL_CACHE"]},
    )
    assert reference.returncode == 0, reference.stderr
    want = json.loads((tmp_path / "ref" / "results.json").read_text())["tasks"]
    samples = (tmp_path / "ref" / "samples" / "arc_easy.jsonl").read_bytes()
    for name in ("a", "b"):
        assert json.loads((tmp_path / name / "results.json").read_text())["tasks"] == want
        assert (tmp_path / name / "samples" / "arc_easy.jsonl").read_bytes() == samples
        stats = json.loads((tmp_path / name / "manifest.json").read_text())["cache"]
        assert stats["hits"] + stats["computed"] + stats["shared"] == TOTAL
    # one host, one database file; every request is in it once
    (db,) = cache.glob("responses-*.sqlite")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == TOTAL
