"""What Mill's runner adds to native tasks, on bridged lm-eval tasks: a run killed midway
resumes computing only the missing requests, and 2 data-parallel CPU processes give the
results of one. Real ``mill`` processes, stories260k, the test-tree lm-eval YAMLs."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_mill
from tests.lmeval.conftest import skip_without_lm_eval, skip_without_shared

pytestmark = [pytest.mark.slow, skip_without_lm_eval, skip_without_shared]

# One BLAS thread everywhere and one request per forward pass: byte-identical floats
# whichever process computes a request (see tests/runner/test_data_parallel.py)
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def _args(local_tasks: Path, *extra: str) -> list[str]:
    return [
        "task=lm_eval",
        "task.tasks=[mill_arc_group]",
        f"task.include_path={local_tasks}",
        "task.include_defaults=false",
        "task.limit=3",
        "task.num_fewshot=1",
        "model=stories260k",
        "model.batch_size=1",
        *extra,
    ]


def _samples(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "samples").glob("*.jsonl"))}


def _requests(folder: Path) -> int:
    return sum(
        len(json.loads(line)["extra"]["lm_eval"]["arguments"])
        for body in _samples(folder).values()
        for line in body.splitlines()
    )


def _results(folder: Path) -> dict[str, Any]:
    results = json.loads((folder / "results.json").read_text())
    return {"tasks": results["tasks"], "groups": results["groups"]}


def _cached(folder: Path) -> int:
    (file,) = (folder / "cache").glob("responses-*.sqlite")
    with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An uninterrupted one-process run: (its folder, the task YAMLs it read)."""
    from tests.lmeval.conftest import SHARED, parity_script

    root = tmp_path_factory.mktemp("lmeval_runner")
    local_tasks = parity_script().prepare_tasks(root / "tasks", SHARED)
    out = root / "single"
    proc = run_mill(*_args(local_tasks, f"hydra.run.dir={out}"), env=ONE_THREAD, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, local_tasks


def test_killed_bridged_run_resumes_computing_only_the_missing(
    single: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, local_tasks = single
    total = _requests(reference)
    folder = tmp_path / "run"
    args = _args(local_tasks, f"hydra.run.dir={folder}")
    killed = run_mill(*args, env={**ONE_THREAD, "MILL_FAULT": "response:7"}, timeout=900)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
    assert not (folder / "results.json").exists()
    committed = _cached(folder)
    assert 7 <= committed < total

    resumed = run_mill(*args, "runner.resume=true", env=ONE_THREAD, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["attempts"] == 2
    cache = manifest["cache"]
    # every request answered before the kill came from the cache; only the rest ran
    assert (cache["entries_before"], cache["hits"]) == (committed, committed)
    assert cache["computed"] == total - committed
    # the same samples (lm-eval docs, arguments, raw and filtered responses) and values
    assert _samples(folder) == _samples(reference)
    assert _results(folder) == _results(reference)


def test_two_processes_equal_one(single: tuple[Path, Path], tmp_path: Path) -> None:
    reference, local_tasks = single
    out = tmp_path / "run"
    proc = run_mill(
        *_args(local_tasks, "runner.num_processes=2", f"hydra.run.dir={out}"),
        env=ONE_THREAD,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["world_size"] == 2
    per_rank = [r["requests"] for r in manifest["ranks"]]
    assert len(per_rank) == 2 and min(per_rank) > 0
    assert sum(per_rank) == _requests(reference)
    assert set(_samples(out)) == {"mill_arc_easy.jsonl", "mill_arc_challenge.jsonl"}
    assert _samples(out) == _samples(reference)
    # task values and the group's aggregates (acc micro, acc_norm macro) too
    assert _results(out) == _results(reference)
    assert set(_results(out)["groups"]) == {"mill_arc_group"}
