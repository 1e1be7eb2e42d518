"""Files Mill writes and reads back: atomic writes, JSON, the order of a sweep's job folders.

Every file of an experiment folder, a report or a sweep summary is written through
:func:`write_atomic` (a temp file renamed over the target), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from mill.errors import MillError


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through ``<path>.tmp`` and a rename."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON with a final newline, atomically."""
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def read_json(path: Path, error: type[Exception] = MillError) -> Any:
    """Parse the JSON file ``path``. Invalid JSON raises ``error`` naming the file and line;
    a missing or unreadable file raises the ``OSError``."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise error(f"{path} is not valid JSON ({err.msg} at line {err.lineno})") from err


_JOB_NUMBER = re.compile(r"(\d+)(?:_|$)")


def job_order(path: Path) -> tuple[int, str]:
    """Sort key of a sweep's job folders (``<job number>_<task>_<model>``): by job number,
    then by name; folders without a number come last."""
    match = _JOB_NUMBER.match(path.name)
    return (int(match.group(1)) if match else 1 << 30, path.name)


def resource_path(path: str) -> str:
    """The path of a file shipped in ``mill/resources`` (the ``${mill_resource:...}``
    config resolver)."""
    from importlib import resources

    return str(resources.files("mill.resources").joinpath(path))


def register_resource_resolver() -> None:
    """Register ``${mill_resource:<path>}`` with OmegaConf (once per process): the CLI's
    composition and every process that loads a built-in config (workers too)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("mill_resource"):
        OmegaConf.register_new_resolver("mill_resource", resource_path)
