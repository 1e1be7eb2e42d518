"""The results table: task, metric, value, stderr, n."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def results_table(results: dict[str, Any], title: str) -> Table:
    """Rows per task and metric, then group rows (micro and macro)."""
    table = Table(title=title, box=box.ASCII, safe_box=True)
    table.add_column("task")
    table.add_column("metric")
    for col in ("value", "stderr", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, task in results.get("tasks", {}).items():
        for metric, row in task["metrics"].items():
            arrow = "^" if row.get("higher_is_better", True) else "v"
            table.add_row(
                name, f"{metric} {arrow}", _fmt(row["value"]), _fmt(row["stderr"]), _fmt(row["n"])
            )
    for name, group in results.get("groups", {}).items():
        for metric, rows in group["metrics"].items():
            for kind in ("micro", "macro"):
                row = rows[kind]
                unit = "samples" if kind == "micro" else "tasks"
                table.add_row(
                    f"{name} ({kind})",
                    metric,
                    _fmt(row["value"]),
                    _fmt(row["stderr"]),
                    f"{row['n']} {unit}",
                )
    return table
