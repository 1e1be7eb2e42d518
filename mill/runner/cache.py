"""Crash-safe response cache: every finished request is committed to SQLite as it finishes.

Entries are keyed by (model key, request content hash):

* the model key is a sha256 of :meth:`LanguageModel.identity` (path or hub id, revision,
  weights fingerprint, dtype, max_length and the other options that change scores) plus
  Mill's version, so a different model never reads another's entries;
* :attr:`Request.content_hash` covers everything the model sees (output type, context,
  continuation, generation arguments), so a request is found again whatever its doc id.

Responses are stored as zlib-compressed JSON (token lists compress well), each with a
SHA-256 of (model key, request hash, stored bytes): an entry that does not match it (edited,
moved to another key, damaged) is a corrupt cache, one line; an entry from before checksums
is recomputed. The database
runs in WAL mode with one transaction per doc (its responses; each judge call on its own):
a process killed at any moment (SIGKILL, OOM, preemption) keeps every response committed
before it died, and a rerun takes them from the cache instead of the model. Each host
writes its own file (``responses-<host>.sqlite``) and lookups read every file in the folder,
so a cache folder on a shared filesystem never has two hosts writing one SQLite file.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from mill.errors import ConfigError, StorageError
from mill.files import checksum, sha256_json
from mill.judging import JUDGE_ROLE
from mill.model.base import LanguageModel, ignore_response
from mill.redact import redact
from mill.runner.dist import Dist, agree
from mill.types import OnResponse, OutputType, Request, Response

_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    model TEXT PRIMARY KEY,
    identity TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS responses (
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response BLOB NOT NULL,
    created REAL NOT NULL,
    checksum TEXT,
    PRIMARY KEY (model, request)
) WITHOUT ROWID;
"""


def entry_checksum(model: str, request: str, blob: bytes) -> str:
    """SHA-256 of a cache entry: its model key, request hash and stored bytes."""
    return checksum(model, request, blob)


def _has_checksums(conn: sqlite3.Connection) -> bool:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
    return "checksum" in columns


def corrupt(path: Path, why: object) -> ConfigError:
    """The one line of a cache file Mill cannot trust."""
    return ConfigError(
        f"the response cache {path} is corrupt ({why}); delete the file (it only "
        "holds cached responses) or run with runner.cache=false"
    )


def model_key(identity: dict[str, Any]) -> str:
    """sha256 of a model identity plus Mill's version (scoring code changes invalidate)."""
    try:
        version = metadata.version("mill-eval")
    except metadata.PackageNotFoundError:
        version = "unknown"
    # ASCII-escaped JSON, as since the first cache: the keys of existing caches stay valid
    return sha256_json({"identity": identity, "mill": version}, ascii_only=True)


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
    else:
        conn = sqlite3.connect(path, timeout=60)
        # switching to WAL needs an exclusive lock and does not wait for it: retry while
        # another process opens the same file
        for attempt in range(200):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                if attempt == 199:
                    raise
                time.sleep(0.05)
        # WAL + NORMAL: every commit survives a crash of the process; only a power loss can
        # drop the last few transactions, and the database stays consistent either way.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        if not _has_checksums(conn):  # a file written before entries had checksums
            with conn:
                conn.execute("ALTER TABLE responses ADD COLUMN checksum TEXT")
    return conn


