"""benchmarks.quantization_gap: a second rounding of SmolLM2's quantized tensors, with the
GGUF type each had, on shifted blocks; scored by Mill beside the original and compared with
``mill compare``'s paired statistics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.driver_common import REPO, SHARED_DATA

gguf = pytest.importorskip("gguf", reason="the gguf package (extra 'gguf') is not installed")
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

from benchmarks.quantization_gap import requantize, write_copy  # noqa: E402


def rounded(w: np.ndarray, qtype: Q) -> np.ndarray:
    return dequantize(quantize(w, qtype), qtype).reshape(w.shape)


@pytest.mark.parametrize("qtype", [Q.Q4_1, Q.Q8_0])
def test_no_shift_keeps_rounded_weights_and_a_shift_rounds_them_anew(qtype: Q) -> None:
    """Weights already on the type's grid come back bit for bit at shift 0; a shift of half
    a block rounds them again by about as much as the first rounding moved them."""
    w = np.random.default_rng(0).standard_normal((6, 64)).astype(np.float32)
    once = rounded(w, qtype)
    assert requantize(once, qtype, 0).tobytes() == once.tobytes()
    twice = requantize(once, qtype, 16)
    assert twice.dtype == np.float32 and twice.shape == w.shape
    first, second = np.abs(once - w).mean(), np.abs(twice - once).mean()
    assert second > 0 and 0.3 < second / first < 3


def test_copy_rounds_only_the_quantized_tensors(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    rng = np.random.default_rng(1)
    base = tmp_path / "base"
    base.mkdir()
    proj = rounded(rng.standard_normal((4, 64)).astype(np.float32), Q.Q4_1)
    norm = rng.standard_normal(64).astype(np.float32)
    save_file({"proj": proj, "norm": norm}, str(base / "model.safetensors"))
    (base / "config.json").write_text("{}")
    out = tmp_path / "copy"
    write_copy(base, out, {"proj": Q.Q4_1, "lm_head.weight": Q.Q8_0}, shift=8)
    copied = load_file(str(out / "model.safetensors"))
    assert copied["norm"].tobytes() == norm.tobytes()
    assert copied["proj"].tobytes() == requantize(proj, Q.Q4_1, 8).tobytes() != proj.tobytes()
    assert sorted(copied) == ["norm", "proj"]  # a type for an absent (tied) tensor adds none
    assert json.loads((out / "requantized.json").read_text())["shift"] == 8
    assert (out / "config.json").read_text() == "{}"
    assert not (tmp_path / "copy.partial").exists()


@pytest.mark.slow  # converts SmolLM2, writes a 538 MB copy, starts Mill twice
def test_tool_compares_smollm2_with_its_requantized_copy(tmp_path: Path) -> None:
    from tests.model.test_gguf import smollm2_source

    if not (SHARED_DATA / "arc_easy").is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    wheel = smollm2_source()
    env = {**os.environ, "MILL_SMOLLM2_WHEEL": str(wheel)}
    command = [
        sys.executable, "-m", "benchmarks.quantization_gap", "--tasks", "arc_easy",
        "--shifts", "16", "--limit", "3", "--work", str(tmp_path / "work"),
        "--data-dir", str(SHARED_DATA), "--json", str(tmp_path / "gap.json"), "--iters", "100",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    table = json.loads((tmp_path / "gap.json").read_text())
    assert table["counts"] == {"Q4_1": 210, "Q8_0": 1}
    rows = {r["metric"]: r for r in table["rows"]}
    assert set(rows) == {"acc", "acc_norm"}
    for row in rows.values():
        assert row["n"] == 3 and row["copy"] == "shift 16"
        assert row["diff"] == pytest.approx(row["requantized"] - row["original"])
    assert "| arc_easy | acc | 3 |" in done.stdout
    copy = tmp_path / "work" / "models" / "shift16"
    base = Path(json.loads((copy / "requantized.json").read_text())["base"])
    name = "model.layers.0.mlp.down_proj.weight"
    assert weights(copy, name).tobytes() == requantize(weights(base, name), Q.Q4_1, 16).tobytes()
    norm = "model.layers.0.input_layernorm.weight"
    assert weights(copy, norm).tobytes() == weights(base, norm).tobytes()


def weights(folder: Path, name: str) -> np.ndarray:
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "np") as f:
        return f.get_tensor(name)
