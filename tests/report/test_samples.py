"""samples.html: every sample of a run, embedded as JSON in a static page beside report.html
(in process on the fake model; the page's behaviour in Chromium: test_samples_browser.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mill.report.load import ReportInputError, RunFolder
from mill.report.samples import embedded_json, page_data, write_samples_page
from mill.runner.job import run_job


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """A run of a multiple-choice task with subjects, a 5-shot one and a generative one."""
    from mill.cli import task_lists
    from tests.helpers import compose_config

    folder = tmp_path_factory.mktemp("samples") / "run"
    argv = ["model=fake", "task=[arc_easy,mmlu,gsm8k]", "task.limit=4", "report.progress=never"]
    argv.append("task.mmlu.subjects=[anatomy,virology]")
    cfg = compose_config(*task_lists(argv))
    assert run_job(cfg, folder) is not None
    return RunFolder.open(folder)


def _embedded(page: str) -> dict:
    found = re.search(
        r'<script type="application/json" id="mill-samples">(.*?)</script>', page, re.S
    )
    assert found is not None
    return json.loads(found.group(1))


def test_the_run_writes_the_page_and_its_report_links_it(run: RunFolder) -> None:
    page = (run.path / "samples.html").read_text()
    assert "href='samples.html'" in (run.path / "report.html").read_text()
    data = _embedded(page)
    assert data == json.loads(json.dumps(page_data(run)))  # what the page holds, read back
    assert "fetch(" not in page and "http" not in page.split("<script>", 1)[1]  # offline


def test_every_sample_is_on_the_page_with_its_prompt_exactly(run: RunFolder) -> None:
    data = page_data(run)
    rows = data["rows"]
    records = [r for task in run.task_names for r in run.samples(task)]
    assert len(rows) == len(records) == sum(len(run.samples(t)) for t in run.task_names)
    by_key = {(data["tasks"][r["t"]], r["s"], r["d"]): r for r in rows}
    for record in records:
        row = by_key[(record.task, record.subject, record.doc_id)]
        prefix, rest = row["q"]
        assert data["prefixes"][prefix] + rest == record.response.input  # as the model saw it
        assert row["m"] == record.metrics and row["g"] == record.gold
        if record.choices:  # each likelihood metric's own pick, with every log-likelihood
            picking = {m for m in ("acc", "acc_norm") if m in record.metrics}
            assert row["p"] == record.picks and set(row["p"]) == picking
            assert row["l"] == record.response.logprobs and row["c"] == record.choices
        else:
            assert row["o"] == record.response.text
            assert row["pp"] == record.response.text_post_processed
            assert row["x"] == record.prediction and row["h"] == record.response.hit_max_gen_toks
    # MMLU's 5 shots are the same for every question of a subject: stored once
    assert any(len(p) > 1000 for p in data["prefixes"])
    assert data["binary"]["arc_easy"] == ["acc", "acc_norm"]
    assert "exact_match_strict" in data["binary"]["gsm8k"]


def test_a_file_written_before_picks_shows_the_prediction_as_accs(run: RunFolder) -> None:
    record = run.samples("arc_easy")[0]
    record.picks = None
    from mill.report.samples import sample_row

    assert sample_row(record, 0, 0, 0)["p"] == {"acc": record.prediction}


def test_no_text_in_a_sample_can_close_the_script() -> None:
    text = embedded_json({"q": "</script><script>alert(1)</script><!--"})
    assert "<" not in text and json.loads(text) == {"q": "</script><script>alert(1)</script><!--"}


def test_a_run_without_its_samples_is_one_line(run: RunFolder, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run.path, copy)
    (copy / "samples" / "gsm8k.jsonl").unlink()
    opened = RunFolder.open(copy, trust_edited=True)
    before = (copy / "samples.html").read_bytes()
    with pytest.raises(ReportInputError, match=r"gsm8k\.jsonl is missing: .* no samples to show"):
        write_samples_page(opened, copy)
    assert (copy / "samples.html").read_bytes() == before  # nothing half-written
