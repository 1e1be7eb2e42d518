"""Request rounds under data parallelism: a judged multi-turn task on two worker processes
(turn 2 and the judge's prompts built on every rank from every rank's responses) gives the
single process's numbers."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_mill

pytestmark = pytest.mark.slow


def test_two_processes_judge_like_one(tmp_path) -> None:
    args = (
        "task=mt_bench", "task.limit=6", "model=fake", "judge=fake", "judge.max_invalid=1.0",
        "+judge.replies={Compose: '[[9]]', Draft: '[[4]]', Describe: '[[6]]'}",
        "report.progress=never", "runner.cpu=true",
    )  # fmt: skip
    one = run_mill(*args, f"hydra.run.dir={tmp_path / 'one'}")
    assert one.returncode == 0, one.stderr[-2000:]
    two = run_mill(*args, "runner.num_processes=2", f"hydra.run.dir={tmp_path / 'two'}")
    assert two.returncode == 0, two.stderr[-2000:]
    a = json.loads((tmp_path / "one" / "results.json").read_text())
    b = json.loads((tmp_path / "two" / "results.json").read_text())
    assert a["tasks"] == b["tasks"]
    assert b["judge"]["judgments"]["judgments"] == 12
    assert json.loads((tmp_path / "two" / "manifest.json").read_text())["world_size"] == 2
