"""The helper process that draws a run's plots and report.html (mill.report.background)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mill.report.background import ReportHelper
from mill.report.rebuild import write_run_report


def _drawn(folder: Path) -> dict[str, bytes]:
    files = [folder / "report.html", folder / "samples.html", *sorted((folder / "plots").iterdir())]
    return {str(f.relative_to(folder)): f.read_bytes() for f in files}


def _undraw(folder: Path) -> None:
    shutil.rmtree(folder / "plots")
    (folder / "report.html").unlink()
    (folder / "samples.html").unlink()


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
    assert set(by_helper) == {
        "report.html",
        "samples.html",
        "plots/scores.png",
        "plots/calibration_arc_easy.png",
    }
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


@pytest.mark.slow  # forks
def test_draw_in_two_keeps_the_jobs_order_and_uses_a_second_process() -> None:
    import os

    from mill.report.background import draw_in_two

    here = os.getpid()

    def job(i: int) -> bytes:
        return f"{i}:{os.getpid() == here}".encode() * (20000 * (i + 1))  # > a pipe's buffer

    pngs = draw_in_two([lambda i=i: job(i) for i in range(5)])
    assert [p[: len(f"{i}:")] for i, p in enumerate(pngs)] == [f"{i}:".encode() for i in range(5)]
    # the first half was drawn by the fork, the rest here
    assert [p.startswith(f"{i}:True".encode()) for i, p in enumerate(pngs)] == [
        False, False, True, True, True,
    ]  # fmt: skip
    assert pngs[1] == b"1:False" * 40000 and pngs[4] == b"4:True" * 100000  # whole


@pytest.mark.slow  # forks
def test_what_the_fork_fails_to_draw_is_drawn_here() -> None:
    import os

    from mill.report.background import draw_in_two

    here = os.getpid()

    def fragile() -> bytes:
        if os.getpid() != here:
            raise RuntimeError("only in the fork")
        return b"drawn here"

    assert draw_in_two([fragile, lambda: b"second"]) == [b"drawn here", b"second"]
    assert draw_in_two([lambda: b"alone"]) == [b"alone"]  # one job: no fork


@pytest.mark.slow  # a fresh interpreter, so that sys.modules starts empty
def test_after_preload_drawing_imports_nothing(single_run: Path, tmp_path: Path) -> None:
    """What the child imports while the run loads its model is all drawing needs: after
    the run hands over its folder, no import is left on its critical path."""
    folder = tmp_path / "run"
    shutil.copytree(single_run, folder)
    _undraw(folder)
    script = (
        "import sys\n"
        "from mill.report.background import draw_in_two, preload\n"
        "preload()\n"
        "from mill.report.rebuild import write_run_report\n"
        "before = set(sys.modules)\n"
        f"write_run_report({str(folder)!r}, finished=False, draw=draw_in_two)\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
    assert set(_drawn(folder)) == {
        "report.html",
        "samples.html",
        "plots/scores.png",
        "plots/calibration_arc_easy.png",
    }
