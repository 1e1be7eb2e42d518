"""``mill runs``: the experiment folders under ``outputs/``, newest first, read without
loading a model (``manifest.json``, ``results.json``, ``resolved.yaml``), and the report of
one of them (``open=N``)."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import webbrowser
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from mill import files
from mill.errors import ConfigError
from mill.report.numbers import value_pm_stderr

STATUS = {"succeeded": "finished", "failed": "failed", "interrupted": "interrupted"}


@dataclass
class RunEntry:
    """One folder as ``mill runs`` lists it."""

    path: Path
    started: datetime
    tasks: list[str]
    model: str
    status: str
    headline: str
    seconds: float | None
    error: str | None

    @property
    def report(self) -> Path | None:
        page = self.path / "report.html"
        return page if page.is_file() else None


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _held(folder: Path) -> bool:
    """Whether a process holds the folder's ``.lock`` (the run is still going)."""
    try:
        with (folder / ".lock").open("a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def _status(folder: Path, manifest: dict[str, Any]) -> str:
    status = str(manifest.get("status") or "")
    if status in ("succeeded", "failed"):
        return STATUS[status]
    if status == "running" and _held(folder):
        return "running"
    if status in ("interrupted", "running"):  # stopped, or killed before it could say so
        return "interrupted: resumable"
    return "failed"  # no manifest: the run stopped before Mill claimed the folder


def _log_error(folder: Path) -> str | None:
    """The last ERROR line of ``mill.log`` (a run that failed before its manifest)."""
    try:
        lines = (folder / "mill.log").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    errors = [x.split("[ERROR]", 1)[1].strip() for x in lines if "[ERROR]" in x]
    return errors[-1] if errors else None


def _names(
    folder: Path, manifest: dict[str, Any], results: dict[str, Any]
) -> tuple[list[str], str]:
    """The run's task names and model name: from results, the manifest, else the config."""
    tasks = list(results.get("tasks") or manifest.get("tasks") or [])
    model = str((manifest.get("model") or {}).get("name") or "")
    try:
        import yaml

        resolved = yaml.safe_load((folder / "resolved.yaml").read_text(encoding="utf-8"))
    except (OSError, ValueError, ImportError):
        resolved = None
    if isinstance(resolved, dict):
        task = resolved.get("task") or {}
        model = str((resolved.get("model") or {}).get("name") or model)
        if not tasks and isinstance(task, dict) and task.get("name"):
            tasks = [str(task["name"])]
    if not tasks or not model:  # refused before resolving: the command line's choices
        said = dict(a.split("=", 1) for a in manifest.get("argv") or [] if "=" in a)
        tasks = tasks or [said.get("task", "?").strip("[]").replace(",", "+")]
        model = model or said.get("model", "?")
    return tasks, model


def _headline(results: dict[str, Any]) -> str:
    """The first task's first metric, value ± stderr (a group's micro row for several)."""
    for body in (results.get("tasks") or {}).values():
        for metric, row in (body.get("metrics") or {}).items():
            return f"{metric} {value_pm_stderr(row.get('value'), row.get('stderr'))}"
    return "-"


def _started(folder: Path, manifest: dict[str, Any]) -> datetime:
    text = manifest.get("first_started") or manifest.get("started")
    if text:
        try:
            return datetime.fromisoformat(str(text).replace("Z", "+00:00")).replace(tzinfo=None)
        except ValueError:
            pass
    return datetime.utcfromtimestamp(folder.stat().st_mtime)


def _edited(folder: Path, manifest: dict[str, Any]) -> str | None:
    """Why a finished run's ``results.json`` is not what it wrote (its SHA-256 is not the
    manifest's ``results_sha256``, or there is none), else None: ``mill runs`` shows such a
    run as edited, not finished (its samples are checked by the readers, which hash them)."""
    recorded = manifest.get("results_sha256")
    path = folder / "results.json"
    try:
        if recorded and files.sha256_file(path) == recorded:
            return None
    except OSError:
        return "results.json cannot be read"
    return (
        "results.json changed after the run wrote it (mill report ... trust_edited=true "
        "reads it knowingly)"
    )


def read_entry(folder: Path) -> RunEntry:
    manifest = _json(folder / "manifest.json")
    results = _json(folder / "results.json") if manifest.get("status") == "succeeded" else {}
    tasks, model = _names(folder, manifest, results)
    status = _status(folder, manifest)
    error = manifest.get("error") or (_log_error(folder) if status == "failed" else None)
    edited = _edited(folder, manifest) if status == "finished" else None
    if edited is not None:
        status, error = "edited", edited
    return RunEntry(
        path=folder,
        started=_started(folder, manifest),
        tasks=tasks,
        model=model,
        status=status,
        headline=_headline(results),
        seconds=manifest.get("seconds"),
        error=None if error is None else str(error),
    )


def _folders(root: Path) -> list[Path]:
    """Run folders under ``root`` (outputs/runs/<date>/<run>, each job of
    outputs/multiruns/<date>/<time>/, a folder named by hydra.run.dir): every folder with
    a ``manifest.json`` or a ``mill.log`` (a run refused before its manifest)."""
    found = {p.parent for name in ("manifest.json", "mill.log") for p in root.rglob(name)}
    return sorted(found)


def list_runs(
    root: Path, tasks: list[str] | None = None, models: list[str] | None = None
) -> list[RunEntry]:
    """The runs under ``root``, newest first, only those of one of ``tasks`` and one of
    ``models`` (a run of several tasks counts for each of them)."""
    entries = [read_entry(f) for f in _folders(root)]
    entries = [
        e
        for e in entries
        if (tasks is None or any(t in e.tasks or t == "+".join(e.tasks) for t in tasks))
        and (models is None or e.model in models)
    ]
    return sorted(entries, key=lambda e: (e.started, str(e.path)), reverse=True)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def runs_table(entries: list[RunEntry], title: str) -> Table:
    """One row per run; its folder (and a failure's error) in the lines under the table."""
    table = Table(title=title, box=box.ASCII, safe_box=True)
    for col in ("#", "date (UTC)", "task", "model", "headline", "status", "duration"):
        table.add_column(col, no_wrap=col != "task", justify="right" if col == "#" else "left")
    for i, e in enumerate(entries, 1):
        table.add_row(
            str(i),
            e.started.strftime("%Y-%m-%d %H:%M"),
            "+".join(e.tasks),
            e.model,
            e.headline,
            e.status,
            _duration(e.seconds),
        )
    return table


def folder_lines(entries: list[RunEntry]) -> list[str]:
    """``#N <folder>`` per run listed, and the error of a failed one."""
    lines = []
    for i, e in enumerate(entries, 1):
        lines.append(f"{i:>3}  {e.path}")
        if e.error and e.status != "finished":
            lines.append(f"     {e.status}: {e.error}")
    return lines


def _names_of(value: Any) -> list[str] | None:
    """A filter: one name or a list of names (None: no filter)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [str(v) for v in value]
    return [str(value)]


def shown_runs(entries: list[RunEntry], everything: bool) -> tuple[list[RunEntry], int]:
    """The runs ``mill runs`` lists, and how many failed runs it leaves out: all of them
    (``all=true``), else all but the failed ones (a refused command line, a crashed load),
    which would otherwise bury the finished runs; an interrupted run stays listed (it can
    be resumed)."""
    if everything:
        return entries, 0
    kept = [e for e in entries if e.status != "failed"]
    return kept, len(entries) - len(kept)


def _hidden(count: int) -> str:
    return f"{count} failed run{'s' if count != 1 else ''} hidden (mill runs all=true lists them)"


def runs_command(cfg: Any) -> None:
    """``mill runs [tasks=...] [models=...] [limit=N] [open=N] [all=true]``."""
    from mill.report.console import make_console
    from mill.report.settings import command_settings

    cfg = command_settings(cfg, "runs")
    root = Path(str(cfg.get("dir") or "outputs"))
    if root.exists() and not root.is_dir():
        raise ConfigError(f"dir={root} is a file; give the outputs folder (dir=<folder>)")
    task, model = cfg.get("tasks"), cfg.get("models")
    entries, hidden = shown_runs(
        list_runs(root, _names_of(task), _names_of(model)), bool(cfg.get("all"))
    )
    limit = cfg.get("limit")
    shown = entries if limit is None else entries[:limit]
    which = cfg.get("open")
    if which is not None:
        n = which
        if not 1 <= n <= len(entries):
            raise ConfigError(
                f"open={n}: there are {len(entries)} runs listed; choose 1..{len(entries)}"
            )
        entry = entries[n - 1]
        if entry.report is None:
            raise ConfigError(
                f"run {n} ({entry.path}) has no report.html: it is {entry.status}"
                + (f" ({entry.error})" if entry.error else "")
            )
        print(entry.report)
        if sys.stdout.isatty() and not os.environ.get("CI"):
            webbrowser.open(entry.report.resolve().as_uri())
        return
    console = make_console(stderr=False, mode=str(cfg.get("progress", "auto")))
    if not entries:
        console.print(
            f"no runs under {root} (run mill from the folder holding outputs/)"
            if not hidden
            else f"no runs under {root} listed: {_hidden(hidden)}"
        )
        return
    filters = [f"{k}={v}" for k, v in (("tasks", task), ("models", model)) if v is not None]
    more = f", the newest {len(shown)} of {len(entries)}" if len(shown) < len(entries) else ""
    title = f"runs under {root}" + (f" ({', '.join(filters)})" if filters else "") + more
    console.print(runs_table(shown, title))
    for line in folder_lines(shown):
        console.print(line, soft_wrap=True)
    if hidden:
        console.print(_hidden(hidden), soft_wrap=True)
    console.print("mill runs open=N prints (and opens) the Nth run's report.html", soft_wrap=True)
