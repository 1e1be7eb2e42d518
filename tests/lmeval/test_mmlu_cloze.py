"""The MMLU cloze recipe of docs/real-model.md, as printed: lm-eval's ``mmlu_*_continuation``
tasks through the bridge on the shared CSV files, each question scored by its answers' text
after lm-eval's continuation prompt; college mathematics' ninth question has the answer
"None", which reads as text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from benchmarks.driver_common import documented_recipe
from tests.lmeval.conftest import (
    SHARED,
    run_bridge_on_stories,
    skip_without_lm_eval,
    skip_without_shared,
)

pytestmark = [pytest.mark.slow, skip_without_lm_eval, skip_without_shared]

SUBJECTS = ("abstract_algebra", "college_mathematics", "world_religions")
LIMIT = 9  # college_mathematics doc 8: its first answer is "None"


def test_documented_mmlu_cloze_overrides_score_the_answers_text(tmp_path: Path) -> None:
    run = tmp_path / "run"
    tasks = [f"mmlu_{s}_continuation" for s in SUBJECTS]
    overrides = documented_recipe("mmlu_*_continuation", tmp_path, SHARED / "data")
    results = run_bridge_on_stories(tasks, overrides, LIMIT, run, timeout=900)
    assert sorted(results["tasks"]) == sorted(f"mmlu_{s}_continuation" for s in SUBJECTS)
    for subject in SUBJECTS:
        with open(SHARED / "data" / "mmlu" / "test" / f"{subject}_test.csv", newline="") as f:
            rows = list(csv.DictReader(f))[:LIMIT]
        samples = [
            json.loads(line)
            for line in (run / "samples" / f"mmlu_{subject}_continuation.jsonl").open()
        ]
        assert len(samples) == LIMIT
        for sample in samples:
            row = rows[sample["doc_id"]]
            assert sample["choices"] == [row[f"choice{i}"] for i in range(4)]
            assert sample["gold"] == int(row["answer"])
            heading = subject.replace("_", " ")
            assert sample["response"]["input"] == (
                f"The following are questions (with answers) about {heading}.\n\n"
                f"Question: {row['question'].strip()}\nAnswer:"
            )
            assert set(sample["metrics"]) == {"acc,none", "acc_norm,none"}
    math = run / "samples" / "mmlu_college_mathematics_continuation.jsonl"
    by_doc = {s["doc_id"]: s for s in map(json.loads, math.open())}
    assert by_doc[8]["choices"][0] == "None"
