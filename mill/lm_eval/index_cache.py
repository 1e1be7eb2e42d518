"""lm-eval's task index, built once and kept under Mill's cache.

lm-eval's ``TaskManager`` parses every task YAML it can find (about 14,000 in lm-eval's own
``tasks`` folder, 12 s of CPU) into an index of task, group and tag names at every start.
The bridge keeps that index as JSON under ``$MILL_CACHE/lm_eval/``, one file per indexed
folder (lm-eval's tasks folder, every ``include_path``), and hands it to the ``TaskManager``
instead of rebuilding it, as long as nothing it was built from changed: a folder's key is
lm-eval's and PyYAML's versions plus a fingerprint of the folder's files (relative path,
size, ``mtime_ns`` of every file but Python sources: the YAMLs and the templates they
``include``; a stat walk, no parsing). An edited, added or removed YAML, or another lm-eval,
rebuilds that folder's part.

The index maps a name to an ``Entry`` (name, kind, yaml_path, cfg, tags). The kind (an enum),
the path and the tags (a set) are stored as their names, strings and sorted lists; ``cfg`` (the
YAML as parsed, ``!function`` left as a string) is stored when it survives a JSON round trip
unchanged, else the entry is marked and its YAML parsed again on load, as lm-eval parses it.
Tasks are loaded from the YAML files themselves (lm-eval re-reads ``yaml_path`` when it builds
a task), so the cache changes no task, request or result; only the index.

Each file is sealed (:func:`mill.files.write_sealed_json`): the key it was built from, the
entries and a checksum of both; a file that fails it (an entry's ``yaml_path`` edited to
load another task under its name) stops the run with one line naming it.

Not covered: a YAML that ``include``s a file outside the indexed folders; editing that file
alone does not rebuild the index (the task itself still loads the edited file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from mill.files import as_json, read_sealed_json, sha256_json, write_sealed_json
from mill.model.identity import cache_root

log = logging.getLogger("mill")

FORMAT = 1
_ENTRY_FIELDS = ("name", "kind", "yaml_path", "cfg", "tags")
_IGNORED_DIRS = {"__pycache__", ".ipynb_checkpoints"}
_NOT_INDEXED = (".py", ".pyc", ".pyo")


def cache_folder() -> Path:
    """Where the bridge keeps lm-eval task indexes."""
    return cache_root() / "lm_eval"


def index_roots(include_path: Sequence[str], include_defaults: bool) -> list[Path]:
    """The folders lm-eval's ``TaskManager`` indexes, in its order (defaults first)."""
    import lm_eval.tasks

    roots = [Path(lm_eval.tasks.__file__).parent] if include_defaults else []
    return roots + [Path(p) for p in include_path]


def fingerprint(root: Path) -> str:
    """A digest of every file under ``root`` that the index can depend on (relative path,
    size, mtime_ns), Python sources and caches excepted. A stat walk: nothing is read."""
    digest = hashlib.sha256()
    seen: set[tuple[int, int]] = set()
    top = os.path.join(str(root), "")
    for folder, dirs, files in os.walk(root, followlinks=True):
        st = os.stat(folder)
        if (st.st_dev, st.st_ino) in seen:  # a symlink loop
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS)
        prefix = os.path.join(folder, "")
        rel = prefix[len(top) :]
        for name in sorted(files):
            if name.endswith(_NOT_INDEXED):
                continue
            try:
                st = os.stat(prefix + name)
            except OSError:  # a dangling link: lm-eval skips it too
                continue
            digest.update(f"{rel}{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    import lm_eval
    import yaml

    return {
        "format": str(FORMAT),
        "lm_eval": str(getattr(lm_eval, "__version__", "")),
        "pyyaml": f"{yaml.__version__}{'+libyaml' if yaml.__with_libyaml__ else ''}",
    }


def cache_file(root: Path) -> Path:
    """One file per indexed folder (lm-eval's own, each include path): the default index is
    kept once whatever the include paths; the file's key says what it was built from."""
    key = sha256_json([str(root), str(root.resolve())], ascii_only=True)  # names kept
    return cache_folder() / f"index-{key[:24]}.json"


def cache_key(root: Path) -> dict[str, Any]:
    """What a folder's index was built from: versions, the folder and its files' fingerprint."""
    return {
        **_versions(),
        "path": str(root),
        "real": str(root.resolve()),
        "files": fingerprint(root),
    }


def _supported() -> bool:
    """The index is the structure this module knows (lm-eval 0.4.13's)."""
    try:
        from lm_eval.tasks import TaskManager
        from lm_eval.tasks._index import Entry, Kind, TaskIndex  # noqa: F401
    except ImportError:
        return False
    names = tuple(f.name for f in dataclasses.fields(Entry))
    return names == _ENTRY_FIELDS and isinstance(getattr(TaskManager, "task_index", None), property)


def _plain(value: Any) -> bool:
    """``value`` comes back from JSON equal and of the same types."""
    try:
        return json.loads(json.dumps(value, allow_nan=False)) == value
    except (TypeError, ValueError):
        return False


def index_to_json(index: dict[str, Any]) -> list[list[Any]] | None:
    """The index as JSON-able rows ``[name, entry]``, or None if an entry's name, path or
    tags are not plain data (then nothing is cached)."""
    rows: list[list[Any]] = []
    for key, entry in index.items():
        try:
            tags = sorted(entry.tags)
        except TypeError:
            return None
        record: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.kind.name,
            "yaml_path": None if entry.yaml_path is None else str(entry.yaml_path),
            "tags": tags,
        }
        if not _plain([key, record]):
            return None
        if entry.cfg is None or _plain(entry.cfg):
            record["cfg"] = entry.cfg
        else:
            if entry.yaml_path is None:
                return None
            record["reparse"] = True
        rows.append([key, record])
    return rows


