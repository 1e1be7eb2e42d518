"""Leaderboard tasks through the bridge, offline: ``leaderboard_bbh`` on the original
BIG-Bench-Hard files with its normalised score, and GPQA's ``random.shuffle`` in
``process_docs`` reproducible and equal to lm-eval's under the same seed."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from mill.data.load import DataSource
from tests.lmeval.conftest import (
    SHARED,
    documented_bbh_overrides,
    parity_script,
    run_bridge_on_stories,
    skip_without_lm_eval,
    skip_without_shared,
)

pytestmark = [pytest.mark.slow, skip_without_lm_eval]


@skip_without_shared
def test_leaderboard_bbh_offline_with_normalised_score(tmp_path: Path) -> None:
    # the README's own example, as printed, with its /data/bbh pointing at the shared files
    ((_, text), *_) = documented_bbh_overrides()
    overrides = tmp_path / "bbh.yaml"
    overrides.write_text(text.replace("/data/bbh/", f"{SHARED / 'data' / 'bbh'}/"))
    assert yaml.safe_load(overrides.read_text()) == parity_script().bbh_overrides(SHARED / "data")
    run = tmp_path / "run"
    results = run_bridge_on_stories(["leaderboard_bbh"], overrides, 2, run, timeout=1500)
    assert len(results["tasks"]) == 24
    # issue 26, item 12: the report says where the data came from (not "bundled"), and no
    # interval of a bounded quantity leaves its bounds (n=2 per task)
    page = (run / "report.html").read_text()
    assert "Bundled sample data" not in page and "data=bundled" not in page
    assert "data=lm-eval" in page and "data=lm-eval" in (run / "report.txt").read_text()
    bbh_file = SHARED / "data" / "bbh" / "boolean_expressions.json"
    assert f"leaderboard_bbh_boolean_expressions: lm-eval dataset json, files {bbh_file}" in page
    for body in results["tasks"].values():
        for row in body["metrics"].values():
            assert row["ci_method"] == "wilson" and 0 <= row["ci"][0] <= row["ci"][1] <= 1
    for name, body in results["groups"].items():
        top = 100.0 if name == "leaderboard_normalised" else 1.0
        for both in body["metrics"].values():
            for kind in ("micro", "macro"):
                if kind in both:
                    assert 0 <= both[kind]["ci"][0] <= both[kind]["ci"][1] <= top, name
    group = results["groups"]["leaderboard_bbh"]["metrics"]["acc_norm,none"]["micro"]
    raws = [t["metrics"]["acc_norm,none"]["value"] for t in results["tasks"].values()]
    assert group["value"] == pytest.approx(sum(raws) / len(raws)) and group["n"] == 48
    # the normalisation, recomputed from the subtasks' own answer choices (lm-eval YAMLs)
    import lm_eval

    bbh_dir = Path(lm_eval.__file__).parent / "tasks" / "leaderboard" / "bbh_mc"
    normalised = []
    for name, body in results["tasks"].items():
        config = yaml.safe_load(
            (bbh_dir / f"{name.removeprefix('leaderboard_bbh_')}.yaml").read_text()
        )
        k = len(config["doc_to_choice"])
        raw = body["metrics"]["acc_norm,none"]["value"]
        normalised.append(max(0.0, (raw - 1 / k) / (1 - 1 / k)) * 100)
    details = results["groups"]["leaderboard_normalised"]
    row = details["metrics"]["leaderboard_bbh (normalised)"]["macro"]
    assert row["value"] == pytest.approx(sum(normalised) / len(normalised))
    assert "normalization" in details["source"]
    assert "overall (normalised)" not in details["metrics"]  # only one of the six ran
    # the first BBH example is the shared file's first example, with the YAML's 3 shots
    first = json.loads(
        (run / "samples" / "leaderboard_bbh_boolean_expressions.jsonl").read_text().splitlines()[0]
    )
    source = json.loads((SHARED / "data" / "bbh" / "boolean_expressions.json").read_text())
    assert first["extra"]["lm_eval"]["doc"]["input"] == source["examples"][0]["input"]
    assert first["response"]["input"].count("A:") == 4


def _gpqa_rows(n: int = 12) -> list[dict[str, str]]:
    return [
        {
            "Question": f"Which option is number {i}?",
            "Correct Answer": f"the right one {i}",
            "Incorrect Answer 1": f"wrong one {i}",
            "Incorrect Answer 2": f"wrong two {i}",
            "Incorrect Answer 3": f"wrong three {i}",
        }
        for i in range(n)
    ]


def _order(doc: dict[str, Any]) -> tuple[str, ...]:
    return (doc["choice1"], doc["choice2"], doc["choice3"], doc["choice4"], doc["answer"])


def _lm_eval_docs(manager: Any, task: str, seed: int) -> list[tuple[str, ...]]:
    """lm-eval's own sequence, as ``simple_evaluate``: seed, load, build the requests."""
    import numpy as np

    random.seed(seed)
    np.random.seed(1234)
    loaded = manager.load([task])["tasks"][task]
    loaded.set_config(key="num_fewshot", value=0)
    loaded.set_fewshot_seed(seed=1234)
    loaded.build_all_requests()
    by_doc = {i.doc_id: i.doc for i in loaded.instances}
    return [_order(by_doc[k]) for k in sorted(by_doc)]


def _mill_docs(task: str, overrides: dict[str, Any], seed: int) -> list[tuple[str, ...]]:
    from mill.lm_eval.bridge import LMEvalSuite

    suite = LMEvalSuite(tasks=[task], dataset_overrides=overrides, random_seed=seed)
    (bridged,) = suite.tasks
    return [_order(d.item) for d in bridged.docs(DataSource("bundled"))]


def test_gpqa_shuffle_reproducible_and_equal_to_lm_eval(tmp_path: Path) -> None:
    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._index import TaskIndex

    from mill.lm_eval.overrides import write_overrides

    tasks = ["leaderboard_gpqa_main", "leaderboard_gpqa_diamond", "leaderboard_gpqa_extended"]
    overrides = {}
    for n, task in enumerate(tasks):  # one fresh file (fresh datasets cache) per scenario
        folder = tmp_path / f"data{n}"
        folder.mkdir()
        lines = "\n".join(json.dumps(r) for r in _gpqa_rows())
        (folder / "gpqa.jsonl").write_text(lines + "\n")
        overrides[task] = {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {"train": str(folder / "gpqa.jsonl")}},
        }
    manager = TaskManager()
    (tmp_path / "yaml").mkdir()
    write_overrides(manager, overrides, tmp_path / "yaml")
    manager._index.update(TaskIndex().build([tmp_path / "yaml"]))

    # lm-eval first, then Mill on its datasets cache
    theirs = _lm_eval_docs(manager, tasks[0], seed=0)
    random.seed(7)  # whatever state the caller left: the bridge applies lm-eval's seeding
    ours = _mill_docs(tasks[0], {tasks[0]: overrides[tasks[0]]}, seed=0)
    assert ours == theirs
    # Mill first on a fresh file, then lm-eval: the same order again (the seed decides)
    random.seed(99)
    ours_fresh = _mill_docs(tasks[1], {tasks[1]: overrides[tasks[1]]}, seed=0)
    assert ours_fresh == _lm_eval_docs(manager, tasks[1], seed=0) == theirs
    # another seed on a fresh file shuffles differently; the answer still follows the text
    other = _mill_docs(tasks[2], {tasks[2]: overrides[tasks[2]]}, seed=1)
    assert other != theirs
    for row in other:
        assert row[ord(row[4][1]) - ord("A")].startswith("the right one")
    shutil.rmtree(tmp_path / "yaml")
