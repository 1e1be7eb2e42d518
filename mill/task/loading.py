"""A task's loading: the rows of a split read from the data source, local rows adapted to
the hub's schema, side files attached, processed, and bad rows named (or, with
``data.skip_bad_rows=true``, kept as unusable in their place).

The functions take data, not the task: a :class:`Loading` holds the task's name, its
dataset, its side files and its two loading hooks as functions (``adapt_local_row`` and
``process_docs``, :class:`mill.task.Task`); they return the rows and where they came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mill.data.load import DatasetSpec, DataSource, load_rows
from mill.errors import TaskError
from mill.task.rows import SKIP_HINT, BadRow, Unusable, explain, strict

Row = dict[str, Any]


@dataclass(frozen=True)
class Loading:
    """How one task loads a split: what :func:`load_split` needs of it."""

    task: str
    """The task's name (in error messages)."""
    dataset: DatasetSpec
    side_files: Mapping[str, Mapping[str, str]]
    """``LOCAL_SIDE_FILES``: split -> {field: file} (:attr:`mill.task.Task.LOCAL_SIDE_FILES`)."""
    adapt: Callable[[Row], Row]
    """A local row in the hub's schema (:meth:`mill.task.Task.adapt_local_row`)."""
    process: Callable[[list[Row]], list[Row]]
    """The rows of a split processed (:meth:`mill.task.Task.process_docs`)."""


@dataclass
class LoadedRows:
    """The rows of one split of one subject and where they came from (the manifest's
    ``origins``, keyed ``<subject>/<split>`` and ``<subject>/<split>/<side file's field>``)."""

    rows: list[Row]
    origins: dict[str, Any] = field(default_factory=dict)


def load_split(how: Loading, split: str, source: DataSource, subject: str) -> LoadedRows:
    """The rows of one split of one subject as the task reads them: loaded from
    ``source``, local rows adapted to the hub's schema, then processed (what the docs
    are built from; the parity tools write them out for lm-eval)."""
    loaded = load_rows(how.dataset, split, source, subject)
    out = LoadedRows([], {f"{subject}/{split}": loaded.origin})
    rows: list[Row] = [strict(r) for r in loaded.rows]
    if loaded.local:
        rows = _attach_side_files(how, rows, split, source, subject, out.origins)
        file = loaded.origin.get("file", split)

        def why(err: Exception) -> str:
            what = (
                explain(err, "the row")
                if isinstance(err, KeyError)
                else f"the row does not fit the task ({err})"
            )
            return f" of {file}: {what}; fix the file or point the task at the right one"

        where = _Where(how.task, split, subject, source.skip_bad_rows)
        rows = _row_by_row(
            where, rows, lambda row: [strict(how.adapt(row))], (KeyError, TypeError), why
        )
    out.rows = _processed(how, rows, split, subject, source)
    return out


@dataclass(frozen=True)
class _Where:
    """The split being read (named in a bad row's error) and whether bad rows are skipped."""

    task: str
    split: str
    subject: str
    skip_bad_rows: bool


def _row_by_row(
    where: _Where,
    rows: list[Row],
    adapt: Callable[[Row], list[Row]],
    errors: tuple[type[Exception], ...],
    why: Callable[[Any], str],  # called with an exception of `errors`
) -> list[Row]:
    """``adapt`` each row (to its rows); a row it fails on with one of ``errors`` is a
    :class:`BadRow` naming the task, split, subject, row and ``why(err)``: raised, or with
    ``data.skip_bad_rows`` kept as :class:`Unusable` in its place (as are rows already
    unusable)."""
    out: list[Row] = []
    for index, row in enumerate(rows):
        if isinstance(row, Unusable):
            out.append(row)
            continue
        try:
            out.extend(adapt(row))
        except errors as err:
            bad = BadRow(
                f"task {where.task!r}, split {where.split!r}, subject {where.subject!r}, row "
                f"{index}{why(err)}{SKIP_HINT}",
                split=where.split,
                row=index,
            )
            if not where.skip_bad_rows:
                raise bad from err
            out.append(Unusable(bad))
    return out


def _processed(
    how: Loading, rows: list[Row], split: str, subject: str, source: DataSource
) -> list[Row]:
    """``process_docs`` on the usable rows, with a bad row named (or, skipping, kept
    as unusable in its place when the processing maps rows one to one)."""
    usable = [r for r in rows if not isinstance(r, Unusable)]
    try:
        done = how.process(usable)
    except KeyError:
        bad = _row_by_row(
            _Where(how.task, split, subject, source.skip_bad_rows),
            rows,
            lambda row: how.process([row]),
            (KeyError,),
            lambda err: f": {explain(err, 'the row')}; fix the data",
        )
        return [r if isinstance(r, Unusable) else strict(r) for r in bad]
    if len(done) == len(usable) and len(usable) < len(rows):
        it = iter(done)
        return [r if isinstance(r, Unusable) else strict(next(it)) for r in rows]
    return [strict(r) for r in done]


def _attach_side_files(
    how: Loading,
    rows: list[Row],
    split: str,
    source: DataSource,
    subject: str,
    origins: dict[str, Any],
) -> list[Row]:
    """Each row with a field per side file of ``split`` (a line of a line-aligned text
    file); records each file's origin in ``origins``."""
    for column, relpath in how.side_files.get(split, {}).items():
        key = f"{split}_{column}"
        spec = DatasetSpec(
            path=f"{how.dataset.path} ({column})",
            local_files={split: relpath},
            local_builder="text",
            data_files={split: how.dataset.data_files[key]}
            if key in how.dataset.data_files
            else {},
        )
        if source.root is None and not spec.data_files:
            raise TaskError(
                f"task {how.task!r}: split {split!r} comes from your own file; give its "
                f"{column} file too: task.dataset.data_files.{key}=/path/to/file"
            )
        side = load_rows(spec, split, source, subject)
        origins[f"{subject}/{split}/{column}"] = side.origin
        values = [r["text"] for r in side.rows]
        if len(values) != len(rows):
            raise TaskError(
                f"task {how.task!r}: {side.origin.get('file')} has {len(values)} lines "
                f"but the {split} file has {len(rows)} rows; they must be line-aligned"
            )
        rows = [{**row, column: value} for row, value in zip(rows, values, strict=True)]
    return rows
