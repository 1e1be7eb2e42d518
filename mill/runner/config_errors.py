"""Hydra's composition errors as one line: what is wrong, where, and the closest options.

Hydra reports an unknown option as a multi-line message (every option, then the search
path); Mill prints one line with :mod:`difflib` close matches instead.
"""

from __future__ import annotations

import difflib
import re
from importlib import resources
from pathlib import Path
from typing import Any

GROUP_NOUNS = {"metrics": "metric", "hydra/launcher": "launcher"}


def _searchpath(argv: list[str]) -> list[str]:
    """Entries of ``hydra.searchpath=[...]`` given on the command line."""
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        parsed = OverridesParser.create().parse_overrides(
            [a for a in argv if "=" in a and not a.startswith("-")]
        )
    except Exception:  # an unparsable command line has no search path to offer
        return []
    for override in parsed:
        if override.key_or_group == "hydra.searchpath":
            value = override.value()
            return [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return []


def group_options(group: str, argv: list[str]) -> list[str]:
    """Options of a config group: Mill's own plus those in the user's search path."""
    names: set[str] = set()
    folders: list[Any] = [resources.files("mill.conf").joinpath(group)]
    for entry in _searchpath(argv):
        if entry.startswith("file://"):
            folders.append(Path(entry.removeprefix("file://")) / group)
        elif entry.startswith("pkg://"):
            try:
                folders.append(resources.files(entry.removeprefix("pkg://")).joinpath(group))
            except (ModuleNotFoundError, TypeError):
                continue
    for folder in folders:
        try:
            for item in folder.iterdir():
                if item.name.endswith(".yaml"):
                    names.add(item.name.removesuffix(".yaml"))
        except (OSError, AttributeError):
            continue
    return sorted(names)


def _suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    listed = ", ".join(options) if options else "none"
    return f"{hint}Options: {listed}"


def _missing(err: Any, argv: list[str]) -> str:
    missing = str(getattr(err, "missing_cfg_file", "") or "")
    if not missing:
        first = str(err).splitlines()[0]
        if "'" in first:
            missing = first.split("'")[-2]
    group, _, name = missing.rpartition("/")
    if not group:
        return " ".join(str(err).split())
    if group == "hydra/launcher" and name.startswith("submitit"):
        return (
            f"the {name} launcher needs hydra-submitit-launcher: "
            'pip install "mill-eval[slurm]" (or pip install hydra-submitit-launcher)'
        )
    options = list(getattr(err, "options", None) or group_options(group, argv))
    noun = GROUP_NOUNS.get(group, group)
    return f"unknown {noun} {name!r} ({group}={name}); {_suggest(name, options)}"


MOVED = {
    name: (
        "reasoning is removed from every backend's generations by one run-wide rule, "
        'reasoning.tags (<think>...</think> by default; \'reasoning.tags=[["<r>","</r>"]]\' '
        "for other tags, reasoning.tags=[] to keep the text as generated)"
    )
    for name in ("strip_reasoning", "reasoning_tag")
}
"""Settings that were removed, by name: what replaced them."""


def _override(err: Any) -> str:
    cause = err.__cause__
    key = getattr(cause, "key", None)
    parent = getattr(cause, "parent_node", None)
    full = getattr(cause, "full_key", None) or key
    if str(key) in MOVED:
        return f"{full} is gone: {MOVED[str(key)]}"
    if key is not None and parent is not None and hasattr(parent, "keys"):
        keys = [str(k) for k in parent.keys()]
        prefix = str(full).rpartition(".")[0]
        owners = [] if prefix else _owners(parent, str(key), keys)
        if owners:  # `limit=5`: a group's setting written at the root
            return (
                f"unknown setting {key} at the root of the config; did you mean "
                f"{owners[0]}.{key}=...? (a root-level +{key} would be read by nothing)"
            )
        close = difflib.get_close_matches(str(key), keys, n=3, cutoff=0.5)
        # `tsk.limit=5`: the unknown root key and the rest of what was written after it
        written = re.match(r"Could not override '([^']+)'", str(err))
        rest = written.group(1)[len(str(key)) :] if written and not prefix else ""
        full = f"{full}{rest}"
        near = [f"{prefix}.{c}" if prefix else f"{c}{rest}" for c in close]
        hint = f"did you mean {' or '.join(near)}? " if close else ""
        return (
            f"unknown setting {full}; {hint}{prefix or 'the config'} has: {', '.join(keys)} "
            f"(to add a new key, write +{full}=...)"
        )
    return " ".join(str(err).split())


def _owners(root: Any, key: str, groups: list[str]) -> list[str]:
    """The groups of ``root`` that have a setting ``key``."""
    found = []
    for group in groups:
        try:
            node = root._get_node(group)
            if hasattr(node, "keys") and key in node.keys():
                found.append(group)
        except Exception:  # noqa: BLE001 - a hint only: a node that cannot be read has none
            continue
    return found


def _yaml(err: Any) -> str:
    from mill.errors import yaml_syntax

    return f"{yaml_syntax(err)}; fix the file and rerun"


def _interpolation(err: Any) -> str:
    """An unresolvable ``${...}`` (Hydra resolves the run folder's name before Mill runs)."""
    message = " ".join(str(getattr(err, "msg", "") or err).splitlines()[0].split())
    where = getattr(err, "full_key", None)
    match = re.search(r"Interpolation key '([^']+)' not found", message)
    if match and match.group(1) in ("task.name", "model.name"):
        group = match.group(1).split(".")[0]
        return (
            f"the {group} config has no `name` (the run folder is named after "
            f"${{{match.group(1)}}}); add a line `name: <short name>` to the {group}'s YAML"
        )
    return f"cannot resolve {where or 'the config'}: {message}; fix the value or the config"


def null_group(err: BaseException, argv: list[str]) -> str | None:
    """One line for ``model=null`` (Hydra's bare ``ValueError``: a config group set to
    null); ``None`` for any other error."""
    if isinstance(err, OSError) or not str(err).startswith("Config group override must be"):
        return None
    groups = [a.partition("=")[0].lstrip("+") for a in argv if a.endswith("=null")]
    group = groups[0] if groups else "a config group"
    noun = GROUP_NOUNS.get(group, group)
    return (
        f"{group}=null: the {noun} group takes one of its configs, not null; "
        f"{_suggest('', group_options(group, argv)) if groups else 'name one of its configs'}"
    )


def _sweep_without_m(text: str) -> str | None:
    """One line for a sweep's value in a single run (``task=arc_easy,piqa`` without ``-m``),
    instead of Hydra's three numbered ways with shell backslashes; None for other errors."""
    match = re.match(r"(?:Ambiguous value for argument|Sweep parameters) '(.+?)'", text)
    if match is None:
        return None
    arg = match.group(1)
    key, _, value = arg.partition("=")
    if key.lstrip("+") == "task":
        return (
            f"{arg} lists several tasks: several tasks in one run is task=[{value}] (one "
            f"folder, one model load); a sweep, a folder per task, is mill -m {arg}"
        )
    said = f"{arg} is a sweep, a run per value: run it with mill -m {arg}"
    if text.startswith("Sweep parameters") or group_options(key.lstrip("+"), []):
        return said  # range(...), glob(...), or a config group's options
    return f"{said}; a list is {key}=[{value}]; a text with a comma is quoted: {key}='{value}'"


def describe(err: BaseException, argv: list[str]) -> str:
    """One line for a Hydra composition error, a YAML syntax error or an unresolvable
    interpolation."""
    import yaml
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(err, yaml.YAMLError):
        return _yaml(err)
    if isinstance(err, OmegaConfBaseException):
        return _interpolation(err)
    if isinstance(err, MissingConfigException):
        return _missing(err, argv)
    if isinstance(err, OverrideParseException):
        message = " ".join(str(err.message).splitlines()[0].split())
        return f"cannot parse override {err.override!r}: {message}"
    text = str(err)
    swept = _sweep_without_m(text)
    if swept is not None:
        return swept
    if text.startswith("Could not override") and err.__cause__ is not None:
        return _override(err)
    if isinstance(err.__cause__, yaml.YAMLError):
        return _yaml(err.__cause__)
    return " ".join(text.split())
