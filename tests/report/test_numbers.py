"""One number format for tables, report.html, plots and sweep summaries."""

from __future__ import annotations

from mill.report.numbers import number, value_pm_stderr
from mill.report.table import results_table
from mill.runner.sweep import cell


def test_decimals_signs_and_missing_values() -> None:
    assert number(0.123456) == "0.1235"
    assert number(0.123456, 3) == "0.123"
    assert number(0.5, sign=True) == "+0.5000" and number(-0.5, sign=True) == "-0.5000"
    assert number(123456.7) == "123457" and number(-2500.4, sign=True) == "-2500"
    assert number(None) == "-" and number(12) == "12" and number("12 tasks") == "12 tasks"
    assert number(float("nan")) == "nan" and number(float("inf")) == "inf"
    assert value_pm_stderr(0.5, 0.01) == "0.5000 ± 0.0100"
    assert value_pm_stderr(0.5, None) == "0.5000"


def test_console_table_and_sweep_cell_agree() -> None:
    row = {"value": 0.61234, "stderr": 0.0123, "n": 100, "higher_is_better": True}
    from rich.console import Console

    console = Console(record=True, width=200)
    from mill.results import Results

    typed = Results.from_dict({"tasks": {"arc": {"metrics": {"acc": row}}}})
    console.print(results_table(typed, "t"))
    text = console.export_text()
    assert "0.6123" in text and "0.0123" in text and " 100 " in text
    assert cell(row) == "0.6123 ± 0.0123"
    assert cell({"value": None}) == "-"
