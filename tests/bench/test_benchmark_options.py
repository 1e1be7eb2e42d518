"""benchmarks.benchmark's --device/--dtype reach the model (a GPU table is one command)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.driver_common import REPO, SHARED_DATA, lmeval_python

LMEVAL = lmeval_python()

pytestmark = [
    pytest.mark.slow,  # starts the benchmark's driver processes
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}"),
]


def _bench(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "benchmarks.benchmark", "--model", "gpt2_random"]
    cmd += ["--workloads", "arc_easy_0shot", "--limit", "3", "--data-dir", str(SHARED_DATA)]
    cmd += [*args, "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=False, cwd=REPO)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    (entry,) = json.loads(out.read_text())
    return entry


def test_dtype_and_device_reach_mills_model(tmp_path: Path) -> None:
    entry = _bench(tmp_path, "--only", "mill", "--device", "cpu", "--dtype", "bfloat16")
    assert entry["device"] == "cpu" and entry["dtype"] == "bfloat16"
    assert entry["mill"]["model_dtype"] == "bfloat16"
    assert entry["mill"]["model_device"] == "cpu"
    assert entry["mill"]["tokens_fed"] > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_gpu_table_is_one_command(tmp_path: Path) -> None:
    sides = [] if LMEVAL.exists() else ["--only", "mill"]
    entry = _bench(tmp_path, "--device", "cuda", "--dtype", "bfloat16", *sides)
    assert entry["mill"]["model_dtype"] == "bfloat16"
    assert entry["mill"]["model_device"].startswith("cuda")
    if LMEVAL.exists():
        assert entry["lmeval"]["tokens_fed"] > 0 and "speedup" in entry
