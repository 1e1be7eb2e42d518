"""Files Mill writes and reads back: atomic writes, JSON, the order of a sweep's job folders.

Every file of an experiment folder, a report or a sweep summary is written through
:func:`write_atomic` (a temp file renamed over the target), so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
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


def write_json(path: Path, data: Any) -> str:
    """Write ``data`` as indented UTF-8 JSON with a final newline, atomically; returns the
    SHA-256 (hex) of the bytes written."""
    blob = (json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    write_atomic(path, blob)
    return hashlib.sha256(blob).hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of the file ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


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
