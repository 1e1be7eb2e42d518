"""What conf/ (installed as ``mill.conf``) may reach: its Python is one docstring, so the import
contract has nothing of it to check; the code it names is its ``_target_``s, and each of
them, in every YAML file as written, resolves inside the allow-list with nothing added (a
class or function of ``mill``, the task library included) and lies in a module the import
contract layers (tests/test_import_contract.py)."""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from typing import Any

import yaml

from mill.instantiate import resolve_target
from tests.test_import_contract import _layered


def _files(folder: Traversable) -> list[Traversable]:
    found = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found += _files(entry)
        else:
            found.append(entry)
    return found


CONF = resources.files("mill.conf")
FILES = _files(CONF)


def _targets(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["_target_"]] if isinstance(node.get("_target_"), str) else []
        return own + [t for value in node.values() for t in _targets(value)]
    if isinstance(node, list):
        return [t for value in node for t in _targets(value)]
    return []


def test_conf_holds_no_python_but_its_docstring() -> None:
    python = [f.name for f in FILES if f.name.endswith(".py")]
    assert python == ["__init__.py"], "Python in conf/: layer it in pyproject.toml's contract"
    source = CONF.joinpath("__init__.py").read_text(encoding="utf-8")
    assert "import" not in source


def test_every_target_in_conf_resolves_inside_mill_in_a_layered_module() -> None:
    targets = {
        target
        for f in FILES
        if f.name.endswith(".yaml")
        for target in _targets(yaml.safe_load(f.read_text(encoding="utf-8")))
        if target != "???"  # task_base.yaml: each task names its own
    }
    assert len(targets) > 40 and "mill.tasks.arc.ArcEasy" in targets
    layered = [name for name in _layered() if name.startswith("mill.")]
    for target in sorted(targets):
        obj = resolve_target(target)  # raises, saying why, outside the allow-list
        assert any(obj.__module__ == n or obj.__module__.startswith(n + ".") for n in layered), (
            f"{target} lies in {obj.__module__}, which no layer of the contract names"
        )
