"""Load the rows of one split through ``datasets.load_dataset``, from the hub or from files.

Hub and local files go through the same call: the hub by path/name/revision, local files
by a builder (``json``, ``csv``, ``text``) and ``data_files``. The task adapts a local
file's schema to the hub's one afterwards, so prompts never depend on the source.

Two shortcuts, because importing ``datasets`` plus its ``load_dataset`` machinery costs
about two seconds of CPU, more than anything else in loading local data:

* a local JSON-lines file whose rows all have one shape (the same keys in the same order,
  one JSON type per value, no integer/float mix) is read with :mod:`json` directly
  (:func:`read_uniform_jsonl`). ``datasets``' ``json`` builder returns exactly these rows
  for such a file (pyarrow infers one column type per key and ``to_list`` gives the values
  back);
* a local CSV/TSV file whose columns the task reads as text (``DatasetSpec.text_columns``:
  MMLU, OpenBookQA) is read with :mod:`csv` (:func:`read_text_csv`): with string features
  and ``keep_default_na=False`` pandas guesses no numbers and no missing values, so the
  rows are the fields as written.

Any other file (a JSON array, mixed types, missing keys, bytes that are not UTF-8, a
header that is not the expected columns, a ragged or empty field, a builder argument)
goes through ``datasets`` as before, with its errors and diagnosis.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mill.errors import ConfigError, DatasetUnavailable
from mill.files import datasets_cache_dir, sha256_file
from mill.schema import DataFields


def bundled_data_dir() -> Path:
    """Folder of the small real benchmark samples shipped inside the package."""
    return Path(str(resources.files("mill.resources").joinpath("data")))


@dataclass(frozen=True)
class DataSource(DataFields):
    """Where the task data comes from: ``hub``, ``local`` (a folder laid out like
    ``../shared/data``) or ``bundled`` (the samples shipped with Mill); ``skip_bad_rows``
    (the fields and their rules: :class:`mill.schema.DataFields`)."""

    def __post_init__(self) -> None:
        super().__post_init__()  # each field by its rule (source's choices), full keys named
        if self.source == "local" and not self.dir:
            raise ConfigError("data=local needs a folder: add data.dir=/path/to/data")

    @property
    def root(self) -> Path | None:
        """Root folder for local files, or None for the hub."""
        if self.source == "bundled":
            return bundled_data_dir()
        if self.source == "local":
            return Path(os.path.expanduser(str(self.dir))).resolve()
        return None


@dataclass(frozen=True)
class DatasetSpec:
    """How to find one task's data on the hub and in local files."""

    path: str
    """Hub dataset id."""
    name: str | None = None
    revision: str | None = None
    """Pinned hub commit."""
    local_files: dict[str, str] = field(default_factory=dict)
    """split -> file path relative to the data folder (``{subject}`` is substituted)."""
    local_builder: str = "json"
    """``datasets`` builder for local files: json, csv or text."""
    builder_kwargs: dict[str, Any] = field(default_factory=dict)
    text_columns: tuple[str, ...] = ()
    """Local CSV/TSV files: their columns, every one read as text exactly as written (no
    number or missing-value guessing: ``datasets`` gets string features and
    ``keep_default_na=False``)."""
    data_files: dict[str, str] = field(default_factory=dict)
    """The user's own files (absolute or relative paths): used whatever the data source."""


@dataclass
class LoadedSplit:
    """Rows of one split plus where they came from (for the manifest)."""

    rows: list[dict[str, Any]]
    origin: dict[str, Any]
    local: bool


def _local_file(spec: DatasetSpec, split: str, source: DataSource, subject: str) -> Path | None:
    if split in spec.data_files:
        return Path(os.path.expanduser(spec.data_files[split].format(subject=subject))).resolve()
    if source.root is None:
        return None
    if split not in spec.local_files:
        raise DatasetUnavailable(
            f"dataset {spec.path!r} has no local file for split {split!r}; "
            f"give one with task.dataset.data_files.{split}=/path/to/file"
        )
    return source.root / spec.local_files[split].format(subject=subject)


