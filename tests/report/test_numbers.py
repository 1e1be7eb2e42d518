"""One number format for tables, report.html, plots and sweep summaries."""

from __future__ import annotations

from pathlib import Path

from mill.report.numbers import number, paired_cells, value_pm_stderr
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


def test_a_paired_row_has_the_same_cells_in_the_console_and_in_compare_html() -> None:
    from dataclasses import asdict

    from rich.console import Console

    from mill.report.compare import Paired, compare_table

    row = Paired(
        task="arc_easy", metric="acc", n=250, a=0.61234, b=0.64, diff=0.02766,
        ci=(-0.0123, 0.0712), p_value=0.0412345, test="McNemar", higher_is_better=True,
        better=None, verdict="-",
    )  # fmt: skip
    cells = paired_cells(asdict(row))
    assert cells == ["250", "0.6123", "0.6400", "+0.0277", "[-0.0123, +0.0712]", "0.04123"]
    console = Console(record=True, width=200)
    console.print(compare_table([row], "B - A", 0.05))
    line = next(x for x in console.export_text().splitlines() if "arc_easy" in x)
    assert [c.strip() for c in line.strip("|").split("|")] == [
        "arc_easy", "acc ^", *cells, "McNemar",
    ]  # fmt: skip
    from mill.report.html import compare_page
    from mill.report.load import RunFolder
    from mill.results import Manifest, Results

    run = RunFolder(Path("run"), Results.from_dict({"tasks": {}}), Manifest(status="succeeded"))
    params = {"alpha": 0.05, "iters": 1000, "seed": 0}
    page = compare_page("A", "B", run, run, [asdict(row)], b"png", params)
    numbers = "".join(f'<td class="num">{c}</td>' for c in cells)
    assert f"<td>arc_easy</td><td>acc</td>{numbers}<td>McNemar</td>" in page


def test_huge_numbers_keep_every_column_of_the_table() -> None:
    """Issue 35, item 4: a perplexity of about 1e104 on 5 documents (a 105-digit number
    when written without exponent) pushed the task and metric columns out of the console
    table and report.txt; in scientific notation every column stays."""
    from rich.console import Console

    from mill.results import Results

    huge = {"value": 1.2345678e104, "stderr": 5.5e103, "n": 5, "higher_is_better": False}
    tiny = {"value": 1.5e-9, "stderr": -3.25e7, "n": 5, "higher_is_better": True}
    assert number(huge["value"]) == "1.2346e+104" and number(-3.25e7, sign=True) == "-3.2500e+07"
    assert number(999999.4) == "999999" and number(1e6) == "1.0000e+06"
    typed = Results.from_dict(
        {"tasks": {"wikitext": {"metrics": {"word_perplexity": huge, "odd": tiny}}}}
    )
    console = Console(record=True, width=80)
    console.print(results_table(typed, "wikitext | model | data=bundled"))
    text = console.export_text()
    assert "wikitext" in text and "word_perplexity" in text and "odd" in text
    assert "1.2346e+104" in text and "5.5000e+103" in text and "-3.2500e+07" in text
    assert max(len(line) for line in text.splitlines()) <= 80
