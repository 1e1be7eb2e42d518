"""Content digests of model files, for the identity a response cache keys scores by.

Every byte of a weight, tokenizer or config file counts: a checkpoint overwritten in place
with same-shaped weights gets a new digest. Hashing a 16 GB checkpoint takes a while, so a
file's SHA-256 is computed once per file version and remembered in
``$MILL_CACHE/digests.sqlite`` under (real path, size, mtime_ns, inode): later runs only
``stat`` the files. Any write to a file changes its mtime or size (or its inode, when it is
replaced), so a remembered digest is never served for other bytes. When the memo cannot be
written (a read-only cache folder), digests are computed and not remembered.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

_CHUNK = 8 << 20


def cache_root() -> Path:
    """``$MILL_CACHE`` or ``~/.cache/mill``: where Mill keeps what it builds or remembers."""
    return Path(os.environ.get("MILL_CACHE", Path.home() / ".cache" / "mill"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _memo() -> sqlite3.Connection | None:
    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(root / "digests.sqlite", timeout=30)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS digests (path TEXT, size INTEGER, mtime_ns INTEGER,"
            " inode INTEGER, sha256 TEXT NOT NULL, PRIMARY KEY (path, size, mtime_ns, inode))"
        )
        return conn
    except (OSError, sqlite3.Error):
        return None


def file_digests(paths: Iterable[Path]) -> dict[Path, str]:
    """SHA-256 of each file's bytes, taken from the memo when the file is unchanged."""
    paths = [Path(p) for p in paths]
    conn = _memo()
    out: dict[Path, str] = {}
    try:
        for path in paths:
            real = os.path.realpath(path)
            st = os.stat(real)
            key = (real, st.st_size, st.st_mtime_ns, st.st_ino)
            row = None
            if conn is not None:
                row = conn.execute(
                    "SELECT sha256 FROM digests WHERE path=? AND size=? AND mtime_ns=? AND inode=?",
                    key,
                ).fetchone()
            if row is not None:
                out[path] = row[0]
                continue
            out[path] = _sha256(Path(real))
            if conn is not None:
                try:
                    with conn:
                        conn.execute(
                            "INSERT OR REPLACE INTO digests VALUES (?,?,?,?,?)", (*key, out[path])
                        )
                except sqlite3.Error:
                    pass
    finally:
        if conn is not None:
            conn.close()
    return out


def folder_digest(directory: Path, suffixes: Iterable[str] | None = None) -> str:
    """One SHA-256 over the names and content digests of a folder's files (all files, or
    those whose suffix is in ``suffixes``), in name order; hidden files are skipped."""
    directory = Path(directory)
    wanted = None if suffixes is None else set(suffixes)
    files = sorted(
        p
        for p in directory.iterdir()
        if p.is_file() and not p.name.startswith(".") and (wanted is None or p.suffix in wanted)
    )
    digests = file_digests(files)
    combined = hashlib.sha256()
    for path in files:
        combined.update(f"{path.name}\x00{digests[path]}\n".encode())
    return combined.hexdigest()
