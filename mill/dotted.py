"""Nested settings as ``a.b.c`` keys: the trackers' parameters (sinks), the settings two
runs differ in (``compare``, ``report.html``) and the settings a resume may not change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten(node: Any, keep_empty: bool = False, prefix: str = "") -> dict[str, Any]:
    """Nested mappings -> ``{"a.b.c": value}``; lists and scalars stay values. An empty
    mapping below the top leaves no key, or stays a value (``{}``) with ``keep_empty``
    (reports show ``model.sampling: {}``); a non-mapping ``node`` is ``{prefix: node}``."""
    if not isinstance(node, Mapping):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if keep_empty and isinstance(value, Mapping) and not value:
            out[name] = value
        else:
            out.update(flatten(value, keep_empty, name))
    return out
