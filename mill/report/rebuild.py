"""Write plots, ``report.html`` and tables for finished folders: one run, a sweep, several runs.

Used at the end of a run (:func:`report_after_run`), at the end of a sweep
(:func:`report_after_sweep`) and by ``mill report`` (:func:`report_command`). Works from
the files alone; no model is loaded and torch is never imported.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from mill.files import reads_into, write_inside
from mill.report.calibration import Reliability
from mill.report.load import ReportInputError, RunFolder, Score, Sweep, is_run, open_sweep
from mill.report.samples import PAGE as SAMPLES
from mill.report.samples import has_samples, write_samples_page

log = logging.getLogger("mill")

PLOTS = "plots"
HTML = "report.html"
TEXT = "report.txt"
SWEEP_PNG = "sweep.png"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def calibrations(run: RunFolder) -> list[Reliability]:
    """Reliability data of every LOGPROBS task of ``run`` that has samples."""
    from mill.report.calibration import reliability

    found = []
    for task in run.task_names:
        if run.output_type(task) != "logprobs" or not run.samples_path(task).is_file():
            continue
        rel = reliability(task, run.samples(task))
        if rel is not None:
            found.append(rel)
    return found


Drawing = Callable[[Sequence[Callable[[], bytes]]], list[bytes]]
"""Runs drawing jobs and returns their PNG bytes in order (one after the other by default;
the report helper spreads them over two processes, :mod:`mill.report.background`)."""


def _one_by_one(jobs: Sequence[Callable[[], bytes]]) -> list[bytes]:
    return [job() for job in jobs]


def write_run_report(path: str | Path, finished: bool = True, draw: Drawing = _one_by_one) -> Path:
    """Plots (``plots/scores.png``, ``plots/calibration_<task>.png``) and ``report.html``
    in the run's own folder (``finished=False``: the run's own last step, before its
    manifest says succeeded). ``draw`` runs the drawing jobs (the files are the same
    whichever runs them)."""
    run = RunFolder.open(path, finished=finished)
    return write_run_pages(run, run.path, draw)


def write_run_pages(run: RunFolder, out: Path, draw: Drawing = _one_by_one) -> Path:
    """``out/plots/`` and ``out/report.html`` of ``run`` (``out`` is the run's own folder at
    the end of a run, a folder under ``out=`` for ``mill report``)."""
    from functools import partial

    from mill.report import html, plots
    from mill.report.ifeval import instruction_types

    rels = calibrations(run)
    chance = {rel.task: rel.chance for rel in rels}
    jobs = [partial(plots.reliability_png, rel) for rel in rels]
    types = instruction_types(run)
    jobs += [partial(plots.instruction_types_png, task, rows) for task, rows in types]
    jobs.append(partial(plots.scores_png, run.scores(), chance))
    *pngs, scores_png = draw(jobs)
    reliability_pngs, types_pngs = pngs[: len(rels)], pngs[len(rels) :]
    calibration = []
    for rel, png in zip(rels, reliability_pngs, strict=True):
        write_inside(out, f"{PLOTS}/calibration_{_safe(rel.task)}.png", png)
        calibration.append((rel, png))
    instruction = []
    for (task, rows), png in zip(types, types_pngs, strict=True):
        write_inside(out, f"{PLOTS}/instruction_types_{_safe(task)}.png", png)
        instruction.append((task, rows, png))
    write_inside(out, f"{PLOTS}/scores.png", scores_png)
    link = None
    if has_samples(run):
        link = write_samples_page(run, out).name
    page = html.run_page(run, scores_png, calibration, instruction, link)
    return write_inside(out, HTML, page)


def _silent_console() -> Console:
    """Records like the non-interactive console but prints nothing."""
    import io

    return Console(
        file=io.StringIO(), width=120, no_color=True, record=True, highlight=False, markup=False
    )


def run_table_text(run: RunFolder, console: Console) -> str:
    """Print the run's report and return it as plain text (``report.txt``): the same
    text as the run's own (:func:`mill.report.text.print_run_report`)."""
    from mill.report.text import print_run_report

    unsafe = bool((run.manifest.execution or {}).get("unsafe"))
    print_run_report(console, run.results, run.title, unsafe)
    return console.export_text()