def index_from_json(rows: list[list[Any]]) -> dict[str, Any]:
    """The index back from :func:`index_to_json`'s rows (entries marked ``reparse`` parse
    their YAML again, as lm-eval's index builder does)."""
    from lm_eval.tasks._index import Entry, Kind
    from lm_eval.tasks._yaml_loader import load_yaml

    index: dict[str, Any] = {}
    for key, record in rows:
        path = record["yaml_path"]
        yaml_path = None if path is None else Path(path)
        if record.get("reparse"):
            cfg = load_yaml(yaml_path, resolve_func=False, recursive=True)
        else:
            cfg = record["cfg"]
        index[key] = Entry(
            name=record["name"],
            kind=Kind[record["kind"]],
            yaml_path=yaml_path,
            cfg=cfg,
            tags=set(record["tags"]),
        )
    return index


FIX = "delete it (lm-eval's task index is built again on the next run)"


def _read(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The cached index of ``key``; None when there is none, it was built from other files
    (or before seals): rebuilt. A file that fails its checksum (an edited ``yaml_path``
    would load another task under a name) is refused, one line naming it."""
    sealed = read_sealed_json(path, FIX)
    if sealed is None or sealed[0] != as_json(key):
        return None
    try:
        return index_from_json(sealed[1])
    except Exception as err:  # noqa: BLE001 - sealed but unreadable: another lm-eval's
        log.debug("lm-eval index cache %s unreadable (%s); rebuilding", path, err)
        return None


def _write(path: Path, key: dict[str, Any], index: dict[str, Any]) -> None:
    rows = index_to_json(index)
    if rows is None:
        log.debug("lm-eval index holds values JSON cannot keep; not cached")
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_sealed_json(path, rows, key)
    except OSError as err:
        log.debug("lm-eval index cache %s not written (%s)", path, err)


def install_index(manager: Any, index: dict[str, Any]) -> None:
    """Give ``manager`` the index, with the name lists lm-eval's ``TaskManager`` derives."""
    from lm_eval.tasks._index import Kind

    manager._index = index
    buckets: dict[Any, list[str]] = defaultdict(list)
    for name, entry in index.items():
        buckets[entry.kind].append(name)
    manager._all_tasks = sorted(index.keys())
    manager._all_subtasks = sorted(
        chain.from_iterable(buckets[k] for k in (Kind.TASK, Kind.PY_TASK))
    )
    manager._all_groups = sorted(buckets[Kind.GROUP])
    manager._all_tags = sorted(buckets[Kind.TAG])


def cached_index(roots: Sequence[Path]) -> dict[str, Any]:
    """lm-eval's ``TaskIndex.build(roots)``, each folder's part read from the cache when its
    files are unchanged (built by lm-eval and cached otherwise). lm-eval builds each folder's
    part alone and merges them in order, a later folder's name replacing an earlier one's;
    so does this."""
    from lm_eval.tasks._index import TaskIndex
    from lm_eval.tasks._index import log as index_log

    index: dict[str, Any] = {}
    for root in roots:
        path = cache_file(root)
        key = cache_key(root)
        part = _read(path, key)
        if part is None:
            part = TaskIndex.build([root])
            _write(path, key, part)
        for name, entry in part.items():
            if name in index:
                index_log.warning(
                    "Task '%s' from %s overrides existing task from %s",
                    name,
                    entry.yaml_path,
                    index[name].yaml_path,
                )
            index[name] = entry
    return index


def task_manager(
    include_path: Sequence[str],
    include_defaults: bool = True,
    metadata: dict[str, Any] | None = None,
) -> Any:
    """lm-eval's ``TaskManager`` for these folders, its index from :func:`cached_index`."""
    from lm_eval.tasks import TaskManager

    paths = [str(p) for p in include_path]
    meta = dict(metadata or {})
    if not _supported():
        return TaskManager(
            include_path=paths or None, include_defaults=include_defaults, metadata=meta
        )
    index = cached_index(index_roots(paths, include_defaults))
    # an empty index costs nothing to build; the cached one replaces it
    manager = TaskManager(include_path=None, include_defaults=False, metadata=meta)
    manager.include_path = paths or None
    install_index(manager, index)
    return manager
