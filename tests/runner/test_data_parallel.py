"""Data parallelism for real: 2 CPU processes (gloo) against 1, through the CLI.

Both the driver mode (``runner.num_processes=2``: the Hydra process starts torchrun
workers) and a user's own launcher (``torchrun -m mill``) must leave exactly one folder
whose samples and results equal a single-process run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonlines
import pytest
import yaml

from tests.helpers import run_mill, run_process

ARGS = ("task=arc", "model=gpt2_random", "task.limit=6", "model.batch_size=1")
# One BLAS thread in every process: the GEMM kernel that torch picks for a small matrix
# depends on the thread count (measured: a [5, 64] x [64, 1024] product differs in the last
# bit between 1 and 2 threads), so byte-identical floats need the same count on both sides.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def _samples(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "samples").glob("*.jsonl"))}


def _rows(folder: Path) -> list[dict]:
    rows = []
    for path in sorted((folder / "samples").glob("*.jsonl")):
        with jsonlines.open(path) as reader:
            rows.extend(reader)
    return rows


def _tasks(folder: Path) -> dict:
    results = json.loads((folder / "results.json").read_text())
    return {"tasks": results["tasks"], "groups": results["groups"]}


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "run"
    proc = run_mill(*ARGS, f"hydra.run.dir={out}", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.slow
def test_two_workers_equal_one_process_exactly(single: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = run_mill(*ARGS, "runner.num_processes=2", f"hydra.run.dir={out}", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
    # byte-identical per-sample records (batch_size=1: every doc is scored alone on both
    # sides, so even padding counts and float bits agree) and identical metrics
    assert _samples(out) == _samples(single) and len(_samples(out)) == 2
    assert _tasks(out) == _tasks(single)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["world_size"] == 2
    per_rank = [r["requests"] for r in manifest["ranks"]]
    total = sum(
        json.loads(line)["response"]["logprobs"].__len__()
        for f in _samples(out).values()
        for line in f.splitlines()
    )
    assert len(per_rank) == 2 and sum(per_rank) == total and min(per_rank) > 0
    assert manifest["cache"]["computed"] == total
    # the table went to stdout once, from rank 0
    assert proc.stdout.count("arc_easy |") == 1 or proc.stdout.count("arc_easy") >= 1


@pytest.mark.slow
def test_default_thread_counts_agree_to_float_rounding(single: Path, tmp_path: Path) -> None:
    """Without OMP_NUM_THREADS each of 2 CPU workers gets half the cores while a single
    process takes them all: the GEMM kernels then sum in another order, so log-likelihoods
    agree to float rounding (the README's statement), everything else exactly."""
    runs = {}
    for n in (1, 2):
        out = tmp_path / f"run{n}"
        proc = run_mill(
            *ARGS,
            f"runner.num_processes={n}",
            f"hydra.run.dir={out}",
            env={"OMP_NUM_THREADS": None},  # the default, whatever the test run set
        )
        assert proc.returncode == 0, proc.stderr
        runs[n] = _rows(out)
    pairs = list(zip(runs[1], runs[2], strict=True))
    assert len(pairs) == 12
    for x, y in pairs:
        for p, q in zip(x["response"]["logprobs"], y["response"]["logprobs"], strict=True):
            assert p == pytest.approx(q, rel=0, abs=1e-5)
        strip = ("logprobs", "unconditioned_logprobs")
        assert {k: v for k, v in x["response"].items() if k not in strip} == {
            k: v for k, v in y["response"].items() if k not in strip
        }
        assert (x["doc_id"], x["prediction"], x["metrics"]) == (
            y["doc_id"],
            y["prediction"],
            y["metrics"],
        )


@pytest.mark.slow
def test_users_own_torchrun_writes_one_folder(single: Path, tmp_path: Path) -> None:
    """``torchrun -m mill``: every rank runs Hydra, only rank 0 writes. Default batching
    here (``batch_size=auto``) against one process at ``batch_size=1``: the ranks' batches
    differ from one process's, and with batch-invariant scoring (the default) the samples
    are byte-identical all the same (issue 53)."""
    env = {"CI": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    args = [a for a in ARGS if not a.startswith("model.batch_size")]
    proc = run_process(*cmd, "-m", "mill", *args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # rank 1 created nothing: one run folder, no stray outputs or logs in the cwd
    runs = list((tmp_path / "outputs" / "runs").glob("*/*"))
    assert len(runs) == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["outputs"]
    out = runs[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["world_size"] == 2 and len(manifest["ranks"]) == 2
    assert _tasks(out) == _tasks(single)
    assert _samples(out) == _samples(single) and len(_rows(out)) == 12


@pytest.mark.slow
def test_two_nodes_shard_by_global_rank(single: Path, tmp_path: Path) -> None:
    """Two torchrun "nodes" (here both on localhost) of one process each: both processes
    have local rank 0, only global rank 0 may write, and each scores half."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "CI": "1", "OMP_NUM_THREADS": "1"}
    procs = []
    for node in (0, 1):
        cwd = tmp_path / f"node{node}"
        cwd.mkdir()
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            f"--node_rank={node}",
            "--nproc_per_node=1",
            "--master_addr=127.0.0.1",
            f"--master_port={port}",
            "-m",
            "mill",
            *ARGS,
        ]
        procs.append(
            subprocess.Popen(
                cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs[0][-2000:] + outputs[1][-2000:]
    assert list((tmp_path / "node1").iterdir()) == []  # local rank 0 of node 1 wrote nothing
    runs = list((tmp_path / "node0" / "outputs" / "runs").glob("*/*"))
    assert len(runs) == 1
    manifest = json.loads((runs[0] / "manifest.json").read_text())
    assert manifest["world_size"] == 2 and min(r["requests"] for r in manifest["ranks"]) > 0
    assert _samples(runs[0]) == _samples(single) and _tasks(runs[0]) == _tasks(single)


@pytest.mark.slow
def test_workers_get_the_credentials_resolved_yaml_masks(tmp_path: Path) -> None:
    """``resolved.yaml`` (what workers read) masks a URL's credentials; the workers get the
    real value from the driver's environment: the fake model answers it verbatim."""
    url = "http://alice:secret@127.0.0.1:1/v1?api_key=secret"
    out = tmp_path / "run"
    proc = run_mill(
        "task=gsm8k",
        "task.limit=4",
        "task.num_fewshot=0",
        "model=fake",
        f'model.answer="{url}"',  # quoted: the query has an =
        "runner.num_processes=2",
        f"hydra.run.dir={out}",
    )
    assert proc.returncode == 0, proc.stderr
    resolved = yaml.safe_load((out / "resolved.yaml").read_text())
    assert resolved["model"]["answer"] == "http://***@127.0.0.1:1/v1?api_key=***"
    rows = _rows(out)
    assert len(rows) == 4 and all(r["response"]["text"][0].startswith(url) for r in rows)
    assert "secret" not in (out / "manifest.json").read_text() + proc.stderr
