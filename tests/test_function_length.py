"""No function in mill/ is over 60 lines (docstring and signature included): a longer one
is split into steps with names (docs/contributing.md)."""

from __future__ import annotations

import ast
from pathlib import Path

MILL = Path(__file__).resolve().parents[1] / "mill"
LIMIT = 60


def test_no_function_in_mill_is_over_60_lines() -> None:
    long = []
    for path in sorted(MILL.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.relative_to(MILL.parent)}:{node.lineno} {node.name}")
    assert long == [], long
