"""``curves.html``: every metric of an evaluation during training against the step, with
its stderr band, drawn by the report's own plotting and page code."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mill.files import write_atomic
from mill.report.html import chips, esc, figure, page, table
from mill.report.load import Score
from mill.report.numbers import value_pm_stderr
from mill.results.format import Results


def step_results(root: Path) -> list[tuple[int, Results]]:
    """(step, results) of every finished ``<root>/step-<N>`` folder, in step order."""
    from mill.results.format import Manifest

    out = []
    for path in root.glob("step-*"):
        step = path.name.removeprefix("step-")
        manifest = path / "manifest.json"
        if not step.isdigit() or not manifest.is_file():
            continue
        if Manifest.read(manifest).status == "succeeded":
            out.append((int(step), Results.read(path / "results.json")))
    return sorted(out, key=lambda item: item[0])


def series(
    history: Sequence[tuple[int, Results]],
) -> dict[str, dict[str, list[tuple[int, Score]]]]:
    """metric -> task -> [(step, score)] in step order."""
    out: dict[str, dict[str, list[tuple[int, Score]]]] = {}
    for step, results in sorted(history, key=lambda item: item[0]):
        for task, body in results.tasks.items():
            for metric, row in body.metrics.items():
                ci = None if row.ci is None else (row.ci[0], row.ci[1])
                score = Score(
                    task, metric, row.value, row.stderr, row.n, row.better_is_higher, interval=ci
                )
                out.setdefault(metric, {}).setdefault(task, []).append((step, score))
    return out


def _step_page(folder: Path, step: int) -> str:
    """A link to ``step-<N>/report.html`` (relative: the folder moves as a whole), or the
    step's name when the page is missing."""
    page = folder / f"step-{step}" / "report.html"
    if not page.is_file():
        return f"step {step}"
    return f"<a href='step-{step}/report.html'>step {step}</a>"


def write_curves(folder: Path, history: Sequence[tuple[int, Results]], source: str) -> Path:
    """``<folder>/curves.html`` and ``<folder>/curves/<metric>.png``; returns the page."""
    from mill.report.plots import curve_png

    drawn = series(history)
    (folder / "curves").mkdir(parents=True, exist_ok=True)
    pages = {step: _step_page(folder, step) for step, _ in history}
    parts = [
        "<h1>Evaluation during training</h1>",
        chips(
            [
                (f"{len(history)} evaluations", ""),
                (f"steps: {', '.join(str(s) for s, _ in sorted(history, key=lambda h: h[0]))}", ""),
                (f"data: {source}", ""),
            ]
        ),
        "<p>Each step's report: "
        + " · ".join(pages[s] for s, _ in sorted(history, key=lambda h: h[0]))
        + "</p>",
        (
            '<p class="note"><b>Bundled sample data.</b> These numbers come from the small '
            "excerpts shipped with Mill (data=bundled); they are not benchmark scores.</p>"
            if source == "bundled"
            else ""
        ),
    ]
    for metric, per_task in drawn.items():
        png = curve_png(metric, per_task)
        write_atomic(folder / "curves" / f"{metric}.png", png)
        parts.append(f"<h2>{esc(metric)}</h2>")
        parts.append(figure(png, f"{metric} by step", "value by step; bands: ±1 SE and 95% CI"))
        steps = sorted({step for points in per_task.values() for step, _ in points})
        rows = []
        for task, points in per_task.items():
            at = {step: score for step, score in points}
            rows.append(
                [esc(task)]
                + [value_pm_stderr(at[s].value, at[s].stderr) if s in at else "" for s in steps]
            )
        rows.append(["report", *(pages.get(s, "") for s in steps)])
        parts.append(table(["task", *(f"step {s}" for s in steps)], rows, range(1, len(steps) + 1)))
    html = page(
        "Evaluation during training — Mill",
        "".join(parts),
        "each step's folder is a Mill run: <code>mill report runs=[step-N]</code>",
    )
    path = folder / "curves.html"
    write_atomic(path, html)
    return path
