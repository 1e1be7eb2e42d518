"""``mill -cn report`` of a judged run rebuilds the run's own report: report.txt's judge
lines (who judged, its identity, the rubrics' hashes, invalid judgments, position bias)
and report.html's judge section, from results.json and the manifest alone (in process,
fake model and scripted fake judge)."""

from __future__ import annotations

import re
from pathlib import Path

from omegaconf import OmegaConf

from mill.report.rebuild import report_command
from mill.runner.job import run_job
from tests.helpers import write_jsonl

# "B's Answer]\nBASE" is the candidate-first order, "A's Answer]\nBASE" the swapped one; a
# single-answer prompt (judge_score) holds neither and gets the default reply
SCRIPT = {
    "B's Answer]\nBASE1": "[[A]]",
    "A's Answer]\nBASE1": "[[A]]",  # order-dependent: position bias
    "B's Answer]\nBASE2": "[[A]]",
    "A's Answer]\nBASE2": "no verdict",  # invalid
    "B's Answer]\nBASE3": "[[B]]",
    "A's Answer]\nBASE3": "[[A]]",
}


def _judge_section(page: str) -> str:
    found = re.search(r"<h2>Judge</h2>.*?</details>", page, re.S)
    assert found is not None, "no judge section"
    return found.group(0)


def test_rebuilt_report_of_a_judged_run_keeps_its_judge_lines(compose, tmp_path: Path) -> None:
    q = write_jsonl(tmp_path / "q.jsonl", [{"id": str(i), "turns": [f"Q{i}"]} for i in (1, 2, 3)])
    base = write_jsonl(
        tmp_path / "base.jsonl", [{"id": str(i), "turns": [f"BASE{i}"]} for i in (1, 2, 3)]
    )
    cfg = compose(
        "task=judged", f"task.questions={q}", f"task.baseline={base}",
        "+metrics=[judge_score,win_rate]",
        "model=fake", "judge=fake", "judge.max_invalid=1.0", "report.progress=never",
    )  # fmt: skip
    cfg.judge.replies = SCRIPT
    cfg.judge.answer = "Rating: [[7]]"
    run = tmp_path / "run"
    results = run_job(cfg, run)
    row = results.tasks["judged"].metrics["win_rate"]
    assert row.details["n_invalid"] == 1 and row.details["position_bias"] == 0.5
    original = (run / "report.txt").read_text()
    lines = [x for x in original.splitlines() if x.startswith(("judge:", "judge ", "judged "))]
    assert lines[0].startswith("judge: fake (class=FakeLM); conversation format: plain_text")
    assert "judged win_rate: 1 invalid judgment(s), position bias 0.5000" in lines
    assert "judged judge_score: 0 invalid judgment(s)" in lines
    for metric in ("judge_score", "win_rate"):
        single = results.judge["templates"][metric]["single"][:12]
        assert any(x.startswith(f"judge templates of {metric} (sha256): ") and single in x
                   for x in lines)  # fmt: skip

    out = tmp_path / "rebuilt"
    report_command(OmegaConf.create({"runs": [str(run)], "out": str(out), "progress": "never"}))
    assert (out / "report.txt").read_text() == original
    page = _judge_section((run / "report.html").read_text())
    assert _judge_section((out / "report.html").read_text()) == page
    for line in lines:  # the page names the same judge, hashes and counts
        assert line.replace("'", "&#x27;") in page
