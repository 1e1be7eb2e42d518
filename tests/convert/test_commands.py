"""The converters are commands of their own: each console script pyproject.toml declares
names a ``main`` that answers ``--help`` under the script's name (the wheel installs them:
tests/test_install.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # import-linter depends on tomli where tomllib is missing
    import tomli as tomllib

SCRIPTS = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())[
    "project"
]["scripts"]


def test_the_converters_are_declared() -> None:
    assert SCRIPTS["mill-convert-gguf"] == "mill.convert.gguf:main"
    assert SCRIPTS["mill-convert-llama2c"] == "mill.convert.llama2c:main"


@pytest.mark.parametrize("script", ["mill-convert-gguf", "mill-convert-llama2c"])
def test_each_converter_answers_help_under_its_name(
    script: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module, _, attr = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), attr)
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {script} ")
