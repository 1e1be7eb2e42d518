"""Every setting of every config group, declared once: its full key, what it accepts
(type, range, choices, the words it also takes) and what it means.

:data:`SETTINGS` is the one declaration: numbers (:class:`Number`, with their range),
choices (:class:`Choice`, with their allowed values), strings (:class:`Text`), booleans
(:class:`Flag`) and lists or mappings (:class:`Nested`). :func:`check_config` checks a
resolved config against it when the run starts, before any data or model loads (``mill``,
``mill -m``'s jobs, :func:`mill.evaluate`): a value that is not finite, out of range, of the
wrong type or not one of the choices is one line naming the full key, the value and what is
accepted, exit 2; a list where one value is expected says so, with the sweep that runs each
value. :func:`check_config` returns the config with each setting typed by its rule: the
values of the run's one typed object (:class:`mill.runner.run_config.RunConfig`), from
which each subsystem reads its slice without parsing it again. A class a user may also
build in Python (a backend, a task, a metric, a sink,
:class:`mill.execution.ExecutionSettings`) checks its own arguments by the same rules when
constructed (:func:`typed`, :func:`typed_one`, :func:`mill.schema.rules.checked`), so a
value that reaches it by another way (:func:`mill.evaluate`'s Python objects, a test) is
held to the same rules; the runner builds a run's objects from its typed slices inside
:func:`already_typed`, where those checks are skipped: a run checks each setting once.
The configuration reference (docs/reference/config.md) shows each rule beside its key
(``scripts.config_reference``), so the page and the checks cannot drift, and
``tests/test_schema.py`` fails when a key of a shipped config in ``conf/`` is not declared.

The rules themselves are in :mod:`mill.schema.rules`. Every group is declared by typed
fields, each carrying its rule: the fixed groups (``runner``, ``report``, ``execution``,
``data``) by their typed objects (:mod:`mill.schema.groups`), the others (``model``,
``task``, ``judge``, ``sink``, ``metrics``, ``reasoning``, the root's ``allow_targets``)
by :mod:`mill.schema.components`; :data:`SETTINGS` takes every rule from those fields, no
rule is declared beside them. So does :data:`COMMANDS`, the settings of Mill's other
commands, from :mod:`mill.schema.commands`.

Declaring a new setting: a field of its group's class with
``field(metadata=setting(Number(...)))`` (or ``Choice``, ``Text``, ``Flag``, ``Nested``);
a metric's parameter on :class:`MetricFields` (any metric, ``metrics.*.<param>``) or on
that metric's class. The settings of :class:`ModelFields` are also the judge's (a judge is
a model config): declared once, checked under both. A group or key the composed config
does not have is not checked, so a backend without the key is not affected.

Nothing here imports torch, Hydra or OmegaConf.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from mill.schema.commands import (
    CompareCommand,
    JudgeCommand,
    ReportCommand,
    RunsCommand,
    ViewCommand,
)
from mill.schema.components import (
    ArenaHardFields,
    EceFields,
    JudgeFields,
    LmEvalTaskFields,
    MajAtKFields,
    MetricFields,
    MlflowFields,
    ModelFields,
    PassAtKFields,
    PrimaryFields,
    ReasoningFields,
    SinkFields,
    TaskFields,
    WandbFields,
)
from mill.schema.groups import (
    DataFields,
    ExecutionFields,
    ReportSettings,
    RunnerSettings,
    group_rules,
)
from mill.schema.rules import (
    ITERS_MAX,
    SEED_MAX,
    SIZE_MAX,
    STDERR_ITERS_MAX,
    Choice,
    Flag,
    Nested,
    Number,
    Rule,
    Text,
    already_typed,
    check_number,
    checked,
)

__all__ = [
    "BY_TARGET",
    "COMMANDS",
    "ITERS_MAX",
    "MODEL_KEYS",
    "SEED_MAX",
    "SETTINGS",
    "SIZE_MAX",
    "STDERR_ITERS_MAX",
    "Choice",
    "DataFields",
    "ExecutionFields",
    "Flag",
    "Nested",
    "Number",
    "ReportSettings",
    "Rule",
    "RunnerSettings",
    "Text",
    "already_typed",
    "check_config",
    "check_number",
    "check_task",
    "checked",
    "rule_of",
    "task_members",
    "task_rules",
    "typed",
    "typed_command",
    "typed_one",
]


def typed(group: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``node`` (the ``group`` config group's, resolved) checked by their
    declared rules and typed (whole numbers as int, choices and words in lower case, the
    words true/false as booleans): what a constructor does with its arguments. A mapping
    that is not itself a setting is typed key by key (``judge.generation``); keys not
    declared come back as they are. Inside :func:`already_typed` (a run's objects, built
    from its typed configuration) the node comes back as it is, not checked again."""
    out = dict(node)
    for key, value in node.items():
        rule = rule_of(f"{group}.{key}")
        if rule is not None:
            out[key] = checked(f"{group}.{key}", value, rule)
        elif isinstance(value, Mapping):
            out[key] = typed(f"{group}.{key}", value)
    return out


