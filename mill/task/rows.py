"""Dataset rows that refuse to hand out what is not there.

``datasets`` fills a field that some rows of a file lack with ``None``, and a ``None``
formatted into a prompt reads ``"None"``. A :class:`Row` raises :class:`MissingField` when a
task reads (``row[key]``) a field that is missing or null, also inside nested records and
lists, so a bad row stops the run with its field named instead of being scored.
``row.get(key)`` stays the way to read an optional field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mill.errors import TaskError

SKIP_HINT = " (or skip such rows with data.skip_bad_rows=true)"


class BadRow(TaskError):
    """A row lacks what the task needs (a field, a choice, a gold answer among the
    choices). Stops the run, or with ``data.skip_bad_rows=true`` the row is skipped and
    counted (:attr:`mill.task.Task.skipped`)."""

    def __init__(self, message: str, split: str, row: int) -> None:
        super().__init__(message)
        self.split = split
        self.row = row


class AmbiguousGold(ValueError):
    """The gold answer names more than one choice: choice labels (or texts) that repeat."""


def gold_position(values: Sequence[Any], gold: Any, what: str) -> int:
    """The position of ``gold`` among ``values`` (a doc's choice labels or texts, named by
    ``what``): ``ValueError`` when it is not there, :class:`AmbiguousGold` when it is there
    more than once (taking the first would score the doc against a gold it may not mean)."""
    values = list(values)
    count = values.count(gold)
    if count == 0:
        raise ValueError(f"gold answer {gold!r} is not among {values}")
    if count > 1:
        listed = ", ".join(repr(v) for v in values)
        raise AmbiguousGold(
            f"its {what} repeat {gold!r} ({listed}): the gold answer {gold!r} names {count} choices"
        )
    return values.index(gold)


class MissingField(KeyError):
    """A task read a field that the row lacks or holds as null."""

    def __init__(self, field: str, null: bool, used_by: str | None = None) -> None:
        super().__init__(field)
        self.field = field
        self.null = null
        self.used_by = used_by
        """What reads the field (a YAML task's template: ``doc_to_text``, ...)."""

    def __str__(self) -> str:
        return f"field {self.field!r} is null" if self.null else f"lacks field {self.field!r}"

    def explain(self, whose: str) -> str:
        """``whose`` (e.g. "the row") and what is wrong with it, as part of a sentence."""
        by = f" ({self.used_by} reads it)" if self.used_by else ""
        if self.null:
            return f"{whose}'s field {self.field!r} is null{by} (the task needs it)"
        return f"{whose} lacks field {self.field!r}{by} that the task needs"


def explain(err: KeyError, whose: str) -> str:
    """:meth:`MissingField.explain` for any KeyError a task raised reading a row."""
    if isinstance(err, MissingField):
        return err.explain(whose)
    return f"{whose} lacks field {err} that the task needs"


class Unusable(dict[str, Any]):
    """In place of a row that cannot be used (skipping bad rows): holds its error."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error


def strict(value: Any, path: str = "") -> Any:
    """``value`` wrapped so that reading a missing or null part raises MissingField."""
    if isinstance(value, Row | RowList | Unusable):
        return value
    if isinstance(value, dict):
        return Row(value, path)
    if isinstance(value, list):
        return RowList(value, path)
    return value


class Row(dict[str, Any]):
    """A dict whose ``[]`` raises :class:`MissingField` for a missing or null field."""

    def __init__(self, data: Any = (), path: str = "") -> None:
        super().__init__(data)
        self._path = path

    def __getitem__(self, key: Any) -> Any:
        name = f"{self._path}.{key}" if self._path else str(key)
        try:
            value = dict.__getitem__(self, key)
        except KeyError:
            raise MissingField(name, null=False) from None
        if value is None:
            raise MissingField(name, null=True)
        return strict(value, name)


class RowList(list[Any]):
    """A list (a field's values) whose items raise :class:`MissingField` when null."""

    def __init__(self, data: Any = (), path: str = "") -> None:
        super().__init__(data)
        self._path = path

    def _check(self, index: int, value: Any) -> Any:
        name = f"{self._path}[{index}]"
        if value is None:
            raise MissingField(name, null=True)
        return strict(value, name)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return RowList(list.__getitem__(self, index), self._path)
        return self._check(index, list.__getitem__(self, index))

    def __iter__(self) -> Any:
        for index, value in enumerate(list.__iter__(self)):
            yield self._check(index, value)
