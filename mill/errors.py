"""Errors a user can fix. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations

import errno


class MillError(Exception):
    """Base class: something in the user's input or environment is wrong, with a fix."""


class ConfigError(MillError):
    """A config value is missing, unknown or inconsistent."""


class TaskError(MillError):
    """A task or its data cannot produce valid requests."""


class DatasetUnavailable(MillError):
    """A dataset cannot be loaded (offline, missing files, bad revision)."""


class ModelError(MillError):
    """A model cannot be loaded or returned an invalid result."""


class ExperimentExists(MillError):
    """The experiment folder already holds a result; Mill never overwrites one."""


class StorageError(MillError):
    """A file cannot be written: the disk is full, the folder is read-only or not ours."""


def yaml_syntax(err: BaseException) -> str:
    """A PyYAML syntax error as one phrase: ``malformed YAML in <file>, line L, column C:
    <problem> (<context>)`` (the config, a task YAML, an overrides file alike)."""
    mark = getattr(err, "problem_mark", None)
    where = f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}" if mark else "a file"
    problem = getattr(err, "problem", None) or (str(err).splitlines() or [type(err).__name__])[0]
    context = getattr(err, "context", None)
    start = getattr(err, "context_mark", None)
    if context and start is not None and mark is not None and start.line != mark.line:
        context = f"{context} started at line {start.line + 1}, column {start.column + 1}"
    extra = f" ({context})" if context else ""
    return f"malformed YAML in {where}: {problem}{extra}"


# errno values that mean "this storage cannot take the write", not "Mill has a bug"
_STORAGE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EFBIG", "EDQUOT", "EROFS", "EACCES", "EPERM")
    if hasattr(errno, name)
)


def storage_error(err: BaseException, where: object = None) -> StorageError | None:
    """The :class:`StorageError` behind ``err`` (itself, or an ``OSError`` of a full disk,
    a read-only or foreign folder anywhere in its cause chain), or None. ``where`` (a
    folder) is named when the error does not say which file it was."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, StorageError):
            return cause
        if isinstance(cause, OSError) and cause.errno in _STORAGE_ERRNOS:
            if cause.filename:
                target = f" {cause.filename}"
            else:
                target = f" in {where}" if where is not None else ""
            code = cause.errno if cause.errno is None else errno.errorcode.get(cause.errno)
            return StorageError(
                f"cannot write{target}: {cause.strerror or cause} "
                f"({code or cause.errno}); free disk space or make "
                "the folder writable, or write elsewhere (hydra.run.dir=..., runner.cache=...)"
            )
        cause = cause.__cause__ or cause.__context__
    return None
