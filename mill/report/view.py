"""``mill view [run]``: a run's page of every sample (``samples.html``), built when missing or
older than the run's samples, then opened in the browser (Python's :mod:`webbrowser`, which
honours ``$BROWSER``). Given a sweep folder, every job's page is built and the sweep's
``report.html`` (which links each of them) is opened. No model is loaded."""

from __future__ import annotations

import sys
import webbrowser
from pathlib import Path
from typing import Any

from mill.report import samples
from mill.report.load import ReportInputError, RunFolder, is_run, open_sweep
from mill.report.samples import PAGE, SCRIPT, write_samples_page


def _stale(run: RunFolder) -> bool:
    """``samples.html`` is missing or older than a samples file (or than the page's code)."""
    page = run.path / PAGE
    if not page.is_file():
        return True
    built = page.stat().st_mtime
    sources = [run.samples_path(t) for t in run.task_names]
    sources += [SCRIPT, Path(samples.__file__)]
    return any(p.is_file() and p.stat().st_mtime > built for p in sources)


def run_page(run: RunFolder) -> Path:
    """The run's ``samples.html``, (re)built when stale."""
    return write_samples_page(run, run.path) if _stale(run) else run.path / PAGE


def newest_run(root: Path) -> Path:
    """The newest finished run under ``root`` (as ``mill runs`` lists them)."""
    from mill.report.runs import list_runs

    finished = [e for e in list_runs(root) if e.status == "finished"]
    if not finished:
        raise ReportInputError(
            f"no finished run under {root}; give one: mill view <run folder> (or run=<folder>)"
        )
    return finished[0].path


def page_of(folder: Path, trust_edited: bool) -> Path:
    """The page to open for ``folder``: a run's ``samples.html``, or for a sweep its
    ``report.html`` once every job's ``samples.html`` is built."""
    if not folder.is_dir():
        raise ReportInputError(f"run={folder} is not a folder; give a run or sweep folder")
    if is_run(folder):
        return run_page(RunFolder.open(folder, trust_edited=trust_edited))
    sweep = open_sweep(folder, trust_edited)
    for run in sweep.runs:
        run_page(run)
    page = folder / "report.html"
    if not page.is_file():
        raise ReportInputError(
            f"{folder} has no report.html; rebuild it with mill report runs=[{folder}] "
            "out=<folder>, or give one job's folder"
        )
    return page


def view_command(cfg: Any) -> None:
    """``mill view [run] [open=false]``: build (when needed) and open a run's samples page."""
    from mill.report.settings import command_settings

    cfg = command_settings(cfg, "view")
    given = cfg.get("run")
    folder = Path(str(given)) if given else newest_run(Path(str(cfg.get("dir") or "outputs")))
    page = page_of(folder, bool(cfg.get("trust_edited", False)))
    print(f"[mill] page: {page}", file=sys.stderr)
    if cfg.get("open", True):
        webbrowser.open(page.resolve().as_uri())
