"""benchmarks.whole_process on the generation workloads of issue 23 at a smoke size: each
peer once (lm-eval ``hf``, transformers' ``generate_batch``, llama.cpp's ``llama-server``
through Mill's ``openai_completions``), a few docs, a few tokens. Asserts the greedy checks
(every peer's answers equal Mill's) and the generation table's shape and arithmetic, never
timings (those are in docs/benchmark.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.driver_common import REPO, SHARED_DATA, lmeval_python, module_cmd

pytestmark = [
    pytest.mark.slow,  # starts mill, lm_eval, the generate_batch driver and llama-server
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}"),
    pytest.mark.skipif(not lmeval_python().exists(), reason="lm-eval's interpreter missing"),
]

HEADER = [
    "workload",
    "side",
    "wall s",
    "peak RSS GiB",
    "generated tokens",
    "tokens/s",
    "wall / Mill's",
    "greedy docs compared",
    "mismatches",
]


def _run(tmp_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "whole.json"
    cmd = module_cmd(sys.executable, "whole_process", *args, "--limit", "2")
    cmd += ["--max-gen-toks", "6", "--no-floor", "--data-dir", str(SHARED_DATA)]
    cmd += ["--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def _table(stdout: str) -> list[dict[str, str]]:
    lines = stdout.splitlines()
    start = lines.index("| " + " | ".join(HEADER) + " |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append(dict(zip(HEADER, cells, strict=True)))
    return rows


def _check_rows(entry: dict[str, Any], table: list[dict[str, str]], sides: list[str]) -> None:
    rows = entry["generation"]
    assert [r["side"] for r in rows] == ["mill", *sides]
    mine = [t for t in table if t["workload"] == entry["workload"]]
    assert [t["side"] for t in mine] == ["mill", *sides]
    for row, cells in zip(rows, mine, strict=True):
        (timed,) = entry[row["side"]]  # one round: the median is that round
        assert row["wall_s"] == timed["wall_s"]
        assert row["generated_tokens"] > 0
        assert row["tokens_per_s"] == pytest.approx(row["generated_tokens"] / row["wall_s"])
        assert row["wall_over_mill"] == pytest.approx(row["wall_s"] / entry["mill"][0]["wall_s"])
        assert cells["generated tokens"] == str(row["generated_tokens"])
        assert cells["tokens/s"] == f"{row['tokens_per_s']:.1f}"


def test_gpt2_greedy_and_sampled_against_lmeval_and_generate_batch(tmp_path: Path) -> None:
    args = "--model gpt2_random --workloads gsm8k_cot_8shot humaneval_n10"
    timed, stdout = _run(tmp_path, *args.split(), "--peers", "lmeval", "generate_batch")
    greedy, sampled = timed["workloads"]
    table = _table(stdout)
    for entry in (greedy, sampled):
        _check_rows(entry, table, ["lmeval", "generate_batch"])
    # greedy: both peers' answers are Mill's, doc for doc
    checks = greedy["greedy_checks"]
    assert checks == {
        "lmeval": {"compared": 2, "mismatches": 0, "differ": []},
        "generate_batch": {"compared": 2, "mismatches": 0, "differ": []},
    }
    for cells in (t for t in table if t["workload"] == "gsm8k_cot_8shot" and t["side"] != "mill"):
        assert (cells["greedy docs compared"], cells["mismatches"]) == ("2", "0")
    # gpt2_random never stops early here: Mill generated the limit for every doc
    assert greedy["generation"][0]["generated_tokens"] == 2 * 6
    # sampled: 2 problems x 10 repeats, not compared token for token
    assert sampled["greedy_checks"] == {}
    assert set(sampled["mill_metrics"]) >= {"pass_at_k@1", "pass_at_k@10"}
    assert "humaneval_n10: Mill's metrics (first round): " in stdout
    gb = next(r for r in sampled["generation"] if r["side"] == "generate_batch")
    assert gb["generated_tokens"] <= 2 * 10 * 6 and "mismatches" not in gb


@pytest.mark.usefixtures("llama_server_bin")
def test_stories_against_lmeval_and_llama_server(tmp_path: Path) -> None:
    args = "--model stories260k --workloads gsm8k_0shot --peers lmeval llama_server"
    timed, stdout = _run(tmp_path, *args.split())
    (entry,) = timed["workloads"]
    _check_rows(entry, _table(stdout), ["lmeval", "llama_server"])
    assert entry["greedy_checks"] == {
        "lmeval": {"compared": 2, "mismatches": 0, "differ": []},
        "llama_server": {"compared": 2, "mismatches": 0, "differ": []},
    }
    assert entry["llama_server_peak_rss_kib"] > 0
    assert "gsm8k_0shot: llama-server's own peak RSS" in stdout
