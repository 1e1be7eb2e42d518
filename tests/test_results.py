"""The typed results schema: what the writer writes is what every reader reads."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mill
from mill.experiment.folder import write_json
from mill.report.load import RunFolder
from mill.results import SCHEMA_VERSION, Manifest, Results, ResultsError, schema_markdown
from mill.runner.job import run_job
from mill.runner.sweep import summarize
from tests.helpers import REPO


@pytest.fixture(scope="module")
def group_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Results]:
    """task=arc (ARC-Easy + ARC-Challenge, a task group), 2 docs each, in process, on the
    fake model (the schema is the point, not the scores)."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    import mill.cli  # noqa: F401

    GlobalHydra.instance().clear()
    with initialize_config_module("mill.conf", version_base="1.3"):
        cfg = compose(
            "mill", overrides=["task=arc", "model=fake", "task.limit=2", "report.progress=never"]
        )
    GlobalHydra.instance().clear()
    folder = tmp_path_factory.mktemp("results") / "run"
    results = run_job(cfg, folder)
    assert results is not None
    return folder, results


def test_results_json_is_exactly_to_dict(group_run, tmp_path: Path) -> None:
    folder, results = group_run
    raw = (folder / "results.json").read_text()
    data = json.loads(raw)
    assert next(iter(data)) == "schema_version" and data["schema_version"] == SCHEMA_VERSION
    assert Results.from_dict(data) == results
    write_json(tmp_path / "again.json", Results.from_dict(data).to_dict())
    assert (tmp_path / "again.json").read_text() == raw  # byte for byte
    group = results.groups["arc"]
    assert group.tasks == ["arc_easy", "arc_challenge"] and group.metrics["acc"].micro.n == 4
    assert results.tasks["arc_easy"].metrics["acc"].higher_is_better is True
    assert group.metrics["acc"].micro.higher_is_better is None  # not in the file's rows


def test_every_reader_sees_the_same_numbers(group_run) -> None:
    folder, results = group_run
    run = mill.load(folder)
    assert run.results == results
    assert run.manifest.status == "succeeded" and run.manifest.world_size == 1
    samples = run.samples("arc_easy")
    assert [s.doc_id for s in samples] == [0, 1]
    assert sum(s.metrics["acc"] for s in samples) / 2 == results.metric("arc_easy", "acc").value
    report = RunFolder.open(folder)
    assert report.results == results and report.manifest == run.manifest
    scores = {(s.row_name, s.metric): s.value for s in report.scores()}
    assert scores[("arc (micro)", "acc")] == results.groups["arc"].metrics["acc"].micro.value
    summary = summarize(folder.parent)
    (job,) = summary["jobs"]
    assert job["metrics"]["arc_easy"]["acc"]["value"] == results.metric("arc_easy", "acc").value


def test_results_before_schema_version_read_as_version_1(group_run) -> None:
    data = json.loads((group_run[0] / "results.json").read_text())
    del data["schema_version"]
    assert Results.from_dict(data).schema_version == 1


def test_newer_schema_is_refused_with_one_line() -> None:
    with pytest.raises(ResultsError, match="schema_version 99 is newer"):
        Results.from_dict({"schema_version": 99})


