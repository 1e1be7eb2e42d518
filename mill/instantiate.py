"""The one place where config ``_target_``s become objects, behind an allow-list.

A ``_target_`` string is checked by what it really names, not by how it is spelled. It is
resolved the way Hydra resolves it (import the first part, then attribute by attribute,
importing submodules where an attribute is missing), and allowed only when

* every module on the way is a real submodule of the one before it (``mill.cli.os`` is
  the ``os`` module reached through an attribute of ``mill.cli``: refused);
* every other object on the way is a class defined inside an allowed package;
* no part is a dunder (``__init__``, ``__globals__``, ...);
* the object it names is a class or function (not a module) whose defining module
  (``obj.__module__``) is inside an allowed package: ``mill`` and the user's
  ``allow_targets`` (e.g. ``[my_tasks.]``).

Nothing outside an allowed package is imported to check a target: the first check is the
spelling, so a target naming another package is refused before any of its code runs.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from mill.errors import ConfigError

BUILTIN_PREFIXES = ("mill.",)


def _targets(node: Any, path: str = "") -> Iterable[tuple[str, str]]:
    if isinstance(node, DictConfig):
        for key in node.keys():
            value = node._get_node(key)
            if key == "_target_":
                yield path or "<root>", str(node[key])
            else:
                yield from _targets(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, ListConfig):
        for i, value in enumerate(node):
            yield from _targets(value, f"{path}[{i}]")


def _packages(allow: Iterable[str]) -> tuple[str, ...]:
    """Allowed package names (``mill``, ``my_tasks``, ``my_tasks.sub``), no trailing dots."""
    out = []
    for prefix in (*BUILTIN_PREFIXES, *allow):
        name = str(prefix).strip().rstrip(".")
        if name:
            out.append(name)
    return tuple(dict.fromkeys(out))


def _inside(module: Any, packages: tuple[str, ...]) -> bool:
    return isinstance(module, str) and any(
        module == p or module.startswith(p + ".") for p in packages
    )


def resolve_target(target: str, allow: Iterable[str] = ()) -> Any:
    """The class or function ``target`` names, when the allow-list permits it.

    Raises ValueError saying why not (the caller adds which setting it was)."""
    packages = _packages(allow)
    parts = target.split(".")
    if not target or any(not p for p in parts):
        raise ValueError("it is not a dotted name like package.module.Class")
    if not _inside(target, packages):
        raise ValueError("it is outside the allowed packages")
    dunder = next((p for p in parts if p.startswith("__") and p.endswith("__")), None)
    if dunder:
        raise ValueError(f"it reaches through {dunder!r}")
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError as err:
        raise ValueError(f"module {parts[0]!r} cannot be imported ({err})") from None
    for m in range(1, len(parts)):
        here = ".".join(parts[: m + 1])
        parent = obj
        if hasattr(parent, parts[m]):
            obj = getattr(parent, parts[m])
        elif isinstance(parent, ModuleType):
            try:
                obj = importlib.import_module(here)
            except ModuleNotFoundError:
                raise ValueError(f"{here!r} does not exist") from None
        else:
            raise ValueError(f"{here!r} does not exist")
        if isinstance(obj, ModuleType):
            if obj.__name__ != here or not _inside(obj.__name__, packages):
                raise ValueError(
                    f"{here!r} is the module {obj.__name__!r} imported by "
                    f"{'.'.join(parts[:m])!r}, not a part of it"
                )
        elif m < len(parts) - 1 and not (
            inspect.isclass(obj) and _inside(getattr(obj, "__module__", None), packages)
        ):
            raise ValueError(f"it reaches through {here!r}, which is not a class of its own")
    if isinstance(obj, ModuleType) or not callable(obj):
        raise ValueError("it names no class or function")
    module = getattr(obj, "__module__", None)
    if not _inside(module, packages):
        raise ValueError(f"it names {getattr(obj, '__qualname__', obj)!r} defined in {module!r}")
    return obj


def check_targets(node: Any, allow: Iterable[str] = ()) -> None:
    """Raise ConfigError for any ``_target_`` that does not name a class or function
    defined inside ``mill`` or the packages of ``allow`` (see the module docstring)."""
    allow = tuple(allow)
    packages = _packages(allow)
    for where, target in _targets(node):
        try:
            resolve_target(target, allow)
        except ValueError as err:
            raise ConfigError(
                f"{where}._target_={target!r} is not allowed: {err}. Mill instantiates only "
                f"classes and functions defined in {', '.join(p + '.*' for p in packages)}. "
                "Add its package to allow_targets (e.g. +allow_targets=[my_tasks.]) if you "
                "trust it"
            ) from None


def instantiate(node: Any, allow: Iterable[str] = (), **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` after checking every ``_target_`` against the allow-list."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate as hydra_instantiate

    if not isinstance(node, (DictConfig, ListConfig)):
        node = OmegaConf.create(node)
    check_targets(node, allow)
    try:
        return hydra_instantiate(node, **kwargs)
    except InstantiationException as err:
        cause = err.__cause__
        from mill.errors import MillError

        if isinstance(cause, MillError):
            raise cause from None
        raise ConfigError(f"cannot build {node.get('_target_', 'object')}: {err}") from err
