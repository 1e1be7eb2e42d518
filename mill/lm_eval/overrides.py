"""``task.dataset_overrides`` of the lm-eval bridge: read from the config (a mapping or a
YAML file), written as YAMLs that ``include`` each matched task's own and set the keys, and
indexed by lm-eval before its original tasks."""

from __future__ import annotations

import atexit
import fnmatch
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mill.errors import ConfigError, yaml_syntax


def _format(value: Any, fields: dict[str, str]) -> Any:
    """``{task}`` and ``{dataset_name}`` in override strings become the task's own."""
    if isinstance(value, str):
        for key, field in fields.items():
            value = value.replace("{" + key + "}", field)
        return value
    if isinstance(value, dict):
        return {k: _format(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [_format(v, fields) for v in value]
    return value


# pandas' settings that turn a CSV cell into a missing value ("", "None", "NA", "null", ...)
_NA_SETTINGS = ("na_filter", "keep_default_na", "na_values")


def _cells_as_text(keys: dict[str, Any]) -> dict[str, Any]:
    """A local ``dataset_path: csv`` reads every cell as its text: ``na_filter: false`` is
    added to its ``dataset_kwargs`` unless they set pandas' missing-value settings
    themselves. Otherwise a cell such as ``None`` or ``NA`` (MMLU has answers "None") loads
    as a missing value, which the Hub's copy of the same data holds as text."""
    kwargs = keys.get("dataset_kwargs")
    if keys.get("dataset_path") != "csv" or not isinstance(kwargs, dict):
        return keys
    if any(setting in kwargs for setting in _NA_SETTINGS):
        return keys
    return {**keys, "dataset_kwargs": {**kwargs, "na_filter": False}}


def read_overrides(value: Any) -> dict[str, dict[str, Any]]:
    """``task.dataset_overrides``: a mapping, or the path of a YAML file holding one."""
    if not value:
        return {}
    if isinstance(value, (str, Path)):
        import yaml

        path = Path(value)
        if not path.is_file():
            raise ConfigError(
                f"task.dataset_overrides: {path} is not a file; give a mapping "
                "{task or glob: {dataset_path: ..., ...}} or a YAML file holding one"
            )
        try:
            with path.open(encoding="utf-8") as stream:  # the error names the file
                value = yaml.safe_load(stream) or {}
        except yaml.YAMLError as err:
            raise ConfigError(
                f"task.dataset_overrides: {yaml_syntax(err)}; fix the file (a value holding "
                "{...}, such as {dataset_name}, must be quoted or written in block style)"
            ) from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError(
            "task.dataset_overrides must map task names or globs to TaskConfig keys, e.g. "
            "{gsm8k: {dataset_path: json, dataset_kwargs: {data_files: {test: f.jsonl}}}}"
        )
    return {str(k): dict(v) for k, v in value.items()}


def write_overrides(manager: Any, overrides: dict[str, dict[str, Any]], folder: Path) -> int:
    """Write into ``folder``, per lm-eval YAML task whose name matches a pattern of
    ``overrides``, a YAML that ``include``s the task's own YAML and sets the pattern's keys
    (``{task}`` and ``{dataset_name}`` in strings become the task's own). lm-eval's
    ``include_path`` then finds them before the originals. Returns the number written."""
    import yaml
    from lm_eval.tasks._index import Kind
    from lm_eval.tasks._yaml_loader import load_yaml

    written = 0
    for pattern, keys in overrides.items():
        matched = [
            name
            for name, entry in manager.task_index.items()
            if entry.kind is Kind.TASK and entry.yaml_path and fnmatch.fnmatch(name, pattern)
        ]
        if not matched:
            raise ConfigError(
                f"task.dataset_overrides: pattern {pattern!r} matches no lm-eval YAML task"
            )
        for name in matched:
            path = Path(manager.task_index[name].yaml_path).resolve()
            original = load_yaml(path, resolve_func=False)
            fields = {"task": name, "dataset_name": str(original.get("dataset_name") or "")}
            own = _cells_as_text(_format(dict(keys or {}), fields))
            body = {"include": str(path), "task": name, **own}
            text = yaml.safe_dump(body, sort_keys=False)
            (folder / f"{written:05d}_{name}.yaml").write_text(text)
            written += 1
    return written


def apply_overrides(manager: Any, overrides: dict[str, dict[str, Any]]) -> Path:
    """Write ``overrides`` into a temporary folder (removed at exit) and add its tasks to
    ``manager``'s index, where they replace the originals. Returns the folder."""
    from lm_eval.tasks._index import TaskIndex

    tmp = Path(tempfile.mkdtemp(prefix="mill-lm-eval-"))
    atexit.register(shutil.rmtree, tmp, True)
    write_overrides(manager, overrides, tmp)
    manager._index.update(TaskIndex().build([tmp]))
    return tmp
