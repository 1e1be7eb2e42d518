"""Public package faces that import on first use: a package's ``__init__`` names what it
exports and from which module, and ``__getattr__ = lazy_exports(__name__, {...})`` imports a
module only when one of its names is read (``import mill`` and ``mill --help`` stay free of
torch; a face never closes an import cycle)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: ``exports`` maps each module to the
    names it gives the package; a name is imported from its module when first read, then
    kept in the package's namespace."""
    home = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
