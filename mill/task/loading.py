"""A task's loading: the rows of a split read from the data source, local rows adapted to
the hub's schema, side files attached, processed, and bad rows named (or, with
``data.skip_bad_rows=true``, kept as unusable in their place).

The functions take the task (its dataset, its ``_adapt_local_row`` and ``_process_docs``
hooks); :class:`mill.task.Task` calls them from its methods of the same names, which a
subclass may override.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mill.data.load import DatasetSpec, DataSource, load_rows
from mill.errors import TaskError
from mill.task.rows import SKIP_HINT, BadRow, Unusable, explain, strict

if TYPE_CHECKING:
    from mill.task.base import Task


def load_split(task: Task, split: str, source: DataSource, subject: str) -> list[dict[str, Any]]:
    """The rows of one split of one subject as the task reads them: loaded from
    ``source``, local rows adapted to the hub's schema, then processed (what the docs
    are built from; the parity tools write them out for lm-eval)."""
    loaded = load_rows(task.dataset, split, source, subject)
    task.origins[f"{subject}/{split}"] = loaded.origin
    rows: list[dict[str, Any]] = [strict(r) for r in loaded.rows]
    if loaded.local:
        rows = task._attach_side_files(rows, split, source, subject)
        file = loaded.origin.get("file", split)

        def why(err: Exception) -> str:
            what = (
                explain(err, "the row")
                if isinstance(err, KeyError)
                else f"the row does not fit the task ({err})"
            )
            return f" of {file}: {what}; fix the file or point the task at the right one"

        rows = task._row_by_row(
            rows,
            lambda row: [strict(task._adapt_local_row(row))],
            (KeyError, TypeError),
            why,
            split,
            subject,
            source,
        )
    return task._processed(rows, split, subject, source)


def row_by_row(
    task: Task,
    rows: list[dict[str, Any]],
    adapt: Callable[[dict[str, Any]], list[dict[str, Any]]],
    errors: tuple[type[Exception], ...],
    why: Callable[[Any], str],  # called with an exception of `errors`
    split: str,
    subject: str,
    source: DataSource,
) -> list[dict[str, Any]]:
    """``adapt`` each row (to its rows); a row it fails on with one of ``errors`` is a
    :class:`BadRow` naming the task, split, subject, row and ``why(err)``: raised, or with
    ``data.skip_bad_rows`` kept as :class:`Unusable` in its place (as are rows already
    unusable)."""
    out: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        if isinstance(row, Unusable):
            out.append(row)
            continue
        try:
            out.extend(adapt(row))
        except errors as err:
            bad = BadRow(
                f"task {task.name!r}, split {split!r}, subject {subject!r}, row {index}"
                f"{why(err)}{SKIP_HINT}",
                split=split,
                row=index,
            )
            if not source.skip_bad_rows:
                raise bad from err
            out.append(Unusable(bad))
    return out


def processed(
    task: Task, rows: list[dict[str, Any]], split: str, subject: str, source: DataSource
) -> list[dict[str, Any]]:
    """``_process_docs`` on the usable rows, with a bad row named (or, skipping, kept
    as unusable in its place when the processing maps rows one to one)."""
    usable = [r for r in rows if not isinstance(r, Unusable)]
    try:
        processed = task._process_docs(usable)
    except KeyError:
        bad = task._row_by_row(
            rows,
            lambda row: task._process_docs([row]),
            (KeyError,),
            lambda err: f": {explain(err, 'the row')}; fix the data",
            split,
            subject,
            source,
        )
        return [r if isinstance(r, Unusable) else strict(r) for r in bad]
    if len(processed) == len(usable) and len(usable) < len(rows):
        it = iter(processed)
        return [r if isinstance(r, Unusable) else strict(next(it)) for r in rows]
    return [strict(r) for r in processed]


def attach_side_files(
    task: Task, rows: list[dict[str, Any]], split: str, source: DataSource, subject: str
) -> list[dict[str, Any]]:
    for column, relpath in task.LOCAL_SIDE_FILES.get(split, {}).items():
        key = f"{split}_{column}"
        spec = DatasetSpec(
            path=f"{task.dataset.path} ({column})",
            local_files={split: relpath},
            local_builder="text",
            data_files={split: task.dataset.data_files[key]}
            if key in task.dataset.data_files
            else {},
        )
        if source.root is None and not spec.data_files:
            raise TaskError(
                f"task {task.name!r}: split {split!r} comes from your own file; give its "
                f"{column} file too: task.dataset.data_files.{key}=/path/to/file"
            )
        side = load_rows(spec, split, source, subject)
        task.origins[f"{subject}/{split}/{column}"] = side.origin
        values = [r["text"] for r in side.rows]
        if len(values) != len(rows):
            raise TaskError(
                f"task {task.name!r}: {side.origin.get('file')} has {len(values)} lines "
                f"but the {split} file has {len(rows)} rows; they must be line-aligned"
            )
        rows = [{**row, column: value} for row, value in zip(rows, values, strict=True)]
    return rows
