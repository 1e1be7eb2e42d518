"""Content digests of model files, for the identity a response cache keys scores by.

Every byte of a weight, tokenizer or config file counts: a checkpoint overwritten in place
with same-shaped weights gets a new digest. Hashing a 16 GB checkpoint takes a while, so a
file's SHA-256 is computed once per file version and remembered in
``$MILL_CACHE/digests.sqlite`` under (real path, size, mtime_ns, inode, ctime_ns): later
runs only ``stat`` the files. Any write to a file changes its mtime and ctime (a tool that
puts the old mtime back still moves the ctime, which no user can set), and a replaced file
has a new inode, so a remembered digest is never served for other bytes.

A file modified within the last :data:`RACY_S` seconds is hashed but not remembered: a
second write in the same clock tick as the first could leave every stat field unchanged
(git's "racily clean" problem). When the memo cannot be written (a read-only cache folder),
digests are computed and not remembered.

Each remembered row carries a checksum of its six fields (:func:`mill.files.checksum`): a
row that fails it (a digest edited or moved to another file version, which would serve an
older model's identity and so its cached answers) stops the run with one line naming the
store; a row from before checksums is computed again and rewritten.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mill.files import cache_root, checksum, corrupt_cache, sha256_file

RACY_S = 2.0
"""Files modified more recently than this are not remembered (see the module docstring)."""

_TABLE = "file_sha256"

# Files of a model folder that no loader reads: training state and docs. Everything else in
# the folder (weights, configs, tokenizer files, generation config, chat templates, remote
# code) is part of the model's identity.
_NOT_MODEL = ("optimizer", "scheduler", "rng_state", "trainer_state", "training_args", "readme")


def memo_path() -> Path:
    """The SQLite file that remembers file digests."""
    return cache_root() / "digests.sqlite"


_FIX = "delete it (it only remembers file digests; they are computed again)"


def row_checksum(key: tuple[str, int, int, int, int], sha256: str) -> str:
    """The checksum of a remembered digest: the file version's key and its SHA-256."""
    return checksum(*(str(part) for part in key), sha256)


def _memo() -> sqlite3.Connection | None:
    try:
        path = memo_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30)
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_TABLE} (path TEXT, size INTEGER, mtime_ns INTEGER,"
            " inode INTEGER, ctime_ns INTEGER, sha256 TEXT NOT NULL, checksum TEXT,"
            " PRIMARY KEY (path, size, mtime_ns, inode, ctime_ns))"
        )
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({_TABLE})")}
        if "checksum" not in columns:  # a store from before checksums
            with conn:
                conn.execute(f"ALTER TABLE {_TABLE} ADD COLUMN checksum TEXT")
        return conn
    except (OSError, sqlite3.Error):
        return None


def file_key(path: Path) -> tuple[str, int, int, int, int]:
    """(real path, size, mtime_ns, inode, ctime_ns): what the memo knows a file version by."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return (real, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def file_digests(paths: Iterable[Path]) -> dict[Path, str]:
    """SHA-256 of each file's bytes, taken from the memo when the file is unchanged."""
    paths = [Path(p) for p in paths]
    conn = _memo()
    out: dict[Path, str] = {}
    try:
        for path in paths:
            key = file_key(path)
            row = None
            if conn is not None:
                try:
                    row = conn.execute(
                        f"SELECT sha256, checksum FROM {_TABLE} WHERE path=? AND size=?"
                        " AND mtime_ns=? AND inode=? AND ctime_ns=?",
                        key,
                    ).fetchone()
                except sqlite3.Error:
                    row = None
            if row is not None and row[1] is not None:
                if row[1] != row_checksum(key, row[0]):
                    raise corrupt_cache(
                        memo_path(), f"the digest of {key[0]} fails its checksum", _FIX
                    )
                out[path] = row[0]
                continue
            out[path] = sha256_file(Path(key[0]))
            settled = time.time_ns() - key[2] > RACY_S * 1e9
            if conn is not None and settled:
                try:
                    with conn:
                        conn.execute(
                            f"INSERT OR REPLACE INTO {_TABLE} VALUES (?,?,?,?,?,?,?)",
                            (*key, out[path], row_checksum(key, out[path])),
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
    return _combine(files)


def _combine(files: list[Path]) -> str:
    digests = file_digests(files)
    combined = hashlib.sha256()
    for path in files:
        combined.update(f"{path.name}\x00{digests[path]}\n".encode())
    return combined.hexdigest()


def model_files(directory: Path) -> list[Path]:
    """The files of a model folder that make the model: every visible file but training
    state (optimizer, scheduler, RNG, trainer state and arguments) and the README."""
    return sorted(
        p
        for p in Path(directory).iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.lower().startswith(_NOT_MODEL)
    )


def hub_snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The local snapshot folder of a hub model at ``revision`` (a branch, tag or commit;
    None: main) in the Hugging Face cache, as ``from_pretrained`` just resolved it; None
    when there is none."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json", revision=revision or "main")
    except Exception:  # not a valid repo id: no snapshot to hash
        return None
    return Path(found).parent if isinstance(found, str) else None


def start_weights_identity(
    pretrained: str, revision: str | None
) -> Callable[[str | None], dict[str, Any]]:
    """:func:`weights_identity`, begun now for a local folder: its files are hashed in a
    background thread while the caller loads the model, and the returned function (of the
    commit the loader reports) waits for the digest. File reads and ``hashlib`` release the
    GIL, so on a first run of a checkpoint (nothing remembered yet: a 4.7 GB file took
    4.8 s to hash here) the hashing runs on another core beside the imports and the load
    instead of after them. A hub model's snapshot folder is known only after loading: its
    identity is computed when the function is called."""
    local = Path(os.path.expanduser(pretrained))
    if not local.is_dir():
        return lambda commit: weights_identity(pretrained, revision, commit)
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            done["digest"] = _combine(model_files(local))
        except BaseException as err:  # re-raised in the caller's thread
            done["error"] = err

    # a daemon: a load that fails does not wait for the hash before Mill exits
    thread = threading.Thread(target=work, name="mill-fingerprint", daemon=True)
    thread.start()

    def finish(commit: str | None) -> dict[str, Any]:
        thread.join()
        if "error" in done:
            raise done["error"]
        return {"commit": commit, "weights_fingerprint": done["digest"]}

    return finish


def weights_identity(pretrained: str, revision: str | None, commit: str | None) -> dict[str, Any]:
    """``commit`` and ``weights_fingerprint`` of a model's identity. A local folder: the
    digest of its model files (:func:`model_files`). A hub model: the resolved commit sha
    (its snapshot folder's name when the loader did not say) and the digest of the
    snapshot's files; the commit alone when no snapshot folder is found."""
    local = Path(os.path.expanduser(pretrained))
    if local.is_dir():
        return {"commit": commit, "weights_fingerprint": _combine(model_files(local))}
    snapshot = hub_snapshot(pretrained, commit or revision)
    if snapshot is None:
        return {"commit": commit, "weights_fingerprint": commit}
    return {
        "commit": commit or snapshot.name,
        "weights_fingerprint": _combine(model_files(snapshot)),
    }
