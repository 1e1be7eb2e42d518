"""The run report's IFEval section: accuracy per instruction type, chart and table."""

from __future__ import annotations

from mill.metrics.ifeval import TypeAccuracy
from mill.report import html, plots

ROWS = [TypeAccuracy("punctuation:no_comma", 4, 3, 4), TypeAccuracy("startend:quotation", 2, 0, 1)]


def test_the_chart_is_a_png_and_the_section_lists_each_type_with_its_count() -> None:
    png = plots.instruction_types_png("ifeval", ROWS)
    assert png.startswith(b"\x89PNG")
    section = html.instruction_types_section([("ifeval", ROWS, png)])
    assert "<h2>Instruction types</h2>" in section
    assert (
        '<td>punctuation:no_comma</td><td class="num">4</td><td class="num">0.7500</td>'
        '<td class="num">1.0000</td>'
    ) in section
    assert html.instruction_types_section([]) == ""