def typed_one(key: str, value: Any) -> Any:
    """The setting ``key`` (its full key: ``metrics.ece.bins``) checked and typed by its
    declared rule, as :func:`typed` does (as given inside :func:`already_typed`)."""
    rule = rule_of(key)
    return value if rule is None else checked(key, value, rule)


MODEL_KEYS = tuple(f.name for f in fields(ModelFields))
"""The keys of a model config (``model.<key>``, ``judge.<key>`` for the judge)."""

SETTINGS: dict[str, Rule] = {
    **group_rules("runner", RunnerSettings),  # how an experiment runs
    **group_rules("execution", ExecutionFields),  # how code tasks run the model's programs
    **group_rules("reasoning", ReasoningFields),  # what of a generation the metrics read
    **group_rules("data", DataFields),  # where the tasks' documents come from
    **group_rules("task", TaskFields),  # the benchmark
    # model: every backend's settings (a backend without the key is not checked)
    **group_rules("model", ModelFields),
    # judge: a model config (the model's settings, checked under judge.) and its own
    **group_rules("judge", ModelFields),
    **group_rules("judge", JudgeFields),
    **group_rules("report", ReportSettings),  # the console report while a run goes
    # sink: experiment trackers
    **group_rules("sink.*", SinkFields),
    **group_rules("sink.mlflow", MlflowFields),
    **group_rules("sink.wandb", WandbFields),
    # metrics: their parameters (metrics.*.: any metric's)
    **group_rules("metrics.pass_at_k", PassAtKFields),
    **group_rules("metrics.maj_at_k", MajAtKFields),
    **group_rules("metrics.ece", EceFields),
    **group_rules("metrics.*", MetricFields),
    **group_rules("metrics.arena_hard_score", ArenaHardFields),
    **group_rules("", PrimaryFields),  # the primary config's own
}
"""Full key -> its rule: every setting Mill checks (``*``: any metric or sink), each taken
from the field that declares it (:mod:`mill.schema.groups`, :mod:`mill.schema.components`)."""

COMMANDS: dict[str, dict[str, Rule]] = {
    "report": group_rules("", ReportCommand),
    "compare": group_rules("", CompareCommand),
    "runs": group_rules("", RunsCommand),
    "view": group_rules("", ViewCommand),
    "judge": group_rules("", JudgeCommand),
}
"""The settings of the commands (``mill report``, ``mill compare``, ``mill runs``,
``mill view``, ``mill judge``; ``conf/<command>.yaml``), at their config's root, by command:
declared by the fields of :mod:`mill.schema.commands`."""


