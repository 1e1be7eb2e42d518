"""The layout map of docs/how-mill-works.md is what the import contract and the docstrings
say (``python -m scripts.layout_map --write`` regenerates it)."""

from __future__ import annotations

from scripts.layout_map import layers, layout_block, page_block, summary


def test_the_page_holds_the_generated_map() -> None:
    assert page_block() == layout_block(), (
        "docs/how-mill-works.md's layout map is stale: run python -m scripts.layout_map --write"
    )


def test_every_layered_module_has_a_line_with_its_docstring() -> None:
    block = layout_block()
    modules = [module for layer in layers() for module in layer]
    assert "benchmarks" in modules and "mill.errors" in modules
    for module in modules:
        assert summary(module), f"{module} has no docstring to describe it"
        assert f"`{module.replace('.', '/')}" in block, module


def test_a_summary_is_the_first_sentence_in_markdown() -> None:
    assert summary("mill.errors") == "Errors a user can fix."
    assert summary("mill.api") == "Mill from Python: `evaluate` and `compose`."