def _diagnose(path: Path, builder: str, err: Exception) -> str:
    """Why ``datasets`` could not read a local file: the first line that is not UTF-8 or
    (JSON lines) not a JSON object, else ``datasets``' own first line."""
    fix = "fix or replace the file"
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                return (
                    f"line {number} is not UTF-8 text (byte {raw[bad.start]:#04x} at column "
                    f"{bad.start + 1}); save the file as UTF-8"
                )
            if builder != "json" or not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as bad:
                return f"line {number} is not valid JSON ({bad}); {fix}"
            if not isinstance(row, dict):
                return f"line {number} is not a JSON object (one row per line); {fix}"
    first = " ".join(str(err).split())[:200] or type(err).__name__
    return f"cannot be read as {builder}: {first}; {fix}"


_INT64 = (-(1 << 63), (1 << 63) - 1)
_NULL = ("null",)


class _Mixed(Exception):
    """Two rows (or list items) disagree on a value's type: ``datasets`` decides."""


def _shape(value: Any) -> tuple[Any, ...]:
    """The arrow-like type of a parsed JSON value; raises :class:`_Mixed` where pyarrow's
    inference could change the value (a big integer, NaN/Infinity, a lone surrogate)."""
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return ("bool",)
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise _Mixed
        return ("int",)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _Mixed
        return ("float",)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Mixed from None
        return ("str",)
    if isinstance(value, list):
        item = _NULL
        for element in value:
            item = _merge(item, _shape(element))
        return ("list", item)
    if isinstance(value, dict) and value:  # pyarrow has no struct without fields
        return ("struct", tuple((key, _shape(v)) for key, v in value.items()))
    raise _Mixed


