"""Console tables: one run (task, metric, value, stderr, n) and several runs (task x model)."""

from __future__ import annotations

from rich import box
from rich.table import Table

from mill.report.load import Score
from mill.report.numbers import number
from mill.results.format import Results

MARKERS = "^ higher is better, v lower is better"
"""The footer of a table whose metrics carry the markers."""


def results_table(results: Results, title: str) -> Table:
    """Rows per task and metric, then group rows (micro and macro)."""
    table = Table(title=title, caption=MARKERS, box=box.ASCII, safe_box=True)
    table.add_column("task")
    table.add_column("metric")
    for col in ("value", "stderr", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, task in results.tasks.items():
        for metric, row in task.metrics.items():
            arrow = "^" if row.better_is_higher else "v"
            table.add_row(
                name, f"{metric} {arrow}", number(row.value), number(row.stderr), number(row.n)
            )
    for name, group in results.groups.items():
        for metric, rows in group.metrics.items():
            for kind, row in rows.kinds():  # lm-eval groups report one of the two
                unit = "samples" if kind == "micro" else "tasks"
                table.add_row(
                    f"{name} ({kind})",
                    metric,
                    number(row.value),
                    number(row.stderr),
                    f"{row.n} {unit}",
                )
    return table


def usage_table(usage: dict[str, dict[str, int]]) -> Table:
    """Per task: what this run asked of a served model (requests sent, tokens)."""
    table = Table(title="served model usage (this run)", box=box.ASCII, safe_box=True)
    table.add_column("task")
    for col in ("requests", "prompts", "prompt tokens", "completion tokens"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, row in usage.items():
        table.add_row(
            name,
            str(row["requests"]),
            str(row["prompts"]),
            str(row["prompt_tokens"]),
            str(row["completion_tokens"]),
        )
    return table


def sweep_table(entries: list[tuple[str, Score]], title: str) -> Table:
    """Several runs: one row per task x model (x metric), models of a task next to each other.

    ``entries``: (model label, score) pairs, in run order."""
    table = Table(title=title, caption=MARKERS, box=box.ASCII, safe_box=True)
    for col in ("task", "metric", "model"):
        table.add_column(col)
    for col in ("value", "stderr", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    keys = list(dict.fromkeys((s.row_name, s.metric) for _, s in entries))
    for k, (row_name, metric) in enumerate(keys):
        rows = [(label, s) for label, s in entries if (s.row_name, s.metric) == (row_name, metric)]
        for i, (label, s) in enumerate(rows):
            arrow = "^" if s.higher_is_better else "v"
            unit = {"micro": " samples", "macro": " tasks"}.get(s.kind, "")
            table.add_row(
                row_name,
                f"{metric} {arrow}",
                label,
                number(s.value),
                number(s.stderr),
                f"{s.n}{unit}",
                end_section=i == len(rows) - 1 and k < len(keys) - 1,
            )
    return table