def labels(runs: Sequence[RunFolder]) -> list[str]:
    """Model names; the folder name where two runs of one task share a model name."""
    names = [r.model_label for r in runs]
    seen: dict[tuple[str, str], int] = {}
    clash = False
    for run, name in zip(runs, names, strict=True):
        for task in run.task_names:
            seen[(task, name)] = seen.get((task, name), 0) + 1
            clash = clash or seen[(task, name)] > 1
    return [r.path.name for r in runs] if clash else names


def entries(runs: Sequence[RunFolder], names: Sequence[str]) -> list[tuple[str, Score]]:
    return [(name, s) for run, name in zip(runs, names, strict=True) for s in run.scores()]


def write_multi_report(
    title: str,
    out: Path,
    runs: Sequence[RunFolder],
    failed: Sequence[tuple[Path, str]],
    console: Console,
    pages: Sequence[Path] | None = None,
) -> Path:
    """The task x model table (printed, ``report.txt``), chart and page for several runs;
    ``pages``: each run's ``report.html`` the page links to (default: in its folder)."""
    from mill.report import html, plots
    from mill.report.table import sweep_table

    out.mkdir(parents=True, exist_ok=True)
    names = labels(runs)
    rows = entries(runs, names)
    pages = [run.path / HTML for run in runs] if pages is None else pages
    chart = None
    if rows:
        console.print(sweep_table(rows, title))
        chart = plots.sweep_png(rows)
        write_inside(out, SWEEP_PNG, chart)  # a file, not plots/: a sweep's folders are its jobs
    for job, why in failed:
        console.print(f"failed: {job.name}: {why}")
    for run in runs:
        if run.edited_note:
            console.print(run.edited_note, soft_wrap=True)
    write_inside(out, TEXT, console.export_text())
    links = [
        (name, run, os.path.relpath(page, out))
        for name, run, page in zip(names, runs, pages, strict=True)
    ]
    fails = [(str(os.path.relpath(job, out)), why) for job, why in failed]
    ece = [(name, rel) for name, run in zip(names, runs, strict=True) for rel in calibrations(run)]
    every = [
        os.path.relpath(page.with_name(SAMPLES), out) if page.with_name(SAMPLES).is_file() else None
        for page in pages
    ]
    sweep = html.sweep_page(title, links, rows, chart, fails, ece, every)
    return write_inside(out, HTML, sweep)


def write_sweep_report(sweep: Sweep, console: Console) -> Path:
    """The sweep's own page, in the sweep folder (the end of a multirun)."""
    return write_multi_report(
        _sweep_title(sweep.path), sweep.path, sweep.runs, sweep.failed, console
    )


def _sweep_title(path: Path) -> str:
    return f"sweep {path.parent.name}/{path.name}"


def warn_not_written(what: str, err: Exception, path: Path) -> None:
    """Say on stderr (and in the log) that ``what`` was not written, and how to rebuild it."""
    log.warning("%s not written: %s: %s", what, type(err).__name__, err)
    print(
        f"mill: warning: {what} not written ({type(err).__name__}: {err}); the results are "
        f"complete. Rebuild it elsewhere with: mill report runs=[{path}] out=<folder>",
        file=sys.stderr,
    )


def report_after_run(path: Path) -> None:
    """End of a successful run: plots and ``report.html`` beside ``results.json``.

    A failure here never turns a finished run into a failed one; it is reported on stderr."""
    try:
        write_run_report(path, finished=False)
    except Exception as err:  # noqa: BLE001 - the run's results are already complete
        warn_not_written("report.html", err, path)


def report_after_sweep(path: Path, mode: str = "auto") -> None:
    """End of a multirun: print the task x model table, write the sweep's plots and page."""
    from mill.report.console import make_console

    try:
        page = write_sweep_report(
            open_sweep(path), make_console(stderr=False, mode=mode, record=True)
        )
    except Exception as err:  # noqa: BLE001 - every job's results are already complete
        warn_not_written("sweep report", err, path)
        return
    # the sweep's last line: its page, which links every job's report and samples page
    print(f"[mill] sweep report: {page}", file=sys.stderr)


def _expand(path: Path, trust_edited: bool) -> tuple[list[RunFolder], Sweep | None]:
    if not path.exists():
        raise ReportInputError(f"{path} does not exist; give a run folder or a sweep folder")
    if not path.is_dir():
        raise ReportInputError(
            f"runs: {path} is a file, not a folder; give runs=[<run or sweep folder>,...]"
        )
    if is_run(path):
        return [RunFolder.open(path, trust_edited=trust_edited)], None
    sweep = open_sweep(path, trust_edited)
    return sweep.runs, sweep


