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
build in Python (a backend, a task, a sink, :class:`mill.execution.ExecutionSettings`)
checks its own arguments by the same rules when constructed (:func:`typed`,
:func:`check_number`), so a value that reaches it by another way (:func:`mill.evaluate`'s
Python objects, a test) is held to the same rules.
The configuration reference (docs/reference/config.md) shows each rule beside its key
(``scripts.config_reference``), so the page and the checks cannot drift, and
``tests/test_schema.py`` fails when a key of a shipped config in ``conf/`` is not declared.

The rules themselves are in :mod:`mill.schema.rules`. The groups whose keys are fixed
(``runner``, ``report``, ``execution``, ``data``) are declared by their typed objects
(:mod:`mill.schema.groups`: each field carries its rule), and :data:`SETTINGS` takes their
rules from those fields.

Declaring a new setting: in a fixed group, a field of its typed object with
``field(metadata=setting(Number(...)))``; elsewhere, add
``"<group>.<key>": Number(minimum, ..., meaning="...")`` (or ``Choice``, ``Text``, ``Flag``,
``Nested``) to :data:`SETTINGS` (a metric's parameter: ``"metrics.<metric>.<param>"``;
``*`` stands for any metric). The settings of the ``model``
group are also the judge's (a judge is a model config): declared once, checked under both.
A group or key the composed config does not have is not checked, so a backend without the
key is not affected.

Nothing here imports torch, Hydra or OmegaConf.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
    check_number,
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
    "check_config",
    "check_number",
    "check_task",
    "rule_of",
    "task_members",
    "task_rules",
    "typed",
    "typed_command",
]