def typed_command(command: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of the ``command``'s config ``node`` (resolved) checked by their rules
    in :data:`COMMANDS` and typed (ConfigError naming the key, as ``trust_edited='no'``);
    keys it does not declare come back as they are."""
    rules = COMMANDS.get(command, {})
    return {
        key: check_number(key, value, rules[key]) if key in rules and value != "???" else value
        for key, value in node.items()
    }


BY_TARGET: dict[str, dict[str, Rule]] = {
    "mill.lm_eval.": group_rules("task", LmEvalTaskFields),
}
"""Task rules that differ for the classes under a module prefix (the task node's
``_target_``): lm-eval's suite also takes a fraction as its limit, as lm-eval does."""


def _places(config: Any, parts: list[str], prefix: str) -> list[tuple[str, Any, str, Any]]:
    """(full key, parent mapping, key in it, value) of each setting of ``config`` at
    ``parts`` (``*`` matches any key): where :func:`check_config` puts its typed value."""
    head, rest = parts[0], parts[1:]
    if not isinstance(config, Mapping):
        return []
    names = [str(k) for k in config] if head == "*" else [head] if head in config else []
    out = []
    for name in names:
        key = f"{prefix}.{name}" if prefix else name
        if rest:
            out += _places(config[name], rest, key)
        else:
            out.append((key, config, name, config[name]))
    return out


def _plain_copy(node: Any) -> Any:
    """``node`` (plain containers) copied, its mappings and lists new, its values shared."""
    if isinstance(node, Mapping):
        return {k: _plain_copy(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_plain_copy(v) for v in node]
    return node


def check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting of :data:`SETTINGS` that ``config`` (resolved, as plain containers)
    has, checked (ConfigError naming the first one refused); the task's by
    :func:`check_task`, its group's members included. Returns a copy of ``config`` with
    each checked setting typed by its rule (whole numbers as int, words and choices in
    lower case, ``true``/``false`` as booleans): typing a typed config changes nothing."""
    out: dict[str, Any] = _plain_copy(config)
    for key, rule in SETTINGS.items():
        if not key.startswith("task."):
            for full_key, parent, name, value in _places(out, key.split("."), ""):
                parent[name] = check_number(full_key, value, rule)
    task = out.get("task")
    if isinstance(task, Mapping):
        check_task(task)
    return out


def task_rules(target: Any) -> dict[str, Rule]:
    """The rules of a task node whose ``_target_`` is ``target``: the ``task.*`` settings
    of :data:`SETTINGS`, with those of :data:`BY_TARGET` for its module."""
    rules = {k: r for k, r in SETTINGS.items() if k.startswith("task.")}
    for prefix, own in BY_TARGET.items():
        if str(target or "").startswith(prefix):
            rules.update(own)
    return rules


def task_members(node: Mapping[str, Any], prefix: str = "task") -> list[tuple[str, Any]]:
    """The member task configs of a task node, with their full keys: a group config's
    ``tasks`` list (``task.tasks[0]``) and, for ``task=[arc_easy,piqa]``, each member
    under its name (``task.piqa``: a mapping with a ``_target_`` that is no setting)."""
    out: list[tuple[str, Any]] = []
    members = node.get("tasks")
    if isinstance(members, Sequence) and not isinstance(members, (str, bytes)):
        out += [
            (f"{prefix}.tasks[{i}]", m) for i, m in enumerate(members) if isinstance(m, Mapping)
        ]
    for key, value in node.items():
        if isinstance(value, Mapping) and "_target_" in value and rule_of(f"task.{key}") is None:
            out.append((f"{prefix}.{key}", value))
    return out


def check_task(node: Mapping[str, Any], prefix: str = "task") -> None:
    """A task node's settings by its rules (:func:`task_rules`), named by their full keys
    (``task.piqa.limit``), then each member's (:func:`task_members`) by its own: a group
    member is checked key by key at composition, before any data or model loads. A node
    that is a dict (:func:`check_config`'s copy) gets each setting's typed value."""
    for key, rule in task_rules(node.get("_target_")).items():
        for full_key, parent, name, value in _places(node, key.split(".")[1:], prefix):
            typed_value = check_number(full_key, value, rule)
            if isinstance(parent, dict):
                parent[name] = typed_value
    for member_key, member in task_members(node, prefix):
        check_task(member, member_key)


def rule_of(key: str) -> Rule | None:
    """The rule declared for the full key ``key`` (``metrics.acc.ignore_case`` finds
    ``metrics.*.ignore_case``), or None when it is not declared."""
    parts = key.split(".")
    for pattern, rule in SETTINGS.items():
        names = pattern.split(".")
        if len(names) == len(parts) and all(
            n in ("*", p) for n, p in zip(names, parts, strict=True)
        ):
            return rule
    return None
