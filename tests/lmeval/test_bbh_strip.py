"""The BBH recipe of docs/real-model.md, as printed: lm-eval's ``bbh_fewshot_*`` tasks through
the bridge on the shared JSON files with the ``remove_whitespace`` filter, each answer scored
without the space it starts with."""

from __future__ import annotations

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

TASKS = ("boolean_expressions", "navigate")


def test_documented_bbh_overrides_score_the_stripped_answer(tmp_path: Path) -> None:
    run = tmp_path / "run"
    overrides = documented_recipe("bbh_fewshot_*", tmp_path, SHARED / "data")
    tasks = [f"bbh_fewshot_{t}" for t in TASKS]
    results = run_bridge_on_stories(tasks, overrides, 2, run, timeout=900)
    for task in TASKS:
        name = f"bbh_fewshot_{task}"
        assert set(results["tasks"][name]["metrics"]) == {"exact_match,strip"}
        rows = json.loads((SHARED / "data" / "bbh" / f"{task}.json").read_text())["examples"]
        samples = [json.loads(line) for line in (run / "samples" / f"{name}.jsonl").open()]
        assert len(samples) == 2
        for sample in samples:
            assert sample["gold"] == rows[sample["doc_id"]]["target"]
            (raw,) = sample["response"]["text"]
            (answer,) = sample["extra"]["lm_eval"]["filtered_resps"]["strip"]
            assert answer == raw.lstrip()
            assert sample["metrics"]["exact_match,strip"] == float(answer == sample["gold"])