class ResponseStore:
    """The cache folder: this host's SQLite file for writing, every file for reading."""

    def __init__(self, folder: Path, identity: dict[str, Any], input_tokens: bool = True) -> None:
        self.folder = Path(folder)
        self.input_tokens = input_tokens
        """Entries keep each response's ``input_tokens`` (the prompt's token ids, the bulk
        of an entry; only samples with ``runner.sample_tokens=true`` read them). Without,
        they are written without them; with, an entry without them is not found (computed
        again, and stored whole)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"cannot create the response cache folder {self.folder}: {err.strerror}; "
                "set runner.cache to a writable folder or runner.cache=false"
            ) from err
        self.key = model_key(identity)
        self.path = self.folder / f"responses-{socket.gethostname()}.sqlite"
        try:
            self._conn = _connect(self.path)
            with self._conn:
                self._conn.execute(
                    "INSERT OR IGNORE INTO models VALUES (?, ?)",
                    # the record a person reads: a URL's credentials masked
                    (self.key, json.dumps(redact(identity), sort_keys=True, default=str)),
                )
        except sqlite3.OperationalError as err:
            raise self._storage(err, "open") from err

    def _storage(self, err: sqlite3.Error, doing: str) -> StorageError:
        """A cache file that cannot take a write (full disk, read-only folder, locked)."""
        return StorageError(
            f"cannot {doing} the response cache {self.path}: {err}; free disk space or make "
            "its folder writable, set runner.cache to another folder, or runner.cache=false"
        )

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("responses-*.sqlite"))

    def get_many(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Cached responses (as dicts) of this model for the given content hashes. An entry
        whose checksum does not match is a corrupt cache (ConfigError); one without a
        checksum (written before them) is not returned, so it is computed again."""
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, dict[str, Any]] = {}
        for path in self.files():
            with self._reading(path) as conn:
                checksum = "checksum" if _has_checksums(conn) else "NULL"
                for start in range(0, len(wanted), 500):
                    chunk = [h for h in wanted[start : start + 500] if h not in found]
                    if not chunk:
                        continue
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT request, response, {checksum} FROM responses "
                        f"WHERE model = ? AND request IN ({marks})",
                        [self.key, *chunk],
                    )
                    for request, blob, stored in rows:
                        if stored is None:
                            continue
                        if stored != entry_checksum(self.key, request, blob):
                            raise corrupt(path, f"entry {request[:12]} fails its checksum")
                        try:
                            entry = json.loads(zlib.decompress(blob))
                        except (zlib.error, ValueError) as err:
                            raise corrupt(path, f"entry {request[:12]}: {err}") from err
                        if self.input_tokens and "input_tokens" not in entry:
                            continue  # written without them: computed again, whole
                        found[request] = entry
        return found

    @contextlib.contextmanager
    def _reading(self, path: Path) -> Iterator[sqlite3.Connection]:
        """A connection to one file of the folder (this host's, or another read-only); a
        file that is not a database (or cannot be read) is one line naming it."""
        conn: sqlite3.Connection | None = self._conn if path == self.path else None
        try:
            if conn is None:
                conn = _connect(path, readonly=True)
            yield conn
        except sqlite3.OperationalError as err:
            raise StorageError(
                f"cannot read the response cache {path}: {err}; make it readable, set "
                "runner.cache to another folder, or runner.cache=false"
            ) from err
        except sqlite3.DatabaseError as err:
            raise corrupt(path, err) from err
        finally:
            if conn is not None and conn is not self._conn:
                conn.close()

    def put(self, content_hash: str, response: Response) -> None:
        """Commit one finished response (its own transaction: durable when this returns)."""
        self.put_many([(content_hash, response)])

    def put_many(self, items: Sequence[tuple[str, Response]]) -> None:
        """Commit finished responses (a doc's) in one transaction: all or none survive."""
        now = time.time()
        rows = []
        for digest, response in items:
            # vars(): the fields as they are (dataclasses.asdict deep-copied every token id)
            entry = dict(vars(response))
            if not self.input_tokens:
                del entry["input_tokens"]
            blob = zlib.compress(json.dumps(entry, ensure_ascii=False).encode(), 1)
            rows.append((self.key, digest, blob, now, entry_checksum(self.key, digest, blob)))
        try:
            with self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses (model, request, response, created, "
                    "checksum) VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.OperationalError as err:
            raise self._storage(err, "write to") from err

    def count(self) -> int:
        """Entries of this model across the folder's files."""
        total = 0
        for path in self.files():
            with self._reading(path) as conn:
                (n,) = conn.execute(
                    "SELECT COUNT(*) FROM responses WHERE model = ?", (self.key,)
                ).fetchone()
                total += int(n)
        return total

    def close(self) -> None:
        self._conn.close()


def _commit_unit(request: Request) -> tuple[str, str, int, str]:
    """What is committed together: a doc's requests, except that each judge call is a unit
    of its own (a judged doc has several, each a whole judgment: a reply already received
    must survive a kill, or the resumed run would send that call again)."""
    judge = request.role if request.role.startswith(f"{JUDGE_ROLE}/") else ""
    return (request.task, request.subject, request.doc_id, judge)


class CachedModel(LanguageModel):
    """A model behind the response cache: hits answer at once, misses go to the model
    (each distinct content once) and are committed doc by doc, as each doc's last one
    finishes.

    Counters (this process): ``hits``, requests answered from the cache; ``computed``,
    requests the model scored; ``shared``, requests answered by another request's
    computation in this run (same content). hits + computed + shared = requests.
    """

    def __init__(self, inner: LanguageModel, store: ResponseStore) -> None:
        self.inner = inner
        self.store = store
        self.hits = 0
        self.computed = 0
        self.shared = 0

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "computed": self.computed, "shared": self.shared}

    def chat_template(self) -> Any:
        return self.inner.chat_template()

    def takes_messages(self) -> bool:
        return self.inner.takes_messages()

    def refusal(self, output_type: OutputType) -> str | None:
        return self.inner.refusal(output_type)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def __getattr__(self, name: str) -> Any:  # name, tokenizer, ... of the wrapped model
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _answer(
        self, method: str, requests: Sequence[Request], on_response: OnResponse
    ) -> list[Response]:
        hashes = [r.content_hash for r in requests]
        cached = self.store.get_many(hashes)
        out: list[Response | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}
        for i, (request, digest) in enumerate(zip(requests, hashes, strict=True)):
            if digest in cached:
                fields = {**cached[digest], "request_id": request.id}
                response = Response(**fields)
                out[i] = response
                self.hits += 1
                on_response(request, response)
            else:
                todo.setdefault(digest, []).append(i)
        if not todo:
            return [r for r in out if r is not None]
        unique = [requests[indices[0]] for indices in todo.values()]
        # A doc's computed responses are committed together, in one transaction, when its
        # last one finishes, and only then delivered: a killed run never leaves part of a
        # doc in the cache, so a resumed run scores whole docs, in the same passes (and
        # with the same float rounding) as an uninterrupted run. A judge call is committed
        # alone, as it finishes (see _commit_unit).
        members: dict[tuple[str, str, int, str], list[int]] = {}
        for indices in todo.values():
            for i in indices:
                members.setdefault(_commit_unit(requests[i]), []).append(i)
        waiting = {key: {hashes[i] for i in idx} for key, idx in members.items()}
        docs_of: dict[str, set[tuple[str, str, int, str]]] = {}
        for key, digests in waiting.items():
            for digest in digests:
                docs_of.setdefault(digest, set()).add(key)
        done: dict[str, Response] = {}
        committed: set[str] = set()

        def finished(request: Request, response: Response) -> None:
            digest = request.content_hash
            done[digest] = response
            self.computed += 1
            self.shared += len(todo[digest]) - 1
            for key in sorted(docs_of[digest]):
                waiting[key].discard(digest)
                if waiting[key]:
                    continue
                fresh = sorted({hashes[i] for i in members[key]} - committed)
                self.store.put_many([(d, done[d]) for d in fresh])
                committed.update(fresh)
                for i in members[key]:
                    copy = replace(done[hashes[i]], request_id=requests[i].id)
                    out[i] = copy
                    on_response(requests[i], copy)

        getattr(self.inner, method)(unique, finished)
        return [r for r in out if r is not None]

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        return self._answer("loglikelihood", requests, on_response)

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        return self._answer("loglikelihood_rolling", requests, on_response)

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        return self._answer("generate_until", requests, on_response)


