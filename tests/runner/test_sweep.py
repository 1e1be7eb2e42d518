"""Sweeps: a failing job, whatever the error, never stops the sweep; the summary marks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mill.runner.sweep import cell, summarize, to_markdown, write_summary
from tests.helpers import run_mill

BOOM = '''
from mill.tasks.arc import ArcEasy


class Boom(ArcEasy):
    """A user task with a bug: not a Mill error, a crash."""

    def docs(self, source, **kwargs):
        raise RuntimeError("boom: a bug in a user task")
'''


@pytest.mark.slow
def test_failing_jobs_are_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    (tmp_path / "boomtasks.py").write_text(BOOM)
    (tmp_path / "conf" / "task").mkdir(parents=True)
    (tmp_path / "conf" / "task" / "boom.yaml").write_text(
        "_target_: boomtasks.Boom\nname: boom\nlimit: null\n"
    )
    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m",
        "task=arc_easy,gsm8k,boom",
        "model=fake",
        "+metrics=[acc]",
        "task.limit=2",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "+allow_targets=[boomtasks.]",
        f"hydra.sweep.dir={sweep}",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 2, proc.stderr
    summary = json.loads((sweep / "summary.json").read_text())
    jobs = {j["task"]: j for j in summary["jobs"]}
    assert [j["job"] for j in summary["jobs"]] == [
        "0_arc_easy_fake",
        "1_gsm8k_fake",
        "2_boom_fake",
    ]
    assert (summary["succeeded"], summary["failed"]) == (1, 2)
    assert jobs["arc_easy"]["status"] == "succeeded"
    assert jobs["gsm8k"]["status"] == "failed" and "ConfigError" in jobs["gsm8k"]["error"]
    assert jobs["boom"]["status"] == "failed" and "RuntimeError: boom" in jobs["boom"]["error"]
    # every job's own manifest says how it ended; the crash keeps its traceback
    crash = json.loads((sweep / "2_boom_fake" / "manifest.json").read_text())
    assert crash["status"] == "failed" and "Traceback" in crash["traceback"]
    assert not (sweep / "2_boom_fake" / "results.json").exists()

    acc = json.loads((sweep / "0_arc_easy_fake" / "results.json").read_text())
    acc = acc["tasks"]["arc_easy"]["metrics"]["acc"]
    assert jobs["arc_easy"]["metrics"]["arc_easy"]["acc"] == {
        k: acc[k] for k in ("value", "stderr", "n")
    }
    markdown = (sweep / "summary.md").read_text()
    expected = f"| arc_easy | {acc['value']:.4f} ± {acc['stderr']:.4f} |"
    assert expected in markdown
    assert "| gsm8k | **FAILED** |" in markdown and "| boom | **FAILED** |" in markdown
    assert "RuntimeError: boom" in markdown
    # printed too: the task x model table on stdout, one line per failure
    assert "FAILED 1_gsm8k_fake" in proc.stdout and "FAILED 2_boom" in proc.stdout
    row = [line for line in proc.stdout.splitlines() if "| arc_easy" in line and "acc " in line]
    assert row and f"{acc['value']:.4f}" in row[-1] and f"{acc['stderr']:.4f}" in row[-1]


def _job(root: Path, name: str, task: str, model: str, overrides: list[str], value: float):
    job = root / name
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(json.dumps(overrides))
    (job / "resolved.yaml").write_text(
        json.dumps({"task": {"name": task}, "model": {"name": model}})
    )
    (job / "manifest.json").write_text(json.dumps({"status": "succeeded"}))
    metrics = {"acc": {"value": value, "stderr": 0.01, "n": 10}}
    results = {"tasks": {task: {"metrics": metrics}}, "groups": {}}
    (job / "results.json").write_text(json.dumps(results))


def test_jobs_sharing_task_and_model_are_told_apart_by_their_overrides(tmp_path: Path) -> None:
    _job(tmp_path, "0_arc_easy_m", "arc_easy", "m", ["task.num_fewshot=0"], 0.5)
    _job(tmp_path, "1_arc_easy_m", "arc_easy", "m", ["task.num_fewshot=5"], 0.625)
    (tmp_path / "2_arc_easy_m").mkdir()  # a job that died before writing anything
    (tmp_path / "2_arc_easy_m" / "resolved.yaml").write_text("task: {name: x}\nmodel: {name: m}\n")
    summary = summarize(tmp_path)
    assert [j["status"] for j in summary["jobs"]] == ["succeeded", "succeeded", "failed"]
    markdown = to_markdown(summary)
    assert "| arc_easy (task.num_fewshot=0) | 0.5000 ± 0.0100 |" in markdown
    assert "| arc_easy (task.num_fewshot=5) | 0.6250 ± 0.0100 |" in markdown
    assert "| x | **FAILED** |" in markdown and "left no manifest.json" in markdown
    assert cell(None) == "-" and cell({"value": 2.0, "stderr": None}) == "2.0000"


def test_the_summary_files_are_replaced_whole(tmp_path: Path) -> None:
    (tmp_path / "summary.md").write_text("an older summary\n")
    reader = (tmp_path / "summary.md").open(encoding="utf-8")
    summary = write_summary(tmp_path)
    assert reader.read() == "an older summary\n"  # renamed over, not rewritten in place
    reader.close()
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == to_markdown(summary)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "summary.md"]


@pytest.mark.slow
def test_a_progress_mode_the_jobs_refuse_fails_each_job_in_one_line(tmp_path: Path) -> None:
    """``report.progress`` is checked by each job's run configuration (once per job), so a
    refused value fails each job in one line as any other setting does (no Hydra line, no
    traceback), before a job folder is claimed, and the sweep ends with exit 2 and the
    failed jobs listed."""
    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m",
        "task=arc_easy,boolq",
        "model=fake",
        "task.limit=2",
        "report.progress=sometimes",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Error executing job" not in proc.stderr
    refused = "mill: error: report.progress='sometimes' is unknown: give one of auto, always or "
    refused += "never"
    assert proc.stderr.splitlines().count(refused) == 2, proc.stderr  # one line per job
    assert "mill: 2 job(s) failed:" in proc.stderr.splitlines()
    # refused before a folder is claimed: no job folder half-written
    assert not list(sweep.glob("*/manifest.json"))
