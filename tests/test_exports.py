"""The public package faces (``__all__`` of each subpackage, :mod:`mill.exports`): every name
they list is there, none hides a submodule of the same name, and reading a face imports no
framework until a name that needs one is read."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from mill.exports import lazy_exports

FACES = (
    "mill.data",
    "mill.execution",
    "mill.experiment",
    "mill.ifeval",
    "mill.integrations",
    "mill.lm_eval",
    "mill.metrics",
    "mill.model",
    "mill.report",
    "mill.results",
    "mill.sinks",
)


@pytest.mark.parametrize("name", FACES)
def test_every_exported_name_resolves_and_shadows_no_submodule(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert len(exported) == len(set(exported)), "a name listed twice"
    submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    # `from mill.ifeval import checks` must stay the module, never a function of that name
    assert not set(exported) & submodules
    for attribute in exported:
        assert getattr(package, attribute) is not None, f"{name}.{attribute}"
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018 - the face's own AttributeError


def test_the_faces_import_no_framework() -> None:
    """In a fresh interpreter: every face imported, no torch, transformers, datasets, lm_eval
    or matplotlib (their names are imported from their modules on first read)."""
    code = (
        "import sys\n"
        f"for name in {FACES!r}: __import__(name)\n"
        "heavy = ('torch', 'transformers', 'datasets', 'lm_eval', 'matplotlib')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert proc.stdout.strip() == "[]", proc.stdout


def test_a_lazy_name_is_imported_once_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_home.py").write_text("VALUE = object()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = type(sys)("lazy_face")
    module.__dict__["__getattr__"] = lazy_exports("lazy_face", {"lazy_home": ("VALUE",)})
    monkeypatch.setitem(sys.modules, "lazy_face", module)
    import lazy_home

    assert "VALUE" not in vars(module)
    assert module.VALUE is lazy_home.VALUE and vars(module)["VALUE"] is lazy_home.VALUE
