"""The import-layer contract (``[tool.importlinter]`` in pyproject.toml) covers every module
of ``mill``: a module left out of the layers is a module nothing checks; and the runtime
never imports the tools of ``mill.bench``."""

from __future__ import annotations

import pkgutil
import sys
from pathlib import Path

import mill

if sys.version_info >= (3, 11):
    import tomllib
else:  # import-linter depends on tomli where tomllib is missing
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _contracts() -> list[dict]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _mill_modules() -> set[str]:
    """The modules of the ``mill`` package but those the install maps in from other folders
    (``[tool.setuptools.package-dir]``: mill.conf and mill.tasks, from conf/ and tasks/),
    which a checkout may link into mill/ and an editable install does not."""
    tool = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]
    mapped = {k for k, v in tool["setuptools"]["package-dir"].items() if k != "mill"}
    return {f"mill.{m.name}" for m in pkgutil.iter_modules(mill.__path__)} - mapped


def _layered() -> list[str]:
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    names = []
    for layer in layers:
        for name in layer.replace(":", "|").split("|"):
            names.append(name.strip().strip("()"))
    return names


def test_every_mill_module_is_in_a_layer() -> None:
    modules = _mill_modules()
    layered = _layered()
    assert len(layered) == len(set(layered)), "a module is in two layers"
    assert modules <= set(layered), sorted(modules - set(layered))
    assert layered[0] == "mill.bench"  # the tools: above everything


def test_the_runtime_is_forbidden_to_import_the_tools() -> None:
    """The second contract's sources are every module of mill but mill.bench: a new module
    is kept from importing the benchmark and parity tools as soon as it is layered."""
    (forbidden,) = [c for c in _contracts() if c["type"] == "forbidden"]
    assert forbidden["forbidden_modules"] == ["mill.bench"]
    runtime = _mill_modules() - {"mill.bench"}
    assert sorted(forbidden["source_modules"]) == sorted(runtime)
