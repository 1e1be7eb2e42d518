"""The one place where config ``_target_``s become objects, behind an allow-list."""

from __future__ import annotations

from collections.abc import Iterable
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


def check_targets(node: Any, allow: Iterable[str] = ()) -> None:
    """Raise ConfigError for any ``_target_`` outside ``mill.*`` and the extra prefixes."""
    prefixes = tuple(BUILTIN_PREFIXES) + tuple(allow)
    for where, target in _targets(node):
        if not target.startswith(prefixes):
            raise ConfigError(
                f"{where}._target_={target!r} is not allowed; Mill instantiates only "
                f"{', '.join(p + '*' for p in prefixes)}. Add its module prefix to "
                "allow_targets (e.g. +allow_targets=[my_tasks.]) if you trust it"
            )


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