def _destinations(runs: Sequence[RunFolder], out: Path) -> list[Path]:
    """``out/<folder name>`` per run (``_2``, ``_3`` ... where two runs share a name)."""
    seen: dict[str, int] = {}
    found = []
    for run in runs:
        name = run.path.name or "run"
        seen[name] = seen.get(name, 0) + 1
        found.append(out / (name if seen[name] == 1 else f"{name}_{seen[name]}"))
    return found


def _given_paths(cfg: Any) -> list[Path]:
    """The folders of ``runs=``, refused when missing or empty."""
    from omegaconf import OmegaConf

    if OmegaConf.is_missing(cfg, "runs"):
        raise ReportInputError("report needs folders: mill report runs=[<run or sweep folder>,...]")
    given = cfg.runs
    paths = [Path(str(p)) for p in (given if OmegaConf.is_list(given) else [given])]
    if not paths:
        raise ReportInputError("runs=[] is empty; give at least one run or sweep folder")
    return paths


def _refuse_writing_into(out: Path, targets: Sequence[Path], read: Sequence[Path]) -> None:
    """ReportInputError when a folder written lies inside a folder read."""
    for target in targets:
        inside = reads_into(target, read)
        if inside is not None:
            raise ReportInputError(
                f"out={out} would write into {inside}, a folder this report reads; Mill "
                "never writes into the folders it reports: choose another out= folder"
            )


def _write_each(
    runs: Sequence[RunFolder], dests: Sequence[Path], single: bool, mode: str
) -> list[Path]:
    """Each run's ``report.txt``, plots, ``report.html`` (and ``samples.html``) in its
    destination; the ``report.html`` paths, in order."""
    from mill.report.console import make_console

    pages = []
    for run, dest in zip(runs, dests, strict=True):
        # the table of a lone run is printed; of several, only written
        console = make_console(False, mode, record=True) if single else _silent_console()
        dest.mkdir(parents=True, exist_ok=True)
        if run.edited_note:
            console.print(run.edited_note, soft_wrap=True)
        write_inside(dest, TEXT, run_table_text(run, console))
        pages.append(write_run_pages(run, dest))
    return pages


def _multi_title(runs: Sequence[RunFolder], sweep: Sweep | None) -> str:
    if sweep is not None:
        return _sweep_title(sweep.path)
    return f"{len(runs)} runs: " + ", ".join(sorted({r.task_label for r in runs}))


def report_command(cfg: Any) -> None:
    """``mill report runs=[...] out=<folder>``: rebuild reports from existing folders,
    writing only under ``out`` (never into the folders read).

    One run folder: its plots, ``report.html`` and ``report.txt`` in ``out``. One sweep
    folder: every job's in ``out/<job>/``, then the sweep's task x model table, chart and
    page in ``out``. Several folders: each run's in ``out/<run>/``, then a combined page in
    ``out``. Jobs of a sweep that failed are listed, and the command then exits 2."""
    from mill.report.console import make_console
    from mill.report.settings import command_settings

    cfg = command_settings(cfg, "report")
    paths = _given_paths(cfg)
    trust = cfg.get("trust_edited", False)
    opened = [_expand(p, trust) for p in paths]  # every folder checked before anything is written
    out = Path(str(cfg.out))
    runs = [run for found, _ in opened for run in found]
    failed = [f for _, sweep in opened if sweep is not None for f in sweep.failed]
    single = len(opened) == 1 and opened[0][1] is None
    dests = [out] if single else _destinations(runs, out)
    _refuse_writing_into(out, [out, *dests], [*paths, *(run.path for run in runs)])
    mode = str(cfg.get("progress", "auto"))
    written = _write_each(runs, dests, single, mode)
    if not single:
        title = _multi_title(runs, opened[0][1] if len(opened) == 1 else None)
        console = make_console(stderr=False, mode=mode, record=True)
        written.append(write_multi_report(title, out, runs, failed, console, written[:]))
    err = make_console(stderr=True, mode=mode)
    for target in written:
        err.print(f"[mill] wrote {target}")
    if failed:
        jobs = "; ".join(f"{job.name} ({why})" for job, why in failed)
        raise ReportInputError(
            f"{len(failed)} job(s) of the sweep failed and are not in the report: {jobs}; "
            f"the report of the others is in {out}"
        )
