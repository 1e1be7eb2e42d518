"""The summary of a sweep (``mill -m ...``): task x model, value ± stderr, failures marked.

Hydra 1.3 gives ``on_multirun_end`` only the config, so the summary is read back from the
job folders under ``hydra.sweep.dir`` (``manifest.json`` for each job's status,
``results.json`` for its numbers). That also works when the jobs ran elsewhere (SLURM).
Written as ``summary.json`` and ``summary.md`` in the sweep folder and printed to stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar, cast

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from mill.errors import MillError
from mill.files import job_order
from mill.redact import redact, redact_text
from mill.report.numbers import value_pm_stderr
from mill.results import Manifest, MetricValue, Results

T = TypeVar("T")

LAST: dict[str, Any] | None = None
"""The summary of the last sweep of this process (read by ``mill``'s exit code)."""


def _read(path: Path, kind: type[T]) -> tuple[T | None, str | None]:
    """A typed ``manifest.json`` or ``results.json`` (its ``read``), or None and why not
    (no reason when the file is missing)."""
    if not path.is_file():
        return None, None
    try:
        return kind.read(path), None  # type: ignore[attr-defined]
    except (OSError, ValueError, TypeError, MillError) as err:
        return None, f"{path.name} is unreadable: {err}"


def _cell(row: MetricValue) -> dict[str, Any]:
    return {"value": row.value, "stderr": row.stderr, "n": row.n}


def _job_config(job_dir: Path) -> dict[str, Any]:
    for name in ("resolved.yaml", ".hydra/config.yaml"):
        path = job_dir / name
        if path.is_file():
            try:
                loaded = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
            except Exception:  # an unreadable config leaves the names unknown
                continue
            if isinstance(loaded, dict):
                return cast(dict[str, Any], loaded)
    return {}


def _overrides(job_dir: Path) -> list[str]:
    path = job_dir / ".hydra" / "overrides.yaml"
    try:
        loaded = OmegaConf.to_container(OmegaConf.load(path))
    except Exception:  # no overrides file: nothing to show
        return []
    return [str(o) for o in loaded] if isinstance(loaded, list) else []


def _name(config: dict[str, Any], key: str) -> str:
    node = config.get(key)
    if isinstance(node, dict) and isinstance(node.get("name"), str):
        return node["name"]
    return "?"


def summarize(sweep_dir: Path) -> dict[str, Any]:
    """Every job folder's status and numbers."""
    jobs = []
    for job_dir in sorted(
        (p for p in Path(sweep_dir).iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=job_order,
    ):
        manifest, manifest_error = _read(job_dir / "manifest.json", Manifest)
        results, results_error = _read(job_dir / "results.json", Results)
        config = _job_config(job_dir)
        if manifest is None and results is None and not config:
            continue
        status = manifest.status if manifest is not None else "failed"
        problem = manifest_error
        if results is None and status == "succeeded":
            status = "failed"
            problem = results_error or "the job left no results.json"
        metrics: dict[str, dict[str, Any]] = {}
        if results is not None and status == "succeeded":
            for task, block in results.tasks.items():
                metrics[task] = {name: _cell(row) for name, row in block.metrics.items()}
            for group, body in results.groups.items():
                for name, both in body.metrics.items():
                    for kind, part in both.kinds():
                        metrics.setdefault(f"{group} ({kind})", {})[name] = _cell(part)
        jobs.append(
            {
                "job": job_dir.name,
                "task": _name(config, "task"),
                "model": _name(config, "model"),
                "overrides": _overrides(job_dir),
                "status": status,
                "error": (manifest.error if manifest is not None else None)
                or problem
                or (None if manifest else "the job left no manifest.json"),
                "metrics": metrics,
            }
        )
    failed = sum(1 for j in jobs if j["status"] != "succeeded")
    return {
        "sweep_dir": str(sweep_dir),
        "jobs": jobs,
        "succeeded": len(jobs) - failed,
        "failed": failed,
    }


def cell(row: dict[str, Any] | None) -> str:
    """``value ± stderr`` (4 decimals), or ``-`` when missing."""
    if not row or row.get("value") is None:
        return "-"
    stderr = row.get("stderr")
    return value_pm_stderr(row["value"], stderr if isinstance(stderr, (int, float)) else None)


def _row_labels(jobs: list[dict[str, Any]]) -> dict[str, str]:
    """Extra label for jobs that share a task and model (other overrides tell them apart)."""
    seen: dict[tuple[str, str], int] = {}
    for job in jobs:
        seen[(job["task"], job["model"])] = seen.get((job["task"], job["model"]), 0) + 1
    labels = {}
    for job in jobs:
        if seen[(job["task"], job["model"])] > 1:
            rest = [
                o
                for o in job["overrides"]
                if not o.startswith(("task=", "model=", "hydra.", "+metrics", "metrics="))
            ]
            labels[job["job"]] = f" ({', '.join(rest) or job['job']})"
        else:
            labels[job["job"]] = ""
    return labels


def pivot(summary: dict[str, Any]) -> dict[str, tuple[list[str], list[str], dict]]:
    """Per metric: (row labels, model columns, {(row, model): cell text})."""
    jobs = summary["jobs"]
    labels = _row_labels(jobs)
    metric_names: list[str] = []
    task_metrics: dict[str, set[str]] = {}
    for job in jobs:
        for task, block in job["metrics"].items():
            for name in block:
                if name not in metric_names:
                    metric_names.append(name)
                task_metrics.setdefault(task, set()).add(name)
    tables: dict[str, tuple[list[str], list[str], dict]] = {}
    for metric in metric_names or ["(no results)"]:
        rows: list[str] = []
        models: list[str] = []
        cells: dict[tuple[str, str], str] = {}
        for job in jobs:
            suffix = labels[job["job"]]
            if job["status"] == "succeeded":
                entries = [
                    (task + suffix, block[metric])
                    for task, block in job["metrics"].items()
                    if metric in block
                ]
                for label, row in entries:
                    cells[(label, job["model"])] = cell(row)
            else:
                if job["task"] in task_metrics and metric not in task_metrics[job["task"]]:
                    continue
                label = job["task"] + suffix
                entries = [(label, None)]
                cells[(label, job["model"])] = "FAILED"
            for label, _ in entries:
                if label not in rows:
                    rows.append(label)
            if entries and job["model"] not in models:
                models.append(job["model"])
        tables[metric] = (rows, models, cells)
    return tables


def to_markdown(summary: dict[str, Any]) -> str:
    lines = [
        f"# Sweep summary: {summary['sweep_dir']}",
        "",
        f"{len(summary['jobs'])} jobs: {summary['succeeded']} succeeded, "
        f"{summary['failed']} failed. Cells are value ± stderr.",
    ]
    for metric, (rows, models, cells) in pivot(summary).items():
        lines += ["", f"## {metric}", ""]
        lines.append("| task | " + " | ".join(models) + " |")
        lines.append("|---|" + "---:|" * len(models))
        for row in rows:
            values = [cells.get((row, m), "") for m in models]
            values = [f"**{v}**" if v == "FAILED" else v for v in values]
            lines.append(f"| {row} | " + " | ".join(values) + " |")
    failures = [j for j in summary["jobs"] if j["status"] != "succeeded"]
    if failures:
        lines += ["", "## Failures", ""]
        for job in failures:
            lines.append(
                f"- `{job['job']}` ({job['task']} x {job['model']}, {job['status']}): "
                f"{job['error'] or 'no error recorded'}"
            )
    return "\n".join(lines) + "\n"


def print_summary(summary: dict[str, Any]) -> None:
    """One status line and the failed jobs (the task x model table is printed by the
    sweep report, :func:`mill.report.rebuild.report_after_sweep`; the per-metric task x
    model grids are in summary.md)."""
    from mill.report.console import make_console

    console = make_console(stderr=False)
    console.print(
        f"[mill] sweep (value ± stderr): {summary['succeeded']} succeeded, "
        f"{summary['failed']} failed; "
        f"{Path(summary['sweep_dir']) / 'summary.md'}"
    )
    for job in summary["jobs"]:
        if job["status"] != "succeeded":
            console.print(f"[mill] FAILED {job['job']}: {job['error']}")


def write_summary(sweep_dir: Path) -> dict[str, Any]:
    summary = redact(summarize(sweep_dir))
    from mill.files import inside, write_inside, write_json

    write_json(inside(sweep_dir, Path(sweep_dir) / "summary.json"), summary)
    write_inside(sweep_dir, "summary.md", to_markdown(summary))
    return summary


def redact_sweep_config(sweep_dir: Path) -> None:
    """Mask the credentials of URLs in the ``multirun.yaml`` Hydra's sweeper writes into
    the sweep folder (the whole composed config) before the first job starts."""
    from mill.files import write_atomic

    path = Path(sweep_dir) / "multirun.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:  # not written (another sweeper): nothing to mask
        return
    clean = redact_text(text)
    if clean != text:
        write_atomic(path, clean)


class SweepSummary(Callback):
    """Hydra callback (``conf/hydra/callbacks/mill.yaml``): summarize at the end of a sweep;
    keep credentials out of the sweep folder's ``multirun.yaml`` from the first job on."""

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized() and str(HydraConfig.get().mode) == "RunMode.MULTIRUN":
            redact_sweep_config(Path(str(HydraConfig.get().sweep.dir)))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global LAST
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        redact_sweep_config(sweep_dir)
        LAST = write_summary(sweep_dir)
        print_summary(LAST)