def test_every_reader_refuses_a_newer_schema_in_one_line(group_run, tmp_path: Path) -> None:
    """A results.json from a newer Mill: mill.load, report/compare and the sweep summary
    each say which version and what to do, instead of misreading it."""
    import shutil

    from mill.report.load import ReportInputError

    folder = tmp_path / "sweep" / "0_arc"
    shutil.copytree(group_run[0], folder)
    data = json.loads((folder / "results.json").read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    (folder / "results.json").write_text(json.dumps(data))
    newer = f"schema_version {SCHEMA_VERSION + 1} is newer than this Mill reads"
    with pytest.raises(ResultsError, match=newer):
        mill.load(folder)
    with pytest.raises(ReportInputError, match=newer) as caught:
        RunFolder.open(folder)
    assert "\n" not in str(caught.value) and "upgrade mill-eval" in str(caught.value)
    (job,) = summarize(folder.parent)["jobs"]
    assert job["status"] == "failed" and job["metrics"] == {}
    assert newer in job["error"] and job["error"].startswith("results.json is unreadable")


def test_a_sample_line_that_is_not_a_record_names_file_and_line(group_run, tmp_path) -> None:
    import shutil

    from mill.report.load import ReportInputError

    folder = tmp_path / "run"
    shutil.copytree(group_run[0], folder)
    path = folder / "samples" / "arc_easy.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], json.dumps({"doc_id": 1})]) + "\n")
    with pytest.raises(ResultsError, match=f"{path}:2 is not a sample record"):
        with pytest.warns(UserWarning, match="read with trust_edited"):
            run = mill.load(folder, trust_edited=True)
        run.samples("arc_easy")
    with pytest.raises(ReportInputError, match=f"{path}:2 is not a sample record"):
        RunFolder.open(folder, trust_edited=True).samples("arc_easy")


def test_manifest_keeps_keys_it_does_not_name() -> None:
    data = {"status": "failed", "error": "boom", "argv": ["mill"], "new": 1}
    manifest = Manifest.from_dict(data)
    assert manifest.extra == {"new": 1} and manifest.to_dict() == data


@pytest.mark.slow
def test_schema_doc_is_generated_from_the_types() -> None:
    doc = (REPO / "docs" / "results-schema.md").read_text()
    assert doc == schema_markdown(), "regenerate: python -m mill.results > docs/results-schema.md"
    out = subprocess.run(
        [sys.executable, "-m", "mill.results"], capture_output=True, text=True, check=True
    )
    assert out.stdout == doc


def test_a_group_with_one_aggregate_round_trips() -> None:
    """lm-eval groups (task=lm_eval) report micro or macro, as their config says."""
    body = {
        "tasks": ["a", "b"],
        "metrics": {
            "acc,none": {"macro": {"value": 0.5, "stderr": 0.1, "n": 2}, "higher_is_better": True}
        },
    }
    results = Results.from_dict({"tasks": {}, "groups": {"g": body}})
    assert results.to_dict()["groups"]["g"] == body
    assert results.flat() == {"g/acc,none_macro": 0.5, "g/acc,none_macro_stderr": 0.1}


def _set_every_acc_to_1(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["metrics"]["acc"] = 1.0
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_results_record_the_checksums_of_what_the_run_wrote(group_run) -> None:
    import hashlib

    folder, results = group_run
    manifest = Manifest.read(folder / "manifest.json")
    digest = hashlib.sha256((folder / "results.json").read_bytes()).hexdigest()
    assert manifest.results_sha256 == digest
    assert set(results.samples_sha256) == {"arc_easy", "arc_challenge"}
    for task, recorded in results.samples_sha256.items():
        data = (folder / "samples" / f"{task}.jsonl").read_bytes()
        assert hashlib.sha256(data).hexdigest() == recorded
    assert mill.load(folder).edited == []


def test_edited_samples_are_refused_unless_trusted(group_run, tmp_path: Path) -> None:
    """Issue 26, item 5: every acc set to 1 in a samples file is seen by mill.load and by
    report/compare's reader, refused in one line; trust_edited reads it and says so."""
    import shutil

    from mill.report.load import ReportInputError
    from mill.results import EditedResults

    folder = tmp_path / "run"
    shutil.copytree(group_run[0], folder)
    _set_every_acc_to_1(folder / "samples" / "arc_easy.jsonl")
    with pytest.raises(EditedResults) as caught:
        mill.load(folder)
    message = str(caught.value)
    assert "\n" not in message and "samples/arc_easy.jsonl changed after the run" in message
    assert "trust_edited=True" in message
    with pytest.raises(ReportInputError, match="samples/arc_easy.jsonl changed") as caught:
        RunFolder.open(folder)
    assert "trust_edited=true" in str(caught.value)
    with pytest.warns(UserWarning, match="read with trust_edited: samples/arc_easy.jsonl"):
        run = mill.load(folder, trust_edited=True)
    assert run.edited == ["samples/arc_easy.jsonl"]
    assert all(s.metrics["acc"] == 1.0 for s in run.samples("arc_easy"))
    opened = RunFolder.open(folder, trust_edited=True)
    assert opened.edited_note is not None and "they are the run's own results" in opened.edited_note


def test_edited_or_missing_files_are_named(group_run, tmp_path: Path) -> None:
    import shutil

    from mill.results import EditedResults, edited_files

    folder = tmp_path / "run"
    shutil.copytree(group_run[0], folder)
    raw = (folder / "results.json").read_text()
    (folder / "results.json").write_text(raw.replace('"seconds"', '"seconds" ', 1))
    (folder / "samples" / "arc_challenge.jsonl").unlink()
    with pytest.raises(EditedResults, match="results.json, samples/arc_challenge.jsonl changed"):
        mill.load(folder)
    results = Results.read(folder / "results.json")
    manifest = Manifest.read(folder / "manifest.json")
    assert edited_files(folder, results, manifest) == [
        "results.json",
        "samples/arc_challenge.jsonl",
    ]


@pytest.mark.parametrize(
    "strip",
    ["samples_sha256", "results_sha256", "both", "one_task", "schema_version", "manifest"],
)
def test_a_run_lacking_its_checksums_is_treated_as_edited(group_run, tmp_path: Path, strip):
    """Issue 35, item 2: checksums deleted from results.json and manifest.json (or a
    schema_version set back to 1, or the manifest removed) do not make a folder read as
    unedited: refused in one line naming what is missing; trust_edited reads it, flagged."""
    import shutil

    from mill.report.load import ReportInputError
    from mill.results import EditedResults

    folder = tmp_path / "run"
    shutil.copytree(group_run[0], folder)
    data = json.loads((folder / "results.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    if strip in ("samples_sha256", "both"):
        del data["samples_sha256"]
    if strip in ("results_sha256", "both"):
        del manifest["results_sha256"]
    if strip == "one_task":
        del data["samples_sha256"]["arc_easy"]
    if strip == "schema_version":
        del data["schema_version"]
    (folder / "results.json").write_text(json.dumps(data))
    manifest["results_sha256"] = (
        manifest.get("results_sha256")
        and hashlib.sha256((folder / "results.json").read_bytes()).hexdigest()
    )
    (folder / "manifest.json").write_text(json.dumps(manifest))
    if strip == "manifest":
        (folder / "manifest.json").unlink()
    expected = {
        "samples_sha256": "results.json (no samples_sha256 for arc_easy)",
        "results_sha256": "manifest.json (no results_sha256)",
        "both": "manifest.json (no results_sha256)",
        "one_task": "results.json (no samples_sha256 for arc_easy)",
        "schema_version": "results.json (schema_version 1: no checksums recorded)",
        "manifest": "manifest.json (no results_sha256)",
    }[strip]
    with pytest.raises(EditedResults) as caught:
        mill.load(folder)
    message = str(caught.value)
    assert "\n" not in message and expected in message and "trust_edited=True" in message
    assert "lacks the checksums a finished run records" in message
    if strip != "manifest":  # the report's reader refuses an unfinished folder first
        with pytest.raises(ReportInputError, match=re.escape(expected)):
            RunFolder.open(folder)
    with pytest.warns(UserWarning, match="read with trust_edited"):
        run = mill.load(folder, trust_edited=True)
    assert expected in run.edited


def test_data_source_names_what_was_read(tmp_path: Path) -> None:
    """Issue 35, item 5: a run whose test split came from ``task.dataset.data_files`` (or a
    bridged task's ``dataset_kwargs``) said ``data=bundled`` in results.json and its header."""
    from mill.data.load import bundled_data_dir

    bundled = bundled_data_dir() / "arc_easy" / "ARC-Easy-Test.jsonl"
    mine = tmp_path / "mine.jsonl"
    mine.write_text("".join(bundled.read_text().splitlines(keepends=True)[:3]))
    out = tmp_path / "run"
    overrides = [f"+task.dataset.data_files.test={mine}", "task.limit=2", "runner.cache=false"]
    results = mill.evaluate("arc_easy", "fake", overrides=overrides, output_dir=out)
    written = json.loads((out / "results.json").read_text())["data_source"]
    assert written["source"] == "files" and written["option"] == "bundled"
    assert written["tasks"] == {"arc_easy": f"files {mine}"}
    assert results.bundled_tasks() == [] and results.data_label == "files"
    assert (out / "report.txt").read_text().splitlines()[0].strip().endswith("data=files")
    plain = mill.evaluate("arc_easy", "fake", overrides=["task.limit=2", "runner.cache=false"])
    assert plain.data_source.tasks == {"arc_easy": "bundled"} and plain.data_label == "bundled"
    assert plain.bundled_tasks() == ["arc_easy"]
    # a bridged task: lm-eval's dataset, or the user's files through its dataset_kwargs
    lm = {"dataset_path": "json", "dataset_name": None, "dataset_kwargs": None}
    bridged = Results.from_dict(
        {
            "tasks": {"t": {"metrics": {}, "data": {"lm_eval": lm}}},
            "data_source": {"source": "bundled"},
        }
    )
    assert bridged.data_origin("t") == "lm-eval dataset json" and bridged.data_label == "lm-eval"
    lm["dataset_kwargs"] = {"data_files": {"test": "/data/mine.jsonl"}}
    bridged = Results.from_dict(
        {
            "tasks": {"t": {"metrics": {}, "data": {"lm_eval": lm}}},
            "data_source": {"source": "bundled"},
        }
    )
    assert bridged.data_origin("t") == "lm-eval dataset json, files /data/mine.jsonl"
    assert bridged.data_label == "lm-eval" and bridged.bundled_tasks() == []
