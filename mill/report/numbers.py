"""How every report shows a number: the console tables, report.html, the plots and a
sweep's summary all format through :func:`number`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SCIENTIFIC_FROM = 1e6
"""Magnitudes from here on are written in scientific notation (``1.2346e+104``): a
perplexity of a model that knows nothing has a hundred digits, and a column that wide
pushes a table's other columns out."""


def number(value: Any, digits: int = 4, sign: bool = False) -> str:
    """``digits`` decimals (none for magnitudes of 1000 and more: perplexities; scientific
    notation from :data:`SCIENTIFIC_FROM`), a leading ``+`` for positive numbers when
    ``sign``, ``-`` for a missing value; integers and anything else that is not a float as
    they are."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:+d}" if sign else str(value)
    if not math.isfinite(value):
        return str(value)
    plus = "+" if sign else ""
    if abs(value) >= SCIENTIFIC_FROM:
        return f"{value:{plus}.{digits}e}"
    if abs(value) >= 1000:
        return f"{value:{plus}.0f}"
    return f"{value:{plus}.{digits}f}"


def value_pm_stderr(value: Any, stderr: Any, digits: int = 4) -> str:
    """``value ± stderr``, or the value alone when the stderr is missing."""
    text = number(value, digits)
    return text if stderr is None else f"{text} ± {number(stderr, digits)}"


def paired_cells(row: Mapping[str, Any]) -> list[str]:
    """The numbers of one row of ``compare``'s paired differences (a
    :class:`mill.report.compare.Paired` as a dict), as the console table and
    ``compare.html`` both show them: shared docs, A, B, B-A, its CI, p."""
    low, high = row["ci"]
    return [
        str(row["n"]),
        number(row["a"]),
        number(row["b"]),
        number(row["diff"], sign=True),
        f"[{number(low, sign=True)}, {number(high, sign=True)}]",
        f"{row['p_value']:.4g}",
    ]
