"""Mill: a declarative, fast, exact evaluation harness for language models.

Importing ``mill`` is cheap: torch, transformers and datasets load only when a model or a
dataset does. The Python API (loaded on first use):

* ``mill.evaluate(task=..., model=..., overrides=[...])`` -> :class:`mill.results.Results`
* ``mill.compose([...overrides])``: the config the ``mill`` command line would run
* ``mill.load(folder)``: a finished experiment folder, typed (:class:`mill.results.Run`),
  checked against the checksums the run recorded (``trust_edited=True`` reads edited files)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

__all__ = ["Results", "Run", "__version__", "compose", "evaluate", "load"]

_LAZY = {
    "evaluate": "mill.api",
    "compose": "mill.api",
    "load": "mill.results",
    "Results": "mill.results",
    "Run": "mill.results",
}

if TYPE_CHECKING:
    from mill.api import compose, evaluate
    from mill.results import Results, Run, load


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mill' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