def open_store(
    cache_dir: Path, identity: dict[str, Any], input_tokens: bool = True
) -> ResponseStore:
    """The response cache, or a ConfigError naming a cache file that is not a database."""
    try:
        return ResponseStore(cache_dir, identity, input_tokens)
    except Exception as err:
        corrupt = corrupt_cache_error(err, cache_dir)
        if corrupt is None:
            raise
        raise corrupt from err


def open_shared_store(
    dist: Dist, cache_dir: Path, identity: dict[str, Any], input_tokens: bool = True
) -> ResponseStore:
    """The response cache on every rank of ``dist``: rank 0 creates the database, then the
    others open it (a bad cache file stops every rank with the same line);
    ``input_tokens``: :attr:`ResponseStore.input_tokens`."""
    store: ResponseStore | None = None
    for turn in (True, False):

        def opener(t: bool = turn) -> ResponseStore | None:
            return open_store(cache_dir, identity, input_tokens) if dist.is_main is t else None

        opened = agree(dist, opener)
        store = opened or store
    assert store is not None
    return store


def corrupt_cache_error(err: BaseException, cache_dir: Path | None) -> ConfigError | None:
    """A one-line error naming the cache files SQLite cannot read, if ``err`` is SQLite's
    "not a database"/"malformed" (not "locked" or an I/O error)."""
    if cache_dir is None or not isinstance(err, sqlite3.DatabaseError):
        return None
    if isinstance(err, sqlite3.OperationalError):
        return None
    bad = []
    for path in sorted(cache_dir.glob("responses-*.sqlite")):
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError:
            bad.append(str(path))
    return ConfigError(
        f"the response cache {' and '.join(bad) or cache_dir} is corrupt ({err}); delete "
        "the file (it only holds cached responses) or run with runner.cache=false"
    )