def typed(group: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``node`` (the ``group`` config group's, resolved) checked by their
    declared rules and typed (whole numbers as int, choices and words in lower case, the
    words true/false as booleans): what a subsystem reads instead of parsing its slice.
    A mapping that is not itself a setting is typed key by key (``judge.generation``);
    keys not declared come back as they are."""
    out = dict(node)
    for key, value in node.items():
        rule = rule_of(f"{group}.{key}")
        if rule is not None:
            out[key] = check_number(f"{group}.{key}", value, rule)
        elif isinstance(value, Mapping):
            out[key] = typed(f"{group}.{key}", value)
    return out


def _generation(prefix: str) -> dict[str, Rule]:
    """The generation settings a task and a judge share (``generation``)."""
    return {
        f"{prefix}.do_sample": Flag(meaning="sample (true) or decode greedily (false)"),
        f"{prefix}.max_gen_toks": Number(1, maximum=SIZE_MAX, meaning="tokens generated at most"),
        f"{prefix}.temperature": Number(
            0, whole=False, maximum=100, meaning="sampling temperature"
        ),
        f"{prefix}.seed": Number(0, optional=True, maximum=SEED_MAX, meaning="sampling seed"),
        f"{prefix}.top_p": Number(
            0, whole=False, above=True, maximum=1, meaning="nucleus sampling (1: no cut)"
        ),
        f"{prefix}.until": Nested(text=True, meaning="stop sequences (added to the default)"),
    }


_MODEL: dict[str, Rule] = {
    "_target_": Text(meaning="the backend's class (allow-listed)"),
    "name": Text(meaning="label of runs (folders, reports)"),
    "max_length": Number(1, optional=True, maximum=SIZE_MAX, meaning="context window in tokens"),
    "max_gen_toks": Number(1, maximum=SIZE_MAX, meaning="generation length when a task sets none"),
    "batch_size": Number(1, words=("auto",), maximum=SIZE_MAX, meaning="requests per forward pass"),
    "token_budget": Number(1, optional=True, maximum=SIZE_MAX, meaning="tokens per forward pass"),
    "cache_budget": Number(1, optional=True, maximum=SIZE_MAX, meaning="KV-cache tokens"),
    "num_concurrent": Number(1, maximum=1024, meaning="requests in flight at once"),
    "batch_prompts": Number(1, maximum=SIZE_MAX, meaning="prompts per request"),
    "max_retries": Number(0, maximum=100, meaning="retries per request"),
    "backoff_s": Number(0, whole=False, maximum=3600, meaning="first retry delay, s"),
    "timeout_s": Number(
        0, whole=False, above=True, maximum=86400, meaning="seconds one whole answer may take"
    ),
    "max_response_mb": Number(
        0, whole=False, above=True, maximum=1_000_000, meaning="the largest answer read, MB"
    ),
    "seed": Number(0, maximum=SEED_MAX, meaning="the fake or random model's seed"),
    "n_embd": Number(1, maximum=65536, meaning="width of the random GPT-2"),
    "n_head": Number(1, maximum=1024, meaning="attention heads of the random GPT-2"),
    "n_layer": Number(1, maximum=1024, meaning="layers of the random GPT-2"),
    "pretrained": Text(optional=True, meaning="hub id or folder of the weights"),
    "revision": Text(optional=True, meaning="hub commit or label pinning the model"),
    "dtype": Choice(("float32", "float16", "bfloat16", "auto"), meaning="weights' dtype"),
    "device": Text(
        pattern=r"auto|mps|meta|(cpu|cuda|xpu|npu|hpu)(:[0-9]+)?",
        shape="auto, cpu, cuda, cuda:<n> or mps (also xpu, npu, hpu, meta)",
        meaning="where the weights run",
    ),
    "device_map": Nested("mapping", optional=True, text=True, meaning="spread over GPUs"),
    "max_memory": Nested("mapping", optional=True, meaning="memory per device (device_map)"),
    "offload_folder": Text(optional=True, meaning="where weights that fit nowhere go"),
    "fused_gelu": Flag(meaning="torch's fused tanh-GELU"),
    "batch_invariant": Flag(meaning="a score's bits independent of its batch"),
    "share_prefix": Flag(meaning="run a shared context once"),
    "chat_template_kwargs": Nested(
        "mapping", optional=True, meaning="the chat template's variables (enable_thinking)"
    ),
    "gguf": Text(optional=True, meaning="a GGUF file to convert"),
    "sha256": Text(optional=True, meaning="the weights file's SHA-256 (null: any file)"),
    "path": Text(meaning="the replayed samples file or run folder"),
    "answer": Text(optional=True, meaning="the fake model's reply"),
    "replies": Nested("mapping", meaning="the fake model's replies by prompt substring"),
    "base_url": Text(meaning="the API root of a served model"),
    "model": Nested(
        "mapping",
        optional=True,
        text=True,
        meaning="the served model's name (mill judge: the answering model's identity)",
    ),
    "tokenizer": Text(optional=True, meaning="the served model's tokenizer (or remote)"),
    "api_key_env": Text(optional=True, meaning="NAME of the variable holding the API key"),
    "prompt_ids": Choice(("auto", True, False), meaning="send token ids, text, or ask"),
    "sampling": Nested("mapping", optional=True, meaning="fields sent with each generation"),
}
"""The model group's settings (a judge is a model config: they are the judge's too)."""

MODEL_KEYS = tuple(_MODEL)
"""The keys of a model config (``model.<key>``, ``judge.<key>`` for the judge)."""

_SCORE: dict[str, Rule] = {  # the parameters of the answer-matching metrics
    "metrics.*._target_": Text(meaning="the metric's class (allow-listed)"),
    "metrics.*.ignore_case": Flag(meaning="compare without case"),
    "metrics.*.ignore_punctuation": Flag(meaning="compare without punctuation"),
    "metrics.*.regexes_to_ignore": Nested(meaning="patterns removed before comparing"),
    "metrics.*.extract_pattern": Text(optional=True, meaning="regex taking the answer"),
    "metrics.*.extract_group": Number(-1000, maximum=1000, meaning="which match (-1: the last)"),
    "metrics.*.correct": Number(
        0, whole=False, maximum=1_000_000, meaning="reward of a correct answer"
    ),
    "metrics.*.wrong": Number(
        0, whole=False, maximum=1_000_000, meaning="penalty of a wrong answer"
    ),
    "metrics.*.len_normalised": Flag(meaning="score by per-byte log-likelihood"),
    "metrics.*.mode": Choice(("strict", "loose"), meaning="IFEval's checking"),
    "metrics.*.patterns": Nested(optional=True, meaning="the grade's regexes"),
    "metrics.*.reference_categories": Nested(meaning="categories judged with a reference"),
    "metrics.*.scale": Nested(optional=True, meaning="the grade's [lowest, highest]"),
    "metrics.*.templates": Nested("mapping", meaning="judge templates by name"),
    "metrics.*.template_names": Nested("mapping", meaning="which template for which turn"),
    "metrics.*.templates_file": Text(optional=True, meaning="a JSONL of judge templates"),
    "metrics.arena_hard_score.rounds": Number(
        1, maximum=ITERS_MAX, meaning="bootstrap rounds of the score"
    ),
    "metrics.arena_hard_score.weight": Number(
        1, maximum=1000, meaning="battles a strong verdict counts"
    ),
    **_generation("metrics.arena_hard_score.judge_generation"),
}

SETTINGS: dict[str, Rule] = {
    # runner: how an experiment runs
    **group_rules("runner", RunnerSettings),  # declared with its fields
    # execution: how code tasks run the model's programs
    **group_rules("execution", ExecutionFields),  # declared with its fields
    # reasoning: what of a generation the metrics read (seed 002's text_post_processed)
    "reasoning.tags": Nested(meaning="[open, close] tag pairs of reasoning blocks removed"),
    # data: where the tasks' documents come from
    **group_rules("data", DataFields),  # declared with its fields
    # task: the benchmark
    "task._target_": Text(meaning="the task's class (allow-listed)"),
    "task.name": Text(meaning="the task's name in results"),
    "task.num_fewshot": Number(
        0, optional=True, maximum=10_000, meaning="few-shot examples per prompt"
    ),
    "task.limit": Number(
        1, optional=True, maximum=SIZE_MAX, meaning="docs per task (task=lm_eval: see below)"
    ),
    "task.fewshot_seed": Number(0, maximum=SEED_MAX, meaning="seed of the few-shot examples drawn"),
    "task.repeats": Number(1, maximum=10_000, meaning="generations per doc (pass@k, maj@k)"),
    "task.max_turns": Number(
        1, optional=True, maximum=10_000, meaning="turns answered of each conversation"
    ),
    "task.fewshot_sampler": Choice(("random", "first_n"), meaning="how examples are drawn"),
    "task.sample_split": Text(optional=True, meaning="the split evaluated (null: the task's)"),
    "task.fewshot_split": Text(optional=True, meaning="the split examples come from"),
    "task.chat_template": Flag(optional=True, meaning="prompts in the chat template"),
    "task.fewshot_as_multiturn": Flag(meaning="few-shot examples as chat turns"),
    "task.system_prompt": Text(optional=True, meaning="a system message before each prompt"),
    "task.math_verify": Flag(meaning="check answers by equivalence (math-verify)"),
    "task.code_block": Choice(("leading", "first"), meaning="which fenced block is the code"),
    "task.confirm_run_unsafe_code": Flag(meaning="lm-eval code tasks may run (sandboxed)"),
    "task.dataset.revision": Text(optional=True, meaning="hub commit of the dataset"),
    "task.dataset.data_files": Nested("mapping", meaning="your own file per split"),
    "task.dataset_overrides": Nested(
        "mapping", optional=True, text=True, meaning="lm-eval TaskConfig keys, or a YAML file"
    ),
    "task.subjects": Nested(optional=True, text=True, meaning="the subjects run"),
    "task.tasks": Nested(text=True, meaning="the group's member tasks"),
    "task.include_path": Nested(optional=True, text=True, meaning="lm-eval YAML folders"),
    "task.include_defaults": Flag(meaning="index lm-eval's own tasks too"),
    "task.random_seed": Number(0, optional=True, maximum=SEED_MAX, meaning="lm-eval's python seed"),
    "task.numpy_random_seed": Number(
        0, optional=True, maximum=SEED_MAX, meaning="lm-eval's numpy seed"
    ),
    "task.torch_random_seed": Number(
        0, optional=True, maximum=SEED_MAX, meaning="lm-eval's torch seed"
    ),
    "task.fewshot_random_seed": Number(
        0, optional=True, maximum=SEED_MAX, meaning="lm-eval's few-shot seed"
    ),
    "task.questions": Text(meaning="the questions file (judged tasks)"),
    "task.references": Text(optional=True, meaning="reference answers (judged tasks)"),
    "task.baseline": Text(optional=True, meaning="the baseline's answers (pairwise judging)"),
    **_generation("task.generation"),
    # model: every backend's settings (a backend without the key is not checked)
    **{f"model.{key}": rule for key, rule in _MODEL.items()},
    # judge: a model config (the model's settings, checked under judge.) and its own
    **{f"judge.{key}": rule for key, rule in _MODEL.items()},
    "judge.max_invalid": Number(
        0, whole=False, maximum=1, meaning="share of judgments that may fail to parse"
    ),
    "judge.cache": Text(
        optional=True, flags=True, meaning="shared (true says the same), run, false or a folder"
    ),
    "judge.allow_targets": Nested(meaning="extra _target_ prefixes of the judge's config"),
    **_generation("judge.generation"),
    # report: the console report while a run goes
    **group_rules("report", ReportSettings),  # declared with its fields
    # sink: experiment trackers
    "sink.*._target_": Text(meaning="the tracker's class (allow-listed)"),
    "sink.mlflow.tracking_uri": Text(optional=True, meaning="MLflow's store"),
    "sink.mlflow.experiment": Text(meaning="MLflow experiment"),
    "sink.mlflow.run_name": Text(optional=True, meaning="MLflow run name"),
    "sink.mlflow.tags": Nested("mapping", meaning="tags of the MLflow run"),
    "sink.wandb.project": Text(meaning="W&B project"),
    "sink.wandb.entity": Text(optional=True, meaning="W&B entity"),
    "sink.wandb.mode": Choice(("online", "offline", "disabled"), optional=True, meaning="W&B"),
    "sink.wandb.dir": Text(optional=True, meaning="W&B's files (null: the run folder)"),
    "sink.wandb.group": Text(optional=True, meaning="W&B group"),
    "sink.wandb.job_type": Text(meaning="W&B job type"),
    "sink.wandb.tags": Nested(meaning="tags of the W&B run"),
    # metrics: their parameters
    "metrics.pass_at_k.k": Number(
        1, each=True, maximum=10_000, meaning="k of pass@k (a list: one row per k)"
    ),
    "metrics.maj_at_k.k": Number(
        1, each=True, maximum=10_000, meaning="k of maj@k (a list: one row per k)"
    ),
    "metrics.ece.bins": Number(1, maximum=100_000, meaning="equal-width confidence bins"),
    **_SCORE,
    # the primary config
    "allow_targets": Nested(meaning="extra _target_ module prefixes"),
}
"""Full key -> its rule: every setting Mill checks (``*``: any metric or sink)."""

_PROGRESS = Choice(("auto", "always", "never"), meaning="progress and tables: auto, plain")
_TRUST = Flag(meaning="read files changed since their run wrote them (and say so)")
COMMANDS: dict[str, dict[str, Rule]] = {
    "report": {
        "runs": Nested(text=True, meaning="run folders and/or sweep folders"),
        "out": Text(meaning="where everything is written"),
        "trust_edited": _TRUST,
        "progress": _PROGRESS,
    },
    "compare": {
        "a": Text(meaning="run folder A (the baseline)"),
        "b": Text(meaning="run folder B"),
        "iters": Number(1, maximum=ITERS_MAX, meaning="paired bootstrap resamples"),
        "seed": Number(0, maximum=SEED_MAX, meaning="seed of the resamples"),
        "alpha": Number(
            0, whole=False, above=True, maximum=0.5, meaning="significance level (CI 1 - alpha)"
        ),
        "tasks": Nested(optional=True, text=True, meaning="only these tasks"),
        "ignore_settings": Nested(text=True, meaning="task settings keys not compared"),
        "allow_different_judges": Flag(meaning="compare scores of different judges"),
        "trust_edited": _TRUST,
        "out": Text(optional=True, meaning="also write compare.{json,txt,html} here"),
        "progress": _PROGRESS,
    },
    "runs": {
        "dir": Text(meaning="where the runs are"),
        "tasks": Nested(optional=True, text=True, meaning="only runs of these tasks"),
        "models": Nested(optional=True, text=True, meaning="only runs of these models"),
        "limit": Number(
            1, optional=True, maximum=SIZE_MAX, meaning="the newest N runs (null: all)"
        ),
        "open": Number(
            1, optional=True, maximum=SIZE_MAX, meaning="open the report of the Nth run listed"
        ),
        "all": Flag(meaning="list failed runs too (hidden unless asked)"),
        "progress": _PROGRESS,
    },
    "view": {
        "run": Text(optional=True, meaning="a run or sweep folder (null: the newest run)"),
        "dir": Text(meaning="where the runs are (run=null)"),
        "open": Flag(meaning="open the page in the browser"),
        "trust_edited": _TRUST,
    },
    "judge": {
        "run": Text(meaning="the finished run whose answers are judged"),
        "trust_edited": _TRUST,
        "allow_targets": Nested(meaning="extra _target_ module prefixes"),
    },
}
"""The settings of the commands (``mill report``, ``mill compare``, ``mill runs``,
``mill view``, ``mill judge``; ``conf/<command>.yaml``), at their config's root, by command."""


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
    "mill.lm_eval.": {
        "task.limit": Number(
            0,
            whole=False,
            above=True,
            optional=True,
            maximum=SIZE_MAX,
            meaning="docs per task: a count, or a fraction below 1 (lm-eval's --limit)",
        ),
    },
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