def _merge(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    """One type for values of types ``a`` and ``b`` (null fits any), without promotion."""
    if a == b or b == _NULL:
        return a
    if a == _NULL:
        return b
    if a[0] == b[0] == "list":
        return ("list", _merge(a[1], b[1]))
    if a[0] == b[0] == "struct" and [k for k, _ in a[1]] == [k for k, _ in b[1]]:
        fields = zip(a[1], b[1], strict=True)
        return ("struct", tuple((k, _merge(x, y)) for (k, x), (_, y) in fields))
    raise _Mixed


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    row = dict(pairs)
    if len(row) != len(pairs):
        raise _Mixed
    return row


def read_uniform_jsonl(path: Path) -> list[dict[str, Any]] | None:
    """The rows of a JSON-lines file, or None unless every row has the same shape.

    Same shape: every non-blank line is one JSON object with the same keys in the same
    order, nested objects too, and each value (list items included) keeps one JSON type
    across rows (null fits any; an integer and a float do not mix). For such a file these
    are the rows ``datasets.load_dataset("json", ...).to_list()`` returns, in order and
    with the same Python types (``tests/data/test_load.py`` checks every bundled and
    shared data file). None: let ``datasets`` read the file (and explain its errors).
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("\ufeff"):
        return None
    rows: list[dict[str, Any]] = []
    shape: tuple[Any, ...] = _NULL
    try:
        for line in text.split("\n"):
            if not line.strip():
                continue
            row = json.loads(line, object_pairs_hook=_no_duplicate_keys)
            if not isinstance(row, dict):
                return None
            shape = _merge(shape, _shape(row))
            rows.append(row)
    except (ValueError, RecursionError, _Mixed):
        return None
    return rows or None


def read_text_csv(
    path: Path, columns: Sequence[str], sep: str = ","
) -> list[dict[str, str]] | None:
    """The rows of a CSV (or, with ``sep``, TSV) file whose header is ``columns``, every
    field as text; None unless the file is plain: UTF-8 without a byte-order mark or NUL,
    well-formed quoting (:mod:`csv`'s strict mode), every row as many fields as the
    header, no empty field. For such a file these are the rows ``datasets.load_dataset(
    "csv", ..., features=<strings>, keep_default_na=False).to_list()`` returns, in order
    (``tests/data/test_load_csv.py`` compares the two on every shared CSV/TSV file and on
    edge cases). None: let ``datasets`` read the file (and explain its errors)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("\ufeff") or "\x00" in text:
        return None
    rows: list[dict[str, str]] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True)
        header = next(reader, None)
        if header != list(columns) or len(set(header)) != len(header):
            return None
        for fields in reader:
            if not fields:  # a blank line: pandas skips it too
                continue
            if len(fields) != len(header) or "" in fields:
                return None
            rows.append(dict(zip(header, fields, strict=True)))
    except csv.Error:
        return None
    return rows or None


def _direct(spec: DatasetSpec, path: Path) -> list[dict[str, Any]] | None:
    """The rows of a local file read without ``datasets`` (the shortcuts above), or None."""
    if spec.local_builder == "json" and not spec.builder_kwargs:
        return read_uniform_jsonl(path)
    if spec.local_builder == "csv" and spec.text_columns:
        sep = spec.builder_kwargs.get("sep", ",")
        if set(spec.builder_kwargs) <= {"sep"} and isinstance(sep, str) and len(sep) == 1:
            return read_text_csv(path, spec.text_columns, sep)
    return None


def _builder_kwargs(spec: DatasetSpec) -> dict[str, Any]:
    """``load_dataset``'s arguments for a local file: the spec's, plus string features
    and no missing-value guessing for ``text_columns``."""
    if not spec.text_columns or spec.local_builder != "csv":
        return dict(spec.builder_kwargs)
    import datasets

    features = datasets.Features({c: datasets.Value("string") for c in spec.text_columns})
    return {"features": features, "keep_default_na": False, **spec.builder_kwargs}


ID_FIELDS = ("id", "task_id", "question_id", "doc_id", "idx", "ID")
"""Fields that name a document, the first one the rows have is checked for repeats."""


def duplicate_ids(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """``{"field", "count", "first"}`` when rows repeat a document id (``count``: rows whose
    id an earlier row already had; ``first``: the first repeated id), else None."""
    field_name = next((f for f in ID_FIELDS if rows and f in rows[0]), None)
    if field_name is None:
        return None
    seen: set[Any] = set()
    repeated: list[Any] = []
    for row in rows:
        value = row.get(field_name)
        if value is None or not isinstance(value, (str, int)):
            continue
        if value in seen:
            repeated.append(value)
        seen.add(value)
    if not repeated:
        return None
    return {"field": field_name, "count": len(repeated), "first": repeated[0]}


def load_rows(
    spec: DatasetSpec, split: str, source: DataSource, subject: str = "default"
) -> LoadedSplit:
    """Load one split as a list of dict rows (hub schema for hub, file schema for files).

    Rows that repeat a document id are kept (each is scored) and warned about once (console
    and mill.log); their count is in the origin (``duplicate_ids``: the manifest's
    ``datasets``)."""
    loaded = _load_rows(spec, split, source, subject)
    where = loaded.origin.get("file") or loaded.origin.get("hub")
    repeats = warn_duplicate_ids(loaded.rows, f"{where} (split {split!r})")
    if repeats is not None:
        loaded.origin["duplicate_ids"] = repeats
    return loaded


def warn_duplicate_ids(rows: Sequence[dict[str, Any]], where: str) -> dict[str, Any] | None:
    """:func:`duplicate_ids` of ``rows``, warned about once (console and mill.log) naming
    ``where`` (the file, and the split): every reader of documents from a file (the data
    loader, a judged task's question file) says the same."""
    repeats = duplicate_ids(rows)
    if repeats is not None:
        import logging

        logging.getLogger(__name__).warning(
            "%s: %d row(s) repeat a document id (field %r, first: %r); each is "
            "scored as a document of its own: remove the repeats if they are not meant",
            where,
            repeats["count"],
            repeats["field"],
            repeats["first"],
        )
    return repeats


@contextmanager
def _builders_quiet() -> Iterator[None]:
    """``datasets``' file builders (json, csv, ...) log a file they cannot parse at ERROR,
    twice (their handler and the root's), before they raise; Mill says what is wrong in its
    own one line (:func:`_diagnose`), so within this block they log nothing below
    CRITICAL."""
    import logging

    builders = logging.getLogger("datasets.packaged_modules")
    level = builders.level
    builders.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        builders.setLevel(level)


def _load_rows(
    spec: DatasetSpec, split: str, source: DataSource, subject: str = "default"
) -> LoadedSplit:
    path = _local_file(spec, split, source, subject)
    if path is not None:
        return _load_local(spec, split, path)
    return _load_hub(spec, split, subject)


def _load_local(spec: DatasetSpec, split: str, path: Path) -> LoadedSplit:
    """The rows of a local file: read directly where Mill can, else by ``datasets``."""
    if not path.is_file():
        raise DatasetUnavailable(
            f"data file {path} for {spec.path} split {split!r} does not exist; "
            "check data.dir (data=local) or task.dataset.data_files"
        )
    where = f"data file {path} ({spec.path} split {split!r})"
    if path.stat().st_size == 0:
        raise DatasetUnavailable(f"{where} is empty; point the task at a file with rows")
    direct = _direct(spec, path)
    if direct is not None:
        origin: dict[str, Any] = {"file": str(path), "sha256": sha256_file(path)}
        return LoadedSplit(rows=direct, origin=origin, local=True)
    import datasets  # heavy: imported only when data is loaded through it

    datasets.disable_progress_bars()
    try:
        with _builders_quiet():  # a bad file is Mill's one line, not their log lines too
            ds = datasets.load_dataset(
                spec.local_builder,
                data_files={split: str(path)},
                split=split,
                cache_dir=datasets_cache_dir(),  # Mill's cache, not ~/.cache/huggingface
                **_builder_kwargs(spec),
            )
        rows = ds.to_list()  # pyarrow takes bytes that are not UTF-8 and fails here
    except Exception as err:  # datasets raises many types; all mean "bad file"
        raise DatasetUnavailable(f"{where}: {_diagnose(path, spec.local_builder, err)}") from err
    if not rows:
        raise DatasetUnavailable(f"{where} has no rows; point the task at a file with rows")
    origin = {"file": str(path), "sha256": sha256_file(path), "fingerprint": ds._fingerprint}
    return LoadedSplit(rows=rows, origin=origin, local=True)


def _load_hub(spec: DatasetSpec, split: str, subject: str) -> LoadedSplit:
    """The rows of a hub dataset's split (a subject is the dataset's config name)."""
    import datasets

    datasets.disable_progress_bars()
    name = spec.name if subject == "default" else subject
    try:
        ds = datasets.load_dataset(spec.path, name, revision=spec.revision, split=split)
    except Exception as err:
        from mill.data.hub import hub_offline

        why = (
            "HF_HUB_OFFLINE is set and the dataset is not in the Hugging Face cache."
            if hub_offline()
            else "Offline?"
        )
        raise DatasetUnavailable(
            f"cannot load {spec.path} ({name or 'default'}, split {split!r}, revision "
            f"{spec.revision}) from the Hugging Face hub: {type(err).__name__}. {why} "
            "Use local files: data=local data.dir=/path/to/data (a folder laid out like "
            "Mill's bundled samples), or data=bundled for the shipped samples"
        ) from err
    origin = {
        "hub": spec.path,
        "name": name,
        "revision": spec.revision,
        "fingerprint": ds._fingerprint,
    }
    return LoadedSplit(rows=ds.to_list(), origin=origin, local=False)
