"""The one-line errors of the lm-eval bridge: an unknown or unreadable task YAML, a
``!function`` or task code that cannot be imported, a dataset that cannot be loaded. Each
names the file and key it comes from (lm-eval's own messages do not) and how to fix it."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mill.errors import ConfigError, DatasetUnavailable, yaml_syntax


def _index_suggestions(name: str, names: Sequence[str]) -> list[str]:
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    if not close:
        close = sorted(n for n in names if name.lower() in n.lower())[:5]
    return close


def _dataset_of(err: BaseException) -> str | None:
    match = re.search(r"'([\w.\-]+/[\w.\-]+)'", str(err))
    return match.group(1) if match else None


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _reason(err: BaseException) -> str:
    """Why a task YAML cannot be read, in one phrase (file and line for a syntax error)."""
    import yaml

    if isinstance(err, yaml.YAMLError):
        return yaml_syntax(err)
    return first_line(err)


def broken_yamls(paths: Sequence[str]) -> list[tuple[Path, BaseException]]:
    """The YAMLs under ``paths`` that cannot be read as lm-eval reads them (a syntax error,
    a missing ``include``, not a mapping), with the error. lm-eval's index skips them
    silently, so their tasks look unknown; this names them (on the error path only)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    out: list[tuple[Path, BaseException]] = []
    for root in paths:
        for path in sorted(Path(root).glob("**/*.yaml")):
            try:
                load_yaml(path, resolve_func=False, recursive=True)
            except Exception as err:  # noqa: BLE001 - reported, as lm-eval's index skips it
                out.append((path, err))
    return out


def _declares(path: Path, name: str) -> bool:
    """The file's text has a ``task: <name>`` or ``group: <name>`` line (it may not parse)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    pattern = rf"^\s*-?\s*(task|group)\s*:\s*['\"]?{re.escape(name)}['\"]?\s*(#.*)?$"
    return re.search(pattern, text, re.MULTILINE) is not None


def unknown_task_error(spec: str, names: Sequence[str], paths: Sequence[str]) -> ConfigError:
    """The one line for a ``task.tasks`` name lm-eval's index lacks: the YAML error when a
    file of the include path that declares it cannot be read, else close names (and the
    include path's unreadable files, which may hold it)."""
    broken = broken_yamls(paths)
    for path, err in broken:
        if _declares(path, spec):
            reason = _reason(err)
            where = "" if str(path) in reason else f" ({path})"
            return ConfigError(
                f"task.tasks: lm-eval task {spec!r}{where} cannot be read: {reason}; "
                "fix the file and rerun"
            )
    close = _index_suggestions(spec, names)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    unread = ""
    if broken:
        path, err = broken[0]
        unread = (
            f"; {len(broken)} YAML file(s) under task.include_path cannot be read, "
            f"e.g. {path}: {_reason(err)}"
        )
    return ConfigError(
        f"task.tasks: {spec!r} is not an lm-eval task, group or tag{hint} "
        f"(see `lm-eval ls tasks`, or add your YAML folder with task.include_path){unread}"
    )


def _walk(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, leaf) of a parsed YAML."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{key}[{i}]")
    else:
        yield key, value


def _where(manager: Any, match: Callable[[Any], bool]) -> str:
    """``lm-eval task 'name' (file), key`` for the first indexed task YAML holding a value
    that ``match``es, or an empty string."""
    for name, entry in manager.task_index.items():
        if entry.cfg is None or entry.yaml_path is None:
            continue
        for key, leaf in _walk(entry.cfg):
            if isinstance(leaf, str) and match(leaf):
                return f"lm-eval task {name!r} ({entry.yaml_path}), {key}: "
    return ""


def missing_file(err: BaseException) -> str | None:
    """The local file a data loader could not find, if ``err`` is about one: a
    FileNotFoundError naming an absolute path that does not exist (``datasets`` resolves
    ``data_files``; a Hub id such as ``org/name`` is never absolute)."""
    if not isinstance(err, FileNotFoundError) or type(err).__name__ == "DatasetNotFoundError":
        return None
    candidates = [str(err.filename)] if err.filename else []
    candidates += re.findall(r"'([^']+)'", str(err))
    for path in candidates:
        if os.path.isabs(path) and not os.path.exists(path):
            return path
    return None


def code_error(manager: Any, err: ImportError | AttributeError) -> ConfigError:
    """A ``!function`` that names a missing module or function, or task code that
    imports a package which is not installed, as one line."""
    found = re.search(
        r"module '([^']+)' for function '([^']+)' \(from YAML in (.+)\)$", str(err)
    ) or re.search(  # fmt: skip
        r"Module '([^']+)' has no function '([^']+)' \(from YAML in (.+)\)$", str(err)
    )
    if found is None:
        missing = getattr(err, "name", None)
        return ConfigError(
            f"lm-eval task code cannot be imported: {first_line(err)}; install the "
            f"package{f' that provides {missing!r}' if missing else ''} and rerun"
        )
    module, function, folder = found.groups()
    spec = str(Path(folder).expanduser() / f"{module}.{function}")
    where = _where(manager, lambda leaf: leaf == spec) or "lm-eval task YAML: "
    return ConfigError(
        f"{where}!function {module}.{function}: {first_line(err)}; a !function is "
        f"looked up in {module.replace('.', '/')}.py beside the YAML, then in the "
        "installed packages: fix the name or add the file"
    )


def dataset_error(manager: Any, err: BaseException) -> DatasetUnavailable:
    missing = missing_file(err)
    if missing is not None:
        # datasets reads a relative path from the current folder
        target = os.path.abspath(missing)
        where = _where(manager, lambda leaf: os.path.abspath(leaf) == target)
        return DatasetUnavailable(
            f"{where or 'lm-eval task data: '}data file {missing} does not exist; fix the "
            "path in the task YAML's dataset_kwargs.data_files or task.dataset_overrides"
        )
    dataset = _dataset_of(err)
    what = f"lm-eval dataset {dataset}" if dataset else "an lm-eval task's dataset"
    return DatasetUnavailable(
        f"{what} cannot be loaded ({first_line(err)}); it is gated or unreachable "
        "offline: log in / go online once to cache it, or give local files with "
        "task.dataset_overrides={<task or pattern>: {dataset_path: json, "
        "dataset_name: null, dataset_kwargs: {data_files: {test: /path/file.jsonl}}}}"
    )
