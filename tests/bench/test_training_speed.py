"""benchmarks.training_speed at a tiny size (dev only: ``pytest -m benchmark``): the
callback's evaluation, a standalone ``mill`` run and lm-eval's ``HFLM(pretrained=model)``
in the same process give the same scores on the same checkpoint and docs, and the callback
is the fastest of the three."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.helpers import SHARED_DATA, run_process

pytestmark = [
    pytest.mark.benchmark,
    pytest.mark.slow,  # starts the script, which starts mill
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}"),
    pytest.mark.skipif(
        importlib.util.find_spec("lm_eval") is None, reason="lm-eval is not installed (dev extra)"
    ),
]


def test_callback_is_faster_than_a_standalone_run_and_lm_eval(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    done = run_process(
        sys.executable, "-m", "benchmarks.training_speed",
        "--model", "stories260k", "--limit", "10", "--data-dir", SHARED_DATA, "--json", out,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    callback = report["callback"]["scores"]
    assert report["standalone"]["scores"] == pytest.approx(callback, abs=1e-9)
    assert report["lmeval"]["scores"] == pytest.approx(callback, abs=1e-9)
    assert report["speedup_vs_standalone"] > 1
    assert report["speedup_vs_lmeval"] > 1
    assert "callback faster than standalone mill" in done.stdout
