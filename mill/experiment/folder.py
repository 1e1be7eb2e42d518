"""One experiment folder per run. Nothing half-written can pass for a result:

* a run commits in one order: final sample files, ``results.json``, ``report.txt``,
  ``plots/`` and ``report.html``, then ``manifest.json`` with ``status: succeeded``. Only
  that last write makes the run finished; any folder short of it is completed by
  ``runner.resume=true``, and report and compare refuse it;
* samples stream into ``samples/<task>.partial.jsonl`` (whole lines, token ids only with
  ``runner.sample_tokens=true``) and become ``samples/<task>.jsonl``, sorted and compact
  (:func:`mill.record.compact_lines`: a few-shot prefix once per subject), only when the
  run succeeds;
* ``results.json`` records each samples file's SHA-256 and the manifest ``results.json``'s,
  so a reader can tell a file edited since (:func:`mill.results.edited_files`);
* ``manifest.json`` carries ``status``: running, succeeded, failed (with the error) or
  interrupted (SIGINT/SIGTERM);
* while a run is in progress its driver holds an exclusive lock on ``.lock``, so a
  resumed run can tell an interrupted folder from one still in use;
* nothing is written outside the folder: every name Mill writes in it (:data:`RUN_NAMES`)
  is checked when the folder is claimed or reopened, and again by each writer, with
  :func:`mill.files.inside` (a symbolic link planted there and leading out is refused);
* no credential is written: the manifest, ``results.json`` and every text file (configs,
  reports) pass through :func:`mill.redact.redact` (a URL's user info and secret query
  parameters masked). Samples are the data and the model's words, written as they are.
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path
from typing import Any

import jsonlines

from mill.errors import ConfigError, ExperimentExists, MillError
from mill.files import inside, replacing, sha256_file, write_atomic, write_json
from mill.record import SampleRecord, compact_lines
from mill.redact import redact, redact_text
from mill.results.format import Manifest, Results


def check_name(value: Any, setting: str) -> str:
    """``value`` as a name that may become part of a file or folder name (a task's samples
    file, the run folder's name), or ConfigError naming ``setting``: no path separators,
    not empty, not ``.`` or ``..``, no control characters, so a name never leads out of
    the experiment folder."""
    text = str(value)
    if (
        not text
        or text in (".", "..")
        or "/" in text
        or "\\" in text
        or any(ord(c) < 32 or ord(c) == 127 for c in text)
    ):
        raise ConfigError(
            f"{setting}={text!r} cannot be used: Mill makes file and folder names from it, and "
            "it must not be empty, '.' or '..', or hold '/', '\\' or control characters; "
            "choose a plain name (letters, digits, '_', '-', '.')"
        )
    return text


RUN_NAMES = (
    "mill.log",
    ".lock",
    ".hydra",
    "manifest.json",
    "results.json",
    "resolved.yaml",
    "samples",
    "cache",
    "report.txt",
    "report.html",
    "plots",
    "model_judgment",
)
"""The names Mill writes in a run folder: each is checked (:func:`mill.files.inside`)
when the folder is claimed or reopened, before anything is written or loaded."""


class ExperimentFolder:
    """Owns the files of one run."""

    def __init__(self, path: Path, sample_tokens: bool = False) -> None:
        self.path = Path(path)
        self.sample_tokens = sample_tokens
        """Whether sample lines keep the response's token ids (``runner.sample_tokens``)."""
        self.samples_dir = self.path / "samples"
        self._writers: dict[str, jsonlines.Writer] = {}
        self._handles: dict[str, Any] = {}
        self._lock: Any = None

    @property
    def results_path(self) -> Path:
        return self.path / "results.json"

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    def check_names(self) -> None:
        """StorageError naming the first of :data:`RUN_NAMES` that leads out of the folder
        (a symbolic link planted there): said before the run writes anything."""
        for name in RUN_NAMES:
            self.inside(self.path / name)

    def claim(self) -> None:
        """Refuse a folder that already holds a finished or started run, or one where a
        name Mill writes leads outside it."""
        self.check_names()
        for existing in (self.results_path, self.manifest_path):
            if existing.exists():
                hint = ""
                if not self._succeeded():
                    hint = "; to finish that unfinished run, add runner.resume=true"
                raise ExperimentExists(
                    f"{existing} already exists; Mill never overwrites a run. Choose another "
                    f"folder (hydra.run.dir=...) or remove it{hint}"
                )
        self.inside(self.samples_dir).mkdir(parents=True, exist_ok=True)
        self.lock()

    def _succeeded(self) -> bool:
        try:
            return self.read_manifest().status == "succeeded"
        except (OSError, MillError):
            return False

    def lock(self) -> None:
        """Hold ``.lock`` for this process's lifetime (released by the OS, even on SIGKILL)."""
        if self._lock is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        handle = self.inside(self.path / ".lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ExperimentExists(
                f"{self.path} is in use by a running Mill process; wait for it or choose "
                "another folder (hydra.run.dir=...)"
            ) from None
        self._lock = handle

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def reopen(self) -> Manifest:
        """Take over an unfinished run's folder (``runner.resume=true``).

        A run is finished when its manifest says ``succeeded`` (the last write of a run);
        anything else (``running`` after a kill, ``failed``, ``interrupted``) is completed
        by a resumed run. Refuses a finished run, a folder in use and one where a name Mill
        writes leads outside it; removes what the unfinished run derived (sample files,
        results, reports, temporary files): the response cache rebuilds them without the
        model. Returns the old manifest.
        """
        self.check_names()
        self.lock()
        try:
            old = self.read_manifest()
        except (OSError, ValueError, MillError) as err:
            self.unlock()
            raise MillError(
                f"cannot resume {self.path}: unreadable manifest.json; choose another folder "
                "(hydra.run.dir=...)"
            ) from err
        if old.status == "succeeded":
            self.unlock()
            raise ExperimentExists(
                f"{self.path} holds a succeeded run: there is nothing to resume and Mill never "
                "overwrites a run. Choose another folder (hydra.run.dir=...)"
            )
        for name in ("results.json", "report.txt", "report.html"):
            (self.path / name).unlink(missing_ok=True)
        temps = [self.path / sub for sub in ("", ".hydra", "samples", "model_judgment")]
        for leftover in [
            *(p for sub in temps for p in sub.glob("*.tmp")),
            *self.samples_dir.glob("*.jsonl"),
        ]:
            leftover.unlink()
        if (self.path / "plots").is_dir():
            shutil.rmtree(self.path / "plots")
        self.samples_dir.mkdir(parents=True, exist_ok=True)
        return old

    def inside(self, path: Path) -> Path:
        """``path`` when it resolves inside this folder; StorageError otherwise (every file
        a run writes goes through here: :func:`mill.files.inside`, the one rule)."""
        return inside(self.path, path)

    def read_manifest(self) -> Manifest:
        """``manifest.json``, typed (OSError when missing, MillError when not a manifest)."""
        return Manifest.read(self.manifest_path)

    def write_sample(self, record: SampleRecord) -> None:
        """Append one sample line (flushed, so an interrupted run keeps what it had)."""
        task = record.task
        if task not in self._writers:
            check_name(task, "task.name")
            path = self.inside(self.samples_dir / f"{task}.partial.jsonl")
            handle = path.open("a", encoding="utf-8")
            self._handles[task] = handle
            self._writers[task] = jsonlines.Writer(handle, flush=True)
        self._writers[task].write(record.to_json(tokens=self.sample_tokens))

    def close_samples(self, success: bool) -> None:
        """Close sample files; on success give them their final names, sorted by doc and
        compact (:func:`mill.record.compact_lines`)."""
        for task, writer in self._writers.items():
            writer.close()
            self._handles[task].close()
            partial = self.samples_dir / f"{task}.partial.jsonl"
            if success:
                with jsonlines.open(partial) as reader:
                    rows = sorted(reader, key=lambda r: (r["subject"], r["doc_id"]))
                final = self.inside(self.samples_dir / f"{task}.jsonl")
                with replacing(final) as handle, jsonlines.Writer(handle, compact=True) as out:
                    out.write_all(compact_lines(rows))
                partial.unlink()
        self._writers.clear()
        self._handles.clear()

    def write_manifest(self, manifest: Manifest | dict[str, Any]) -> None:
        """``manifest.json``, atomically, in the schema of :class:`mill.results.Manifest`."""
        if isinstance(manifest, dict):
            manifest = Manifest.from_dict(manifest)
        write_json(self.inside(self.manifest_path), redact(manifest.to_dict()))

    def write_results(self, results: Results) -> str:
        """``results.json``, atomically, in the schema of :class:`mill.results.Results`;
        returns its SHA-256 (the manifest records it)."""
        return write_json(self.inside(self.results_path), redact(results.to_dict()))

    def samples_sha256(self) -> dict[str, str]:
        """task -> SHA-256 of each final ``samples/<task>.jsonl`` (``results.json`` records
        them)."""
        return {
            path.name.removesuffix(".jsonl"): sha256_file(path)
            for path in sorted(self.samples_dir.glob("*.jsonl"))
            if not path.name.endswith(".partial.jsonl")
        }

    def write_text(self, name: str, text: str) -> None:
        """``name`` (a path under the folder: ``resolved.yaml``, ``.hydra/config.yaml``,
        ``report.txt``), atomically, credentials redacted."""
        path = self.inside(self.path / name)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, redact_text(text))
