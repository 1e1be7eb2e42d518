"""``mill compare`` on code runs: pass@k paired problem by problem (McNemar on pass@1), the
problems passing in one run only named by their ids, and a list-of-k metric rebuilt."""

from __future__ import annotations

import json
from pathlib import Path

import jsonlines
import pytest
from omegaconf import OmegaConf

from mill.report.compare import compare_command
from tests.helpers import sample_record, write_finished_run

SETTINGS = {
    "name": "humaneval",
    "class": "mill.tasks.humaneval.HumanEval",
    "output_type": "generative",
    "limit": None,
}
A_PASSES = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
B_PASSES = [1, 0, 1, 1, 1, 1, 1, 1, 1, 1]


def _write_run(path: Path, passes: list[int], metrics_cfg: dict | None = None) -> Path:
    (path / "samples").mkdir(parents=True)
    rows = []
    for i, ok in enumerate(passes):
        record = sample_record(
            i, task="humaneval", doc_hash=f"doc{i}",
            metrics={"pass_at_k@1": float(ok), "pass_at_k@2": float(ok)},
        )  # fmt: skip
        record.execution = [{"status": "passed" if ok else "failed", "message": "" if ok else
                             "AssertionError", "duration_s": 0.1, "output_tail": ""}]  # fmt: skip
        record.extra = {"item_id": f"HumanEval/{i}"}
        rows.append(record.to_json())
    with jsonlines.open(path / "samples" / "humaneval.jsonl", "w") as out:
        out.write_all(rows)
    metric = {"value": 0.5, "stderr": 0.1, "n": len(rows), "higher_is_better": True}
    results = {
        "tasks": {
            "humaneval": {
                "metrics": {"pass_at_k@1": metric, "pass_at_k@2": metric},
                "settings": SETTINGS,
                "data": {},
            }
        },
        "groups": {},
        "model": {"class": "ReplayLM", "completions_sha256": path.name},
        "data_source": {"source": "local"},
    }
    write_finished_run(path, results)
    config = {"metrics": metrics_cfg} if metrics_cfg else {}
    (path / "resolved.yaml").write_text(OmegaConf.to_yaml(config))
    return path


def test_code_runs_pair_problem_by_problem(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pass_at_k = {"_target_": "mill.metrics.PassAtK", "k": [1, 2]}
    a = _write_run(tmp_path / "a", A_PASSES, {"pass_at_k": pass_at_k})
    b = _write_run(tmp_path / "b", B_PASSES, {"pass_at_k": pass_at_k})
    out = tmp_path / "cmp"
    cfg = OmegaConf.create(
        {"a": str(a), "b": str(b), "iters": 200, "seed": 1, "alpha": 0.05, "out": str(out),
         "tasks": None, "ignore_settings": [], "progress": "never"}
    )  # fmt: skip
    compare_command(cfg)
    blob = json.loads((out / "compare.json").read_text())
    rows = {r["metric"]: r for r in blob["rows"]}
    # each part of the list-of-k metric rebuilt from the run's config; 0/1: McNemar
    assert rows["pass_at_k@1"]["test"] == "McNemar" and "pass_at_k@2" in rows
    assert (rows["pass_at_k@1"]["n10"], rows["pass_at_k@1"]["n01"]) == (1, 3)
    assert blob["problems"]["humaneval"] == {
        "passed_only_in_a": ["HumanEval/1"],
        "passed_only_in_b": ["HumanEval/2", "HumanEval/4", "HumanEval/7"],
    }
    printed = capsys.readouterr().out
    assert "only in B" in printed and "HumanEval/7" in printed
