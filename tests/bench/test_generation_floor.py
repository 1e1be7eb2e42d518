"""benchmarks.generation_floor: the work it counts from a run folder (by hand, on a tiny
shape), and the script end to end on a real model folder (slow: it times products and
starts ``floor_driver``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks.generation_floor import Shape, count
from tests.helpers import run_process


def _run_folder(tmp_path: Path, model: str) -> Path:
    """Two greedy rows sharing a 4-token prefix (own parts of 2 and 3 tokens) and, for the
    second prompt, two sampled repeats."""
    run = tmp_path / "run"
    (run / "samples").mkdir(parents=True)
    rows = [
        {"response": {"input_tokens": [1, 2, 3, 4, 5, 6], "output_tokens": [0, 0, 0]}},
        {
            "response": {
                "input_tokens": [1, 2, 3, 4, 7, 8, 9],
                "output_tokens": [[0, 0], [0, 0, 0, 0]],
            }
        },
    ]
    (run / "samples" / "task.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "manifest.json").write_text(json.dumps({"model": {"pretrained": model}, "seconds": 1}))
    return run


def test_counts_share_the_prefix_and_the_repeats_prompt(tmp_path: Path) -> None:
    from transformers import GPT2Config

    shape = Shape.of(GPT2Config(n_layer=1, n_embd=4, n_head=2, n_inner=8, vocab_size=10))
    assert (shape.heads, shape.kv_heads, shape.head_dim, shape.gated) == (2, 2, 2, False)
    assert shape.body_flops() == 2 * (4 * 12 + 4 * 4 + 4 * 8 + 8 * 4) == 256
    assert shape.head_flops() == 80 and shape.kv_bytes == 2 * 1 * 2 * 2 * 4 == 32
    work = count(_run_folder(tmp_path, "unused"), shape)
    assert (work.rows, work.generated, work.prefill_tokens) == (3, 9, 4 + 2 + 3)
    # the prefix once (its causal attention: 16 FLOPs a query-key pair), then each own part
    # over the prefix and itself
    prefix = 4 * 256 + 16 * 4 * 4 / 2
    assert work.prefill_flops == prefix + (2 * 256 + 16 * (2 * 4 + 2)) + (
        3 * 256 + 16 * (3 * 4 + 4.5)
    )
    assert work.decode_flops == 9 * (256 + 80)
    # the greedy row reads its 2 own prompt tokens at each of its 3 steps and its new
    # tokens so far (0 + 1 + 2); the repeats read only their new tokens (0 + 1, 0..3)
    assert work.read_bytes == ((2 * 3 + 3) + 1 + 6) * 32


@pytest.mark.slow  # times products and starts floor_driver (imports torch, transformers)
@pytest.mark.benchmark
def test_the_script_prints_the_floor_and_the_largest_ratio(tmp_path: Path) -> None:
    from mill.model.random import random_gpt2_dir

    run = _run_folder(tmp_path, str(random_gpt2_dir(n_layer=1, n_embd=32, n_head=2)))
    done = run_process(
        sys.executable, "-m", "benchmarks.generation_floor", run,
        "--repeat", "1", "--decode-rows", "4", "--lmeval", "100",
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    floor = float(lines["floor"].split()[0])  # printed to 0.1 s: the true one within 0.05 s
    assert floor > 0.05
    ratio = float(lines["lm-eval 100.0 s"].split()[2].rstrip("x"))  # printed to 0.01
    # a 3 s floor (a fast machine) printed as 3.1 is 3.05-3.15: 31.7-32.8x, not 100 / 3.1
    assert 100 / (floor + 0.05) - 0.005 <= ratio <= 100 / (floor - 0.05) + 0.005
