"""The helper process that draws a run's plots and report.html (mill.report.background)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from mill.report.background import ReportHelper
from mill.report.rebuild import write_run_report


def _drawn(folder: Path) -> dict[str, bytes]:
    files = [folder / "report.html", *sorted((folder / "plots").iterdir())]
    return {str(f.relative_to(folder)): f.read_bytes() for f in files}


def _undraw(folder: Path) -> None:
    shutil.rmtree(folder / "plots")
    (folder / "report.html").unlink()


@pytest.mark.slow  # starts a process
def test_the_helper_draws_byte_for_byte_what_the_run_draws_in_process(
    single_run: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(single_run, folder)
    _undraw(folder)
    helper = ReportHelper()
    assert helper._proc is not None  # a real child, not the fallback
    helper.render(folder)
    by_helper = _drawn(folder)
    assert set(by_helper) == {"report.html", "plots/scores.png", "plots/calibration_arc_easy.png"}
    _undraw(folder)
    write_run_report(folder, finished=False)
    assert _drawn(folder) == by_helper


@pytest.mark.slow  # starts a process
def test_a_run_that_ends_early_gets_no_plots_and_the_child_exits(tmp_path: Path) -> None:
    helper = ReportHelper()
    proc = helper._proc
    assert proc is not None
    helper.close()
    assert proc.poll() is not None  # stopped
    assert list(tmp_path.iterdir()) == []
    helper.close()  # twice is harmless


@pytest.mark.slow  # its run folder comes from a real run
def test_without_a_child_the_run_draws_in_process(
    single_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(single_run, folder)
    _undraw(folder)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    helper = ReportHelper()
    assert helper._proc is None
    helper.render(folder)
    assert (folder / "report.html").is_file() and (folder / "plots" / "scores.png").is_file()
