"""benchmarks.lmeval_bridge_speed end to end at a tiny size: lm-eval's CLI with ``hf``, the
bridge (``mill task=lm_eval``) and Mill's engine in lm-eval's CLI run the same lm-eval
ARC-Easy 25-shot task on local files, each as its own process, with identical metric
values (dev only: ``pytest -m benchmark``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver_common import REPO, SHARED_DATA, lmeval_python
from tests.helpers import installed

LMEVAL = lmeval_python()


pytestmark = [
    pytest.mark.benchmark,
    pytest.mark.slow,  # starts the three sides as processes
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}"),
    pytest.mark.skipif(not installed("lm_eval"), reason="lm-eval is not installed (dev extra)"),
]


def test_three_sides_run_whole_process_with_identical_metrics(tmp_path: Path) -> None:
    sides = ["lmeval", "bridge", "engine"] if LMEVAL.exists() else ["bridge", "engine"]
    out = tmp_path / "speed.json"
    cmd = [sys.executable, "-m", "benchmarks.lmeval_bridge_speed"]
    cmd += ["--model", "gpt2_random", "--workloads", "arc_easy_25shot", "--limit", "2"]
    cmd += ["--rounds", "1", "--data-dir", str(SHARED_DATA), "--sides", *sides, "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (entry,) = json.loads(out.read_text())
    assert entry["workload"] == "arc_easy_25shot" and entry["limit"] == 2
    assert set(entry["runs"]) == set(sides)
    for side in sides:
        (run,) = entry["runs"][side]
        assert run["wall_s"] > 0 and run["peak_rss_kib"] > 0
    phases = entry["runs"]["bridge"][0]["phases"]
    assert phases["scoring"] > 0
    values = entry["values"]
    (task,) = values[sides[0]]
    assert set(values[sides[0]][task]) == {"acc,none", "acc_norm,none"}
    assert all(values[s] == values[sides[0]] for s in sides)
    assert "metric values identical on every side: yes" in proc.stdout
