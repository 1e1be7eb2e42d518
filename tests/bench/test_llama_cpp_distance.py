"""benchmarks.llama_cpp_distance scores Mill's own request tokens with llama.cpp's library on
SmolLM2's Q4_1 GGUF: the driver's reuse of a shared context gives what scoring the request
alone gives, and the tool pairs every request of a real Mill run with llama.cpp's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver_common import REPO, SHARED_DATA

DRIVER = REPO / "benchmarks" / "llama_cpp_loglik_driver.py"

pytestmark = pytest.mark.slow  # starts Mill and llama-cpp-python's interpreter


@pytest.fixture(scope="module")
def llama_python() -> str:
    from tests.support.servers import ServerUnavailable
    from tests.support.servers import llama_python as interpreter

    try:
        return interpreter()
    except ServerUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from benchmarks.side_by_side import model_dir
    from benchmarks.whole_process import source_gguf
    from tests.model.test_gguf import smollm2_source

    smollm2_source()  # skips, saying how to get it, where the wheel is missing
    return source_gguf(model_dir("smollm2"), tmp_path_factory.mktemp("gguf"))


def _score(python: str, gguf: Path, requests: list[list[list[int]]], tmp: Path) -> list[float]:
    spec, out = tmp / "requests.json", tmp / "out.json"
    spec.write_text(json.dumps({"requests": requests}))
    done = subprocess.run(
        [python, str(DRIVER), str(gguf), str(spec), str(out), "--threads", "2"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert len(result["is_greedy"]) == len(requests) and result["seconds"] > 0
    return list(result["logprobs"])


def test_a_shared_context_scores_as_the_request_alone(
    llama_python: str, gguf: Path, tmp_path: Path
) -> None:
    """Two choices after one context (the second reuses the context's positions), then
    each request alone in a fresh process: the same log-likelihoods, and each is a sum of
    log-probabilities (negative), not one position's."""
    context = [17872, 42, 1117, 25498, 28975, 338, 30, 198, 21350, 42]
    choices = [[34666, 6759, 523, 6302, 30], [34666, 929, 523, 1438, 2848, 30]]
    both = _score(llama_python, gguf, [[context, c] for c in choices], tmp_path)
    alone = [_score(llama_python, gguf, [[context, c]], tmp_path)[0] for c in choices]
    assert both == pytest.approx(alone, abs=1e-3)
    assert all(lp < -1.0 for lp in both)
    # a sum over the continuation's tokens: below its first token's log-probability
    first = _score(llama_python, gguf, [[context, choices[1][:1]]], tmp_path)[0]
    assert both[1] < first < 0


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}")
def test_the_tool_pairs_every_request_of_a_mill_run(
    llama_python: str, gguf: Path, tmp_path: Path
) -> None:
    """ARC-Easy, 3 docs of Mill's fp32 engine on the dequantized folder, against llama.cpp
    on the GGUF it came from: every request paired, the distance of two arithmetics on the
    same weights (above 0, below a nat: measured max 0.42 on these docs), both sides'
    metrics."""
    from benchmarks.side_by_side import hf_model_overrides, model_dir
    from mill.results import load

    run = tmp_path / "run"
    model = hf_model_overrides(model_dir("smollm2"), "cpu", "float32")
    argv = [
        "mill",
        "task=arc_easy",
        *model,
        "data=local",
        f"data.dir={SHARED_DATA}",
        "task.limit=3",
        "runner.sample_tokens=true",  # the tool pairs requests by their token ids
    ]
    done = subprocess.run(
        [*argv, f"hydra.run.dir={run}"],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "distance.json"
    env = {**os.environ, "MILL_LLAMA_PYTHON": llama_python}
    tool = [sys.executable, "-m", "benchmarks.llama_cpp_distance", str(run), "--json", str(out)]
    done = subprocess.run(
        tool, capture_output=True, text=True, timeout=600, check=False, cwd=REPO, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = json.loads(out.read_text())
    choices = sum(len(s.choices) for s in load(run).samples("arc_easy"))
    assert (row["task"], row["docs"], row["requests"]) == ("arc_easy", 3, choices)
    assert 0 < row["median_abs"] <= row["max_abs"] < 1.0
    assert set(row["metrics"]) == {"acc", "acc_norm"}
    assert row["mill_scoring_s"] > 0 and row["llama_cpp_scoring_s"] > 0
    assert "the same prediction on" in done.stdout
