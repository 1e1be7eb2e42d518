"""benchmarks.bench_judge end to end at a tiny size: two MT-Bench questions judged by a real
``llama-server`` at 1 and 2 calls in flight, whole ``mill judge`` processes (dev only:
``pytest -m benchmark``; the numbers of the full run are in docs/benchmark.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mill
from tests.helpers import REPO

pytestmark = [
    pytest.mark.benchmark,
    pytest.mark.slow,  # starts llama-server and mill processes
]


@pytest.mark.usefixtures("llama_server_bin")
def test_judgments_per_second_at_each_number_in_flight(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "benchmarks.bench_judge", "--in-flight", "1", "2"]
    cmd += ["--limit", "2", "--max-gen-toks", "4", "--keep", str(tmp_path / "work")]
    cmd += ["--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["in_flight"] for r in rows] == [1, 2]
    for row in rows:
        assert row["judgments"] == 4  # 2 questions x 2 turns, one grade each
        assert row["judging_s"] > 0 and row["per_s"] == row["judgments"] / row["judging_s"]
    # each judging ran with the calls in flight it was asked for
    for n in (1, 2):
        manifest = mill.load(tmp_path / "work" / f"judge-{n}").manifest
        assert manifest.judge is not None
        assert manifest.judge["settings"]["num_concurrent"] == n
        # the judging time the tool reports is the one the run recorded
        assert rows[[1, 2].index(n)]["judging_s"] == (manifest.phases or {})["judging"]
    assert "| in flight | judgments | judging s | judgments/s | load (1 min) |" in proc.stdout
