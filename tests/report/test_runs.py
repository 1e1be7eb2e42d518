"""``mill runs``: the folders under outputs/, newest first, with their status, and the
report of one of them."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

import mill
from mill.report.runs import folder_lines, list_runs, shown_runs
from tests.helpers import run_mill


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four runs: piqa and arc_easy finished (fake model), then (started later) one
    failed and one killed."""
    root = tmp_path_factory.mktemp("runs") / "outputs"
    day = root / "runs" / "2026-01-02"
    mill.evaluate("piqa", "fake", limit=3, output_dir=day / "10-00-00_piqa_fake")
    mill.evaluate("arc_easy", "fake", limit=3, output_dir=day / "11-00-00_arc_easy_fake")
    for name, status, started in (
        ("12-00-00_gsm8k_gpt2", "failed", "2100-01-02T12:00:00Z"),
        ("13-00-00_gsm8k_gpt2", "running", "2100-01-02T13:00:00Z"),
    ):
        (day / name).mkdir()
        argv = ["mill", "task=gsm8k", "model=gpt2"]
        manifest = {"status": status, "started": started, "seconds": 1.5, "argv": argv}
        if status == "failed":
            manifest["error"] = "ConfigError: model.pretrained=/nope does not exist"
        (day / name / "manifest.json").write_text(json.dumps(manifest))
    refused = day / "14-00-00_arc_easy_fake"  # refused before it claimed the folder
    refused.mkdir()
    (refused / "mill.log").write_text(
        "[2100-01-02 14:00:00,000][mill][ERROR] runner.seed='x' is not allowed\n"
    )
    os.utime(refused, (4102488000, 4102488000))  # 2100-01-01
    return root


def test_runs_newest_first_with_status_and_headline(outputs: Path) -> None:
    entries = list_runs(outputs)
    assert [e.path.name for e in entries[:2]] == ["13-00-00_gsm8k_gpt2", "12-00-00_gsm8k_gpt2"]
    # a running manifest whose lock nobody holds: killed, resumable
    assert [e.status for e in entries[:2]] == ["interrupted: resumable", "failed"]
    assert entries[1].error is not None and "does not exist" in entries[1].error
    finished = {e.tasks[0]: e for e in entries if e.status == "finished"}
    assert set(finished) == {"piqa", "arc_easy"} and finished["piqa"].model == "fake"
    results = json.loads((finished["piqa"].path / "results.json").read_text())
    row = results["tasks"]["piqa"]["metrics"]["acc"]
    assert finished["piqa"].headline == f"acc {row['value']:.4f} ± {row['stderr']:.4f}"
    assert finished["piqa"].report == finished["piqa"].path / "report.html"
    refused = next(e for e in entries if e.path.name == "14-00-00_arc_easy_fake")
    assert (refused.status, refused.error) == ("failed", "runner.seed='x' is not allowed")
    lines = folder_lines(entries)
    assert lines[2].strip() == "failed: ConfigError: model.pretrained=/nope does not exist"


def test_a_held_lock_is_a_running_run(outputs: Path) -> None:
    folder = outputs / "runs" / "2026-01-02" / "13-00-00_gsm8k_gpt2"
    with (folder / ".lock").open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert list_runs(outputs)[0].status == "running"
    assert list_runs(outputs)[0].status == "interrupted: resumable"


def test_filters(outputs: Path) -> None:
    assert [e.tasks for e in list_runs(outputs, tasks=["piqa"])] == [["piqa"]]
    assert {e.path.name for e in list_runs(outputs, models=["gpt2"])} == {
        "12-00-00_gsm8k_gpt2",
        "13-00-00_gsm8k_gpt2",
    }
    assert list_runs(outputs, tasks=["arc_easy"], models=["gpt2"]) == []


@pytest.mark.parametrize(
    ("everything", "listed", "hidden"),
    [
        (False, ["13-00-00_gsm8k_gpt2", "11-00-00_arc_easy_fake", "10-00-00_piqa_fake"], 2),
        (True, [f"{h}-00-00_" for h in ("13", "12", "14", "11", "10")], 0),
    ],
)
def test_failed_runs_are_hidden_unless_asked(
    outputs: Path, everything: bool, listed: list[str], hidden: int
) -> None:
    # the two failed runs (one refused before its manifest) are left out and counted; the
    # interrupted one stays listed (it can be resumed)
    shown, left_out = shown_runs(list_runs(outputs), everything)
    assert [e.path.name[: len(n)] for e, n in zip(shown, listed, strict=True)] == listed
    assert left_out == hidden


@pytest.mark.slow
def test_the_command(outputs: Path) -> None:
    proc = run_mill("runs", f"dir={outputs}", "tasks=piqa")
    assert proc.returncode == 0, proc.stderr
    assert "| piqa " in proc.stdout and "arc_easy" not in proc.stdout
    assert "10-00-00_piqa_fake" in proc.stdout
    proc = run_mill("runs", f"dir={outputs}")  # the failed runs hidden, and counted
    assert proc.returncode == 0, proc.stderr
    assert "2 failed runs hidden (mill runs all=true lists them)" in proc.stdout
    assert "12-00-00_gsm8k_gpt2" not in proc.stdout and "| failed " not in proc.stdout
    proc = run_mill("runs", f"dir={outputs}", "all=true")
    assert proc.returncode == 0, proc.stderr
    assert "12-00-00_gsm8k_gpt2" in proc.stdout and "hidden" not in proc.stdout
    proc = run_mill("runs", f"dir={outputs}", "models=gpt2", "tasks=gsm8k")
    assert proc.returncode == 0, proc.stderr  # only a failed run matches: it says so
    assert "1 failed run hidden (mill runs all=true lists them)" in proc.stdout
    proc = run_mill("runs", f"dir={outputs}", "open=2")  # N counts the runs listed
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(
        outputs / "runs" / "2026-01-02" / "11-00-00_arc_easy_fake" / "report.html"
    )
    proc = run_mill("runs", f"dir={outputs}", "all=true", "open=4")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(
        outputs / "runs" / "2026-01-02" / "11-00-00_arc_easy_fake" / "report.html"
    )
    proc = run_mill("runs", f"dir={outputs}", "open=1")
    assert proc.returncode == 2 and "has no report.html: it is interrupted" in proc.stderr
