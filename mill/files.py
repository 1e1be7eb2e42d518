"""Files Mill writes and reads back: atomic writes, JSON, digests, the order of a sweep's job
folders.

Every file Mill writes whole into an experiment folder (``manifest.json``, ``results.json``,
``resolved.yaml``, ``.hydra/*.yaml``, ``samples/<task>.jsonl`` once final, ``report.txt``,
``report.html``, the plots, judgments), a report or a sweep folder (``summary.json``,
``summary.md``) is written through :func:`write_atomic` or :func:`replacing` (a temp file
renamed over the target), so a reader never sees half a file. Two files grow instead, by
design: ``samples/<task>.partial.jsonl`` (one flushed line per finished doc; a resume
rebuilds it) and ``mill.log``. One is Hydra's own: the sweep folder's ``multirun.yaml``,
written by Hydra's sweeper before the first job starts (a plain write Mill does not
control; Mill rewrites it atomically when it masks credentials in it,
:func:`mill.runner.sweep.redact_sweep_config`).

Nothing is written outside the folder that owns it: every writer names the folder it
writes into and goes through :func:`inside` (one rule: the path, symbolic links followed,
must stay inside that folder), so a link planted at a name Mill writes (``mill.log``,
``plots/``, ``cache/``, ``samples/``, ``report.txt``, ...) is refused with one line naming
it, never followed; the temporary file of an atomic write is created fresh
(``O_EXCL | O_NOFOLLOW``), never opened through a link.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, TextIO, cast

from mill.errors import ConfigError, MillError, StorageError


def cache_root() -> Path:
    """``$MILL_CACHE`` or ``~/.cache/mill``: where Mill keeps what it builds or remembers."""
    return Path(os.environ.get("MILL_CACHE", Path.home() / ".cache" / "mill"))


# Caches that libraries keep under the user's home, moved into Mill's cache when the user
# has not chosen a place (README, "What Mill guarantees", lists what is not moved).
LIBRARY_CACHES = {
    "MPLCONFIGDIR": "matplotlib",  # matplotlib's font cache and config (~/.config, ~/.cache)
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",  # torch's compile cache ($TMPDIR)
    "TRITON_CACHE_DIR": "triton",  # GPU kernels compiled by triton (~/.triton)
}


def check_cache_root() -> Path:
    """:func:`cache_root`, created; :class:`StorageError` naming ``MILL_CACHE`` when it is
    not a folder Mill can write (read-only, a file, no permission): said at the start, not
    later as a failure of whatever first writes there (the model's digests)."""
    root = cache_root()
    given = os.environ.get("MILL_CACHE")
    where = f"MILL_CACHE={given}" if given else f"the cache folder {root} (MILL_CACHE unset)"
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".write-check-"):
            pass
    except OSError as err:
        raise StorageError(
            f"{where} is not a folder Mill can write ({type(err).__name__}: "
            f"{err.strerror or err}); set MILL_CACHE to a writable folder (Mill keeps "
            "model digests, built test models and library caches there)"
        ) from None
    return root


def contain_library_caches() -> None:
    """Point :data:`LIBRARY_CACHES` into :func:`cache_root` for this process and the
    processes it starts; a variable the user set is left as it is. Call at run start,
    before the library is imported. The cache root must be writable
    (:func:`check_cache_root`)."""
    check_cache_root()
    for variable, folder in LIBRARY_CACHES.items():
        if not os.environ.get(variable):
            os.environ[variable] = str(cache_root() / folder)


def datasets_cache_dir() -> str | None:
    """Where ``datasets`` keeps the Arrow copy of a local data file: in Mill's cache,
    unless the user chose a ``datasets`` cache (``HF_DATASETS_CACHE`` or ``HF_HOME``)."""
    if os.environ.get("HF_DATASETS_CACHE") or os.environ.get("HF_HOME"):
        return None
    return str(cache_root() / "datasets")


def inside(root: Path, path: Path) -> Path:
    """``path`` when it (its symbolic links followed) stays inside the folder ``root``:
    the one rule of every file and folder Mill writes. A :class:`StorageError` naming the
    path otherwise (a link planted where Mill writes, a name with ``..``)."""
    root, path = Path(root), Path(path)
    real = root.resolve()
    if not path.resolve().is_relative_to(real):
        raise StorageError(
            f"{path} leads outside {real} (a symbolic link?); Mill writes only inside the "
            "folder it owns: remove the link, or choose another folder"
        )
    return path


