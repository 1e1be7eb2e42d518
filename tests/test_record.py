"""The samples file's formats: every reader reads format 1 (whole prompts and token ids, the
runs in ``tests/support/format1`` were written by Mill before the compact format) and
format 2 (compact), and refuses a format it does not know in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mill.data.load import bundled_data_dir
from mill.errors import MillError
from mill.files import sha256_file, write_json
from mill.record import SAMPLES_FORMAT, compact_lines, expand_lines
from mill.results import ResultsError, load, read_samples
from tests.helpers import run_mill

FORMAT1 = Path(__file__).parent / "support" / "format1"


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FORMAT1 / name, tmp_path / name))


def _resign(run: Path, task: str) -> None:
    """Record a changed samples file's SHA-256 as the run's own (what a run of a newer Mill
    would have written), so the integrity check lets it through to the format check."""
    results = json.loads((run / "results.json").read_text())
    results["samples_sha256"][task] = sha256_file(run / "samples" / f"{task}.jsonl")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["results_sha256"] = write_json(run / "results.json", results)
    write_json(run / "manifest.json", manifest)


def test_format1_runs_read_whole_with_their_token_ids() -> None:
    run = load(FORMAT1 / "arc_easy")
    records = run.samples("arc_easy")
    assert len(records) == 4
    raw = [json.loads(line) for line in run.samples_path("arc_easy").read_text().splitlines()]
    assert not any("format" in row for row in raw)
    for record, row in zip(records, raw, strict=True):
        assert record.response.input == row["response"]["input"]
        assert record.response.input_tokens == row["response"]["input_tokens"] != []
    (judged,) = load(FORMAT1 / "judged").samples("judged")[:1]
    assert judged.response.text


def test_compact_lines_read_back_as_the_lines_they_came_from() -> None:
    prefix = "Examples.\n\n" + "Q?\nA: yes\n\n" * 40
    rows = [
        {"subject": s, "doc_id": i, "fewshot_ids": [0], "response": {"input": prefix + f"{s}{i}"}}
        for s in ("a", "b")
        for i in range(3)
    ]
    lines = compact_lines(rows)
    assert [line["format"] for line in lines] == [SAMPLES_FORMAT] * 6
    holders = [line for line in lines if line["response"]["input"].startswith(prefix)]
    assert [(h["subject"], h["doc_id"]) for h in holders] == [("a", 0), ("b", 0)]
    back = expand_lines(lines, Path("x.jsonl"))
    assert [{k: v for k, v in line.items() if k != "format"} for line in back] == rows


def _second_line_format_99(run: Path) -> Path:
    """The run's arc_easy samples file, its second line marked format 99."""
    path = run / "samples" / "arc_easy.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = json.dumps({"format": 99, **json.loads(lines[1])})
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_samples_file_of_an_unknown_format_is_one_line(tmp_path: Path) -> None:
    path = _second_line_format_99(_copy("arc_easy", tmp_path))
    with pytest.raises(ResultsError, match=r"arc_easy.jsonl:2 is samples format 99; this Mill"):
        read_samples(path)


@pytest.mark.slow
def test_mill_report_refuses_an_unknown_format_in_one_line(tmp_path: Path) -> None:
    run = _copy("arc_easy", tmp_path)
    _second_line_format_99(run)
    _resign(run, "arc_easy")
    proc = run_mill("report", f"runs=[{run}]", f"out={tmp_path / 'out'}")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("mill: ") and "is samples format 99" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_report_and_compare_read_a_format1_run(tmp_path: Path) -> None:
    old = _copy("arc_easy", tmp_path)
    proc = run_mill("report", f"runs=[{old}]", f"out={tmp_path / 'report'}")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report" / "report.html").is_file()
    new = tmp_path / "new"
    proc = run_mill("task=arc_easy", "model=fake", "task.limit=4", f"hydra.run.dir={new}")
    assert proc.returncode == 0, proc.stderr
    assert all(json.loads(x)["format"] == 2 for x in (new / "samples/arc_easy.jsonl").open())
    proc = run_mill("compare", f"a={old}", f"b={new}", f"out={tmp_path / 'cmp'}")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())


@pytest.mark.slow
def test_judge_reads_the_answers_of_a_format1_run(tmp_path: Path) -> None:
    source = _copy("judged", tmp_path)
    # the fixture's run read the bundled questions from the checkout it was written in
    # (/tmp/compact_m/mainsnap): point its configuration at this checkout's copy
    config = source / "resolved.yaml"
    written = "/tmp/compact_m/mainsnap/mill/resources/data/judged/questions.jsonl"
    here = bundled_data_dir() / "judged" / "questions.jsonl"
    assert written in config.read_text() and here.is_file()
    config.write_text(config.read_text().replace(written, str(here)))
    out = tmp_path / "judged_again"
    judge = ["judge=fake", "judge.answer='[[7]]'"]
    proc = run_mill("judge", f"run={source}", *judge, f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["tasks"]["judged"]["metrics"]["judge_score"]["value"] == 7.0


@pytest.mark.slow
def test_a_format1_cache_answers_a_compact_run_and_resumes_it(tmp_path: Path) -> None:
    """The response cache of a format-1 run (prompt token ids in every entry) answers a run
    of today's Mill: every request from the cache, the same metrics, compact samples."""
    old = _copy("arc_easy", tmp_path)
    new = tmp_path / "new"
    args = ["task=arc_easy", "model=fake", "task.limit=4", f"runner.cache={old / 'cache'}"]
    proc = run_mill(*args, f"hydra.run.dir={new}")
    assert proc.returncode == 0, proc.stderr
    assert "responses: 16 from the cache, 0 computed" in (new / "mill.log").read_text()
    metrics = [load(run).results.tasks["arc_easy"].metrics for run in (old, new)]
    assert metrics[0] == metrics[1]
    before = [(r.doc_id, r.response.input, r.metrics) for r in load(old).samples("arc_easy")]
    after = [(r.doc_id, r.response.input, r.metrics) for r in load(new).samples("arc_easy")]
    assert after == before


def test_an_input_from_that_names_no_prompt_is_one_line() -> None:
    rows = [
        {
            "format": 2,
            "subject": "a",
            "doc_id": 1,
            "response": {"input_from": {"doc_id": 0, "chars": 3}, "input": "x"},
        }
    ]
    with pytest.raises(MillError, match=r"x.jsonl:1: response.input_from .* names no prompt"):
        expand_lines(rows, Path("x.jsonl"))
