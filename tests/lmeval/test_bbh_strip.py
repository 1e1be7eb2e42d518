"""The BBH recipe of docs/real-model.md, as printed: lm-eval's ``bbh_fewshot_*`` tasks through
the bridge on the shared JSON files with the ``remove_whitespace`` filter, each answer scored
without the space it starts with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.lmeval.conftest import SHARED, documented_overrides, needs_lm_eval, needs_shared

pytestmark = [pytest.mark.slow, needs_lm_eval, needs_shared]

TASKS = ("boolean_expressions", "navigate")


def test_documented_bbh_overrides_score_the_stripped_answer(tmp_path: Path) -> None:
    ((doc, text),) = documented_overrides("bbh_fewshot_*")
    assert doc.name == "real-model.md"
    overrides = tmp_path / "bbh_strip.yaml"
    overrides.write_text(text.replace("<folder>", str(SHARED / "data")))
    run = tmp_path / "run"
    proc = run_mill(
        "task=lm_eval",
        f"task.tasks=[{','.join(f'bbh_fewshot_{t}' for t in TASKS)}]",
        f"task.dataset_overrides={overrides}",
        "task.limit=2",
        "model=stories260k",
        f"hydra.run.dir={run}",
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((run / "results.json").read_text())
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
