"""A whole run in process on the fake model: the experiment folder, its report and its
numbers, without torch or a real model (the fast tier's end-to-end test)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonlines
import pytest

from mill.errors import ExperimentExists
from mill.report.numbers import number
from mill.runner.job import run_job


def _run(compose, folder: Path, *overrides: str) -> dict:
    """The run's results as written to results.json."""
    cfg = compose("model=fake", "task.limit=12", "report.progress=never", *overrides)
    results = run_job(cfg, folder)
    assert results is not None
    return results.to_dict()


def test_a_run_writes_a_complete_folder_and_a_report_of_its_numbers(
    compose, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    results = _run(compose, folder, "task=arc")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["model"]["class"] == "FakeLM"
    assert json.loads((folder / "results.json").read_text()) == results
    for task in ("arc_easy", "arc_challenge"):
        with jsonlines.open(folder / "samples" / f"{task}.jsonl") as reader:
            rows = list(reader)
        acc = results["tasks"][task]["metrics"]["acc"]
        assert [r["doc_id"] for r in rows] == list(range(12)) == list(range(acc["n"]))
        assert sum(r["metrics"]["acc"] for r in rows) / 12 == pytest.approx(acc["value"])
        for r in rows:  # each metric's own pick explains its verdict; acc's is the prediction
            assert set(r["picks"]) == {"acc", "acc_norm"} and r["picks"]["acc"] == r["prediction"]
            assert all(r["metrics"][m] == float(r["picks"][m] == r["gold"]) for m in r["picks"])
    assert not list(folder.glob("samples/*.partial.jsonl"))
    html = (folder / "report.html").read_text()
    table = (folder / "report.txt").read_text()
    for task, body in results["tasks"].items():
        for metric, row in body["metrics"].items():
            assert f'<td class="num">{number(row["value"])}</td>' in html, (task, metric)
            assert number(row["value"]) in table and number(row["stderr"]) in table
    plots = sorted(p.name for p in (folder / "plots").iterdir())
    assert plots == ["calibration_arc_challenge.png", "calibration_arc_easy.png", "scores.png"]


def test_same_settings_same_numbers_and_a_finished_folder_is_never_overwritten(
    compose, tmp_path: Path
) -> None:
    first = _run(compose, tmp_path / "a", "task=wikitext")
    again = _run(compose, tmp_path / "b", "task=wikitext")
    assert first["tasks"] == again["tasks"]
    other = _run(compose, tmp_path / "c", "task=wikitext", "model.seed=1")
    assert other["tasks"] != first["tasks"]
    before = (tmp_path / "a" / "results.json").read_bytes()
    with pytest.raises(ExperimentExists):
        _run(compose, tmp_path / "a", "task=wikitext")
    assert (tmp_path / "a" / "results.json").read_bytes() == before