def write_inside(root: Path, name: str | Path, data: bytes | str) -> Path:
    """``root/name`` written atomically (:func:`write_atomic`), its folders made, after
    :func:`inside` passed it; returns the path."""
    path = inside(root, Path(root) / name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return path


def reads_into(target: Path, read: Iterable[Path]) -> Path | None:
    """The first folder of ``read`` that ``target`` (an ``out=`` folder) lies in, links
    followed, or None: a command never writes into a folder it reads."""
    real = Path(target).resolve()
    return next((p for p in read if real.is_relative_to(Path(p).resolve())), None)


@contextmanager
def replacing(path: Path, binary: bool = False) -> Iterator[TextIO | BinaryIO]:
    """A handle on ``<path>.tmp`` (UTF-8 text, or bytes with ``binary``), renamed over
    ``path`` when the block ends without an error (for files written as a stream, such as
    jsonlines); after an error (a full disk) ``path`` is as it was and the temp file is
    removed."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a leftover (or a link planted there) is not written through
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "wb") if binary else open(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through ``<path>.tmp`` and a rename (:func:`replacing`); a
    failed write leaves neither a new ``path`` nor the temporary file."""
    with replacing(path, binary=isinstance(data, bytes)) as handle:
        cast(IO[Any], handle).write(data)  # text for str, bytes for bytes (binary= above)


def write_json(path: Path, data: Any) -> str:
    """Write ``data`` as indented UTF-8 JSON with a final newline, atomically; returns the
    SHA-256 (hex) of the bytes written."""
    blob = (json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    write_atomic(path, blob)
    return hashlib.sha256(blob).hexdigest()


def sha256_json(value: Any, ascii_only: bool = False) -> str:
    """SHA-256 (hex) of ``value`` as JSON with sorted keys (UTF-8; a lone surrogate is
    encoded as it is, not refused; what JSON cannot hold is written as its ``str``): the one
    digest of a value (request content, a doc, a program's verdict key, a judge's rubric,
    the response cache's model key). ``ascii_only`` escapes non-ASCII characters
    (``\\u00e9``): the form the response cache's model key has always hashed, kept so
    existing caches keep their keys."""
    blob = json.dumps(value, sort_keys=True, ensure_ascii=ascii_only, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of the file ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def checksum(*parts: str | bytes) -> str:
    """SHA-256 (hex) of ``parts`` joined by NUL bytes (text as UTF-8): the checksum a cache
    entry carries beside what it was made from (the response cache's entries, the file-digest
    store's rows)."""
    return hashlib.sha256(
        b"\0".join(p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p for p in parts)
    ).hexdigest()


def corrupt_cache(path: Path, why: str, fix: str) -> ConfigError:
    """The one line of a cached file that fails its check: the file, why, how to rebuild it."""
    return ConfigError(f"the cached file {path} fails its check ({why}); {fix}")


def as_json(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists, what JSON cannot hold as its
    ``str``): what a sealed record stores, to compare with what a reader expects."""
    return json.loads(json.dumps(value, default=str))


def write_sealed_json(path: Path, data: Any, made_from: Any) -> None:
    """Write ``data`` to ``path`` atomically as a sealed record: ``made_from`` (what it was
    built from), the data and a SHA-256 of both (:func:`read_sealed_json` checks it)."""
    made_from, data = as_json([made_from, data])
    record = {"made_from": made_from, "data": data, "checksum": sha256_json([made_from, data])}
    write_json(path, record)


def read_sealed_json(path: Path, fix: str) -> tuple[Any, Any] | None:
    """``(made_from, data)`` of a record :func:`write_sealed_json` wrote; None when there is
    no file, or it holds no seal (written before seals: the caller builds it again).
    :func:`corrupt_cache` (a ``ConfigError`` naming the file and ``fix``) when it is not JSON
    or fails its checksum (edited, damaged)."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    try:
        record = json.loads(raw)
    except ValueError as err:
        raise corrupt_cache(path, f"not JSON: {err}", fix) from None
    if not isinstance(record, dict) or "checksum" not in record:
        return None
    made_from, data = record.get("made_from"), record.get("data")
    if record["checksum"] != sha256_json([made_from, data]):
        raise corrupt_cache(path, "its content does not match its checksum", fix)
    return made_from, data


SEAL = ".mill-seal.json"
"""The hidden file of a folder Mill built into its cache (a converted GGUF, a random model,
NLTK data): what the folder was made from and each file's size, times and SHA-256. Hidden,
so it is no part of the folder's fingerprint (:func:`mill.model.identity.model_files`)."""


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
    }


def _visible_files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def seal_folder(folder: Path, made_from: Any) -> None:
    """Write the :data:`SEAL` of a folder just built: ``made_from`` and every visible file's
    stat and SHA-256. Call it last, before the folder is renamed into place."""
    folder = Path(folder)
    files = {
        n: {**_stat(folder / n), "sha256": sha256_file(folder / n)} for n in _visible_files(folder)
    }
    write_sealed_json(folder / SEAL, {"files": files}, made_from)


def check_folder(folder: Path, fix: str) -> Any | None:
    """What a sealed folder was made from, after checking its files against its
    :data:`SEAL`; None when it has no seal (built before seals: the caller builds it
    again). A file whose size, mtime, ctime and inode are as sealed is taken as it is (a
    ``stat``, nothing read; any write moves the ctime, which no user can set back); one
    whose stat differs is hashed, and its SHA-256 must be the sealed one (a copied folder
    passes, and its new stat is sealed). A file missing, added or of other bytes, or a seal
    that fails its checksum, is :func:`corrupt_cache` naming the file and ``fix``."""
    folder = Path(folder)
    sealed = read_sealed_json(folder / SEAL, fix)
    if sealed is None:
        return None
    made_from, data = sealed
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise corrupt_cache(folder / SEAL, "it lists no files", fix)
    present = _visible_files(folder)
    for name in present:
        if name not in files:
            raise corrupt_cache(folder / name, "a file the folder was not built with", fix)
    moved = False
    for name, stamp in sorted(files.items()):
        path = folder / name
        try:
            now = _stat(path)
        except FileNotFoundError:
            raise corrupt_cache(path, "missing from the folder it was built in", fix) from None
        if all(now[k] == stamp.get(k) for k in now):
            continue
        if now["size"] != stamp.get("size") or sha256_file(path) != stamp.get("sha256"):
            raise corrupt_cache(path, "its bytes are not those it was built with", fix)
        stamp.update(now)
        moved = True
    if moved:  # same bytes, new stat (a copied folder): remembered, best effort
        try:
            write_sealed_json(folder / SEAL, data, made_from)
        except OSError:
            pass
    return made_from


def check_folder_path(path: Path, setting: str, role: str = "the experiment folder") -> None:
    """ConfigError naming ``setting`` (the key the user typed) when ``path`` cannot be a
    folder (``role`` says which): it, or a folder above it, exists as a file."""
    for place in (Path(path), *Path(path).parents):
        if place.exists():
            if not place.is_dir():
                what = "" if place == Path(path) else f" ({place} is a file)"
                raise ConfigError(
                    f"{setting}={path} cannot be {role}: a file is in the "
                    f"way{what}; choose a folder path"
                )
            return


def sealed_folder(
    out: Path, made_from: Any, fix: str, build: Callable[[Path], None]
) -> tuple[Path, bool]:
    """The cache folder ``out`` made from ``made_from``: checked against its seal when it
    exists (:func:`check_folder`), else (absent, or built before seals) built by
    ``build(tmp)`` into a temporary sibling, sealed and renamed into place, so a reader
    never sees half a folder; returns ``(out, built)``. A folder that fails its check, or
    whose seal names another source, is :func:`corrupt_cache` naming the file and ``fix``."""
    out = Path(out)
    made_from = as_json(made_from)

    def ready() -> bool:
        if not out.exists():
            return False
        found = check_folder(out, fix)
        if found is None:
            return False
        if found != made_from:
            raise corrupt_cache(out / SEAL, f"made from {found}, not {made_from}", fix)
        return True

    if ready():
        return out, False
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        build(tmp)
        seal_folder(tmp, made_from)
        if out.exists() and not ready():  # built before seals: replaced by this build
            stale = out.with_name(f".{out.name}.{os.getpid()}.stale")
            out.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            tmp.replace(out)
        except OSError:  # another process finished the same folder first
            if not ready():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out, True


def read_json(path: Path, error: type[Exception] = MillError) -> Any:
    """Parse the JSON file ``path``. Invalid JSON raises ``error`` naming the file and line;
    a missing or unreadable file raises the ``OSError``."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise error(f"{path} is not valid JSON ({err.msg} at line {err.lineno})") from err


def read_jsonl(path: str | Path, what: str, error: type[Exception] = MillError) -> list[dict]:
    """The rows of the JSON-lines file ``path`` (the ``what``: "question file", "samples"),
    blank lines skipped; ``error`` naming the file (and the line) when it cannot be read or
    a line is not one JSON object."""
    path = Path(path)
    try:
        # "\n" only: str.splitlines also splits at U+2028, U+0085 and other separators
        # that a JSON string may hold raw (a question's text; ensure_ascii=False)
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as err:
        raise error(f"cannot read the {what} {path}: {err.strerror}; fix the path") from err
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise error(f"{path}:{n}: not JSON ({err}); fix the {what}") from err
        if not isinstance(row, dict):
            raise error(f"{path}:{n}: a {what} line must be a JSON object")
        rows.append(row)
    return rows


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
