"""The settings schema (mill.schema): every declared numeric setting refuses inf, nan, the
wrong type, and negative or zero values where they make no sense, in one line naming the
full key, the value and the accepted range; the subsystems hold their settings to the same
rules; a trivial program must run under the sandbox's limits; a tokenizer without BOS and
EOS is one line."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mill.errors import ConfigError, MillError
from mill.runner.settings import check_settings
from mill.schema import SETTINGS, Choice, Flag, Nested, Number, Text, check_number, rule_of


def _nested(key: str, value: Any) -> dict[str, Any]:
    node: dict[str, Any] = {}
    out = node
    *parents, last = key.split(".")
    for part in parents:
        node[part] = {}
        node = node[part]
    node[last] = value
    return out


def _refused(rule: Number) -> list[Any]:
    """The values ``rule`` must refuse: non-finite numbers, text, and the numbers below
    its range (0 and negatives where it starts above them)."""
    values: list[Any] = [math.inf, -math.inf, math.nan, "abc", True, [], {}]
    minimum = rule.minimum
    if minimum is not None and (minimum > 0 or rule.above):
        values.append(0 if rule.whole else 0.0)
    if minimum is not None and minimum >= 0:
        values.append(-1)
    if rule.whole:
        values.append((minimum or 0) + 0.5)
    return values


def _concrete(key: str) -> str:
    """A declared key with ``*`` (any metric or sink) as one full key."""
    return key.replace("*", "exact_match" if key.startswith("metrics.") else "mlflow")


NUMBERS = {_concrete(k): r for k, r in SETTINGS.items() if isinstance(r, Number)}
CASES = [(key, value) for key, rule in NUMBERS.items() for value in _refused(rule)]


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v!r}" for k, v in CASES])
def test_every_numeric_setting_refuses_what_makes_no_sense(key: str, value: Any) -> None:
    """Issue 35, item 1: the table of every declared numeric setting (runner, execution,
    data, task, model, judge, report, metrics) x inf, nan, text, a bool, a list, zero and
    negatives where the range excludes them; refused at composition (check_settings,
    before any data or model)."""
    with pytest.raises(ConfigError) as info:
        check_settings(_nested(key, value))
    message = str(info.value)
    assert message.startswith(f"{key}={value!r} is not allowed: give "), message
    assert NUMBERS[key].accepted() in message and "\n" not in message


def test_sensible_values_pass_and_whole_numbers_come_back_as_int() -> None:
    for key, rule in NUMBERS.items():
        good = (rule.minimum or 0) + (1 if rule.above or rule.whole else 0.5)
        if rule.maximum is not None:
            good = min(good, rule.maximum)
        checked = check_number(key, float(good) if rule.whole else good, rule)
        if rule.whole:
            assert isinstance(checked, int) and checked == good
    assert check_number("k", [1, 10], SETTINGS["metrics.pass_at_k.k"]) == [1, 10]
    assert check_number("b", "AUTO", SETTINGS["model.batch_size"]) == "auto"
    assert check_number("m", None, SETTINGS["model.max_length"]) is None


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"execution": {"timeout_s": math.inf}}, "execution.timeout_s=inf is not allowed"),
        ({"execution": {"timeout_s": math.nan}}, "execution.timeout_s=nan is not allowed"),
        ({"execution": {"memory_gb": math.nan}}, "execution.memory_gb=nan"),
        ({"execution": {"max_file_mb": math.nan}}, "execution.max_file_mb=nan"),
        ({"model": {"timeout_s": math.inf}}, "model.timeout_s=inf"),
        ({"metrics": {"pass_at_k": {"k": 0}}}, "metrics.pass_at_k.k=0"),
        ({"metrics": {"pass_at_k": {"k": "abc"}}}, "metrics.pass_at_k.k='abc'"),
        ({"metrics": {"pass_at_k": {"k": [1, 0]}}}, "metrics.pass_at_k.k=[1, 0]"),
        ({"metrics": {"ece": {"bins": 0}}}, "metrics.ece.bins=0"),
    ],
)
def test_the_issues_cases_are_one_line_at_composition(override: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match="^" + fragment.replace("[", r"\[").replace(".", r"\.")):
        check_settings(override)


def test_the_subsystems_hold_their_settings_to_the_same_rules() -> None:
    """Built from Python (mill.evaluate's objects, a test), not through a config."""
    from mill.execution import ExecutionSettings
    from mill.metrics import ExpectedCalibrationError
    from mill.metrics.repeats import MajAtK, PassAtK
    from mill.runner.settings import RunnerSettings

    with pytest.raises(ConfigError, match=r"^execution\.timeout_s=inf is not allowed"):
        ExecutionSettings(timeout_s=math.inf)
    with pytest.raises(ConfigError, match=r"^execution\.memory_gb=nan is not allowed"):
        ExecutionSettings(memory_gb=math.nan)
    with pytest.raises(ConfigError, match=r"^metrics\.pass_at_k\.k=0 is not allowed"):
        PassAtK(k=0)
    with pytest.raises(ConfigError, match=r"^metrics\.maj_at_k\.k='abc' is not allowed"):
        MajAtK(k="abc")
    with pytest.raises(ConfigError, match=r"^metrics\.ece\.bins=0 is not allowed"):
        ExpectedCalibrationError(bins=0)
    with pytest.raises(ConfigError, match=r"^runner\.timeout_s=inf is not allowed"):
        RunnerSettings.parse({"timeout_s": math.inf})
    assert PassAtK(k=[1, 4]).ks == [1, 4] and ExpectedCalibrationError(bins=5).bins == 5


@pytest.mark.slow
def test_a_limit_too_small_for_a_trivial_program_is_refused_at_start() -> None:
    """Issue 35, item 1: execution.memory_gb=0.001 ran and marked every program out of
    memory (exit 0); the start-up probe runs 'pass' under the configured limits."""
    from mill.execution import ExecutionSettings, check_sandbox

    check_sandbox(ExecutionSettings())
    with pytest.raises(ConfigError) as info:
        check_sandbox(ExecutionSettings(memory_gb=0.001))
    message = str(info.value)
    assert message.startswith("the program 'pass' does not run under execution.timeout_s=")
    assert "execution.memory_gb=0.001" in message and "MemoryError" in message


def test_a_tokenizer_without_bos_or_eos_is_one_line(tmp_path: Path) -> None:
    """Issue 35, item 1: a served model's model.tokenizer with no BOS or EOS token ended in
    TypeError("int() argument must be ... not 'NoneType'")."""
    from transformers import AutoTokenizer

    from mill.model.tokenizing import TokenizingLM
    from tests.helpers import make_chat_tokenizer

    tokenizer = AutoTokenizer.from_pretrained(make_chat_tokenizer(tmp_path / "tok"))
    tokenizer.bos_token = None
    tokenizer.eos_token = None
    assert tokenizer.bos_token_id is None and tokenizer.eos_token_id is None
    model = SimpleNamespace(tokenizer=tokenizer)  # the backend's state _init_tokenizer reads
    with pytest.raises(MillError, match=r"^model\.tokenizer: the tokenizer .* has neither a BOS"):
        TokenizingLM._init_tokenizer(model)  # type: ignore[arg-type]


def test_a_missing_value_names_its_full_key_and_the_option_that_needs_it() -> None:
    """Issue 35, item 1: ``Missing mandatory value: path`` named only its last key."""
    import mill

    with pytest.raises(ConfigError) as info:
        mill.evaluate("arc_easy", "replay", limit=2)
    assert str(info.value) == (
        "model.path has no value (model=replay needs it): set model.path=<value> on the "
        "command line"
    )


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            {"limit": 5, "task": {"limit": None}},
            "limit=5 is set at the root, where Mill reads no 'limit': did you mean task.limit=5?",
        ),
        ({"foo": 1}, "foo=1 is set at the root, where Mill reads no 'foo': the root keys are"),
        (
            {"data": {"source": "bundled", "dir": "/my/data"}},
            "data.dir='/my/data' is set, but data=bundled reads no folder (the folder would be "
            "ignored): add data=local to read /my/data, or drop data.dir",
        ),
    ],
)
def test_a_setting_that_means_nothing_here_is_refused_with_a_hint(node: dict, message: str):
    """Issue 35, item 1: ``+limit=5`` ran every document and ``data.dir`` without
    ``data=local`` ran the bundled sample, silently."""
    with pytest.raises(ConfigError) as info:
        check_settings(node)
    assert str(info.value).startswith(message), str(info.value)
    check_settings({"data": {"source": "local", "dir": "/my/data"}, "task": {"limit": 5}})


def test_a_tasks_setting_written_at_the_root_names_where_it_belongs() -> None:
    """``limit=5`` was refused with a hint to write ``+limit=5``, which then ran every
    document; the hint is ``task.limit``."""
    import mill

    with pytest.raises(ConfigError, match=r"did you mean task\.limit=\.\.\.\?"):
        mill.compose(["task=arc_easy", "limit=5"])
    with pytest.raises(ConfigError, match=r"^limit=5 is set at the root.*task\.limit=5\?"):
        mill.evaluate("arc_easy", "fake", overrides=["+limit=5"])


def _refused_other(rule: Choice | Flag | Text | Nested) -> list[Any]:
    """What a choice, boolean, string or list setting must refuse: the wrong types, and a
    word that is not one of the choices."""
    if isinstance(rule, Choice):
        return ["not-a-choice", 1.5, 7, {}, *([] if True in rule.choices else [True])]
    if isinstance(rule, Flag):
        return ["yes", "abc", 1, 0.0, {}]
    if isinstance(rule, Text):
        return [{}, *([] if rule.flags else [True, False]), math.inf, math.nan, 123, 1.5]
    return [5, 1.5, True, *([] if rule.text else ["abc"])]


OTHERS = {_concrete(k): r for k, r in SETTINGS.items() if not isinstance(r, Number)}
OTHER_CASES = [(key, value) for key, rule in OTHERS.items() for value in _refused_other(rule)]


@pytest.mark.parametrize(("key", "value"), OTHER_CASES, ids=[f"{k}={v!r}" for k, v in OTHER_CASES])
def test_every_choice_flag_and_string_setting_refuses_the_wrong_type(key: str, value: Any):
    """Issue 35, item 1: a choice that is not one of its values, a boolean that is not a
    boolean, a string setting given a mapping: one line naming the full key, the value and
    what is accepted (the choices listed), at composition."""
    with pytest.raises(ConfigError) as info:
        check_settings(_nested(key, value))
    message = str(info.value)
    unknown = isinstance(OTHERS[key], Choice) and isinstance(value, str)
    said = "is unknown: give " if unknown else "is not allowed: give "
    assert message.startswith(f"{key}={value!r} {said}"), message
    assert OTHERS[key].accepted() in message and "\n" not in message


SCALARS = sorted(
    _concrete(k) for k, r in SETTINGS.items() if not r.each and not isinstance(r, Nested)
)


@pytest.mark.parametrize("key", SCALARS)
def test_a_list_where_one_value_is_expected_is_refused_with_a_hint(key: str) -> None:
    """Issue 35, item 1: every declared scalar setting given a list names the key, says
    that one value is expected and how to run each value (a sweep)."""
    with pytest.raises(ConfigError) as info:
        check_settings(_nested(key, ["a", "b"]))
    message = str(info.value)
    assert message.startswith(f"{key}=['a', 'b'] is not allowed: give "), message
    assert message.endswith(f"one value, not a list (a run per value: mill -m {key}=a,b)")


def test_choices_and_flags_take_their_values() -> None:
    assert check_number("runner.cpu", True, SETTINGS["runner.cpu"]) is True
    assert check_number("runner.cpu", "AUTO", SETTINGS["runner.cpu"]) == "auto"
    assert check_number("task.code_block", "first", SETTINGS["task.code_block"]) == "first"
    assert check_number("task.chat_template", None, SETTINGS["task.chat_template"]) is None
    assert check_number("runner.cache", False, SETTINGS["runner.cache"]) is False
    assert check_number("model.revision", "1234", SETTINGS["model.revision"]) == "1234"
    assert check_number("task.tasks", "arc_easy", SETTINGS["task.tasks"]) == "arc_easy"
    assert check_number("runner.resume", "True", SETTINGS["runner.resume"]) is True
    assert SETTINGS["task.fewshot_sampler"].accepted() == "one of random or first_n"


def _package(path: Path, group: str) -> str:
    """Where a file of ``conf/`` lands in the composed config (``# @package`` or its
    group; ``<group>_base.yaml`` is its group's)."""
    for line in path.read_text().splitlines():
        if line.startswith("# @package "):
            return line.split()[-1]
    return group


def _conf_files() -> list[tuple[Path, str]]:
    conf = Path(__file__).resolve().parents[1] / "conf"
    files = [(f, f.stem[: -len("_base")]) for f in conf.glob("*_base.yaml")]
    for folder in sorted(p for p in conf.iterdir() if p.is_dir() and p.name != "hydra"):
        files += [(f, _package(f, folder.name)) for f in sorted(folder.glob("*.yaml"))]
    files.append((conf / "mill.yaml", ""))
    return files


def _walk(node: Any, key: str) -> list[tuple[str, Any]]:
    """The (full key, value) of every setting under ``node``: a declared key ends the walk
    (a list or mapping setting's items are its subsystem's), else a mapping is walked into
    and any other leaf is returned undeclared."""
    if key and rule_of(key) is not None:
        return [(key, node)]
    if isinstance(node, dict) and node:
        return [
            found
            for name, value in node.items()
            if not (name == "defaults" and key.count(".") < 1) and not (not key and name == "hydra")
            for found in _walk(value, f"{key}.{name}" if key else str(name))
        ]
    return [(key, node)]


def test_every_key_of_every_shipped_config_is_declared_and_its_default_passes() -> None:
    """Issue 35, item 1: every leaf key of every config of every group in conf/ (each
    option, the shared bases, the primary config) is declared in mill.schema.SETTINGS,
    so a new key cannot be added without its type, range or choices and meaning; and
    every shipped default passes its own rule (interpolations and ??? aside)."""
    import yaml

    undeclared, checked = [], 0
    for path, package in _conf_files():
        data = yaml.safe_load(path.read_text()) or {}
        for key, value in _walk(data, package):
            rule = rule_of(key)
            if rule is None:
                undeclared.append(f"{key} ({path.parent.name}/{path.name})")
            elif value != "???" and "${" not in str(value):
                check_number(key, value, rule)
                checked += 1
    assert not undeclared, "declare in mill/schema/ SETTINGS: " + ", ".join(undeclared)
    assert checked > 300


def test_a_wrong_choice_is_refused_at_composition_before_any_model_loads() -> None:
    import mill

    with pytest.raises(ConfigError, match=r"^task\.fewshot_sampler='last' is unknown: give "):
        mill.evaluate("arc_easy", "fake", limit=2, overrides=["task.fewshot_sampler=last"])
    with pytest.raises(ConfigError, match=r"^data\.skip_bad_rows='maybe' is not allowed: "):
        mill.evaluate("arc_easy", "fake", limit=2, overrides=["data.skip_bad_rows=maybe"])
    with pytest.raises(ConfigError, match=r"mill -m task\.limit=1,2\)$"):
        mill.evaluate("arc_easy", "fake", overrides=["task.limit=[1,2]"])


def test_the_subsystems_check_their_choices_by_the_declaration() -> None:
    """One list of choices per setting (mill.schema.SETTINGS): the data source, the HF
    dtype, the served model's prompt_ids and the few-shot sampler built from Python are
    refused by the declared choices, naming them."""
    from mill.data.load import DataSource
    from mill.model.hf import HFCausalLM
    from mill.model.served.openai_api import OpenAICompletions
    from mill.task.fewshot import choose_shots

    with pytest.raises(ConfigError, match=r"^data\.source='ftp' is unknown: give one of bundled"):
        DataSource("ftp")
    with pytest.raises(ConfigError, match=r"^model\.dtype='float8' is unknown: give one of "):
        HFCausalLM(pretrained="/nowhere", dtype="float8")
    with pytest.raises(ConfigError, match=r"^model\.prompt_ids='maybe' is unknown: give one of"):
        OpenAICompletions(base_url="http://127.0.0.1:9/v1", tokenizer="x", prompt_ids="maybe")
    with pytest.raises(ConfigError, match=r"^task\.fewshot_sampler='last' is unknown: give "):
        choose_shots("last", 2, 10, task="t", doc_id=0, seed=1)
    assert choose_shots("first_n", 2, 10, task="t", doc_id=0, seed=1) == [0, 1]


def test_the_judges_settings_are_typed_by_the_declaration() -> None:
    """mill.judging reads judge.max_invalid, judge.num_concurrent and
    judge.generation.* typed by the schema, as composition checked them (no second set of
    checks of its own)."""
    from omegaconf import OmegaConf

    from mill.judging import JudgeSettings

    def node(**settings: Any) -> Any:
        return OmegaConf.create({"_target_": "mill.model.fake.FakeLM", **settings})

    with pytest.raises(ConfigError, match=r"^judge\.max_invalid=2 is not allowed: give .*<= 1$"):
        JudgeSettings.parse(node(max_invalid=2))
    with pytest.raises(ConfigError, match=r"^judge\.num_concurrent=0 is not allowed: give "):
        JudgeSettings.parse(node(num_concurrent=0))
    with pytest.raises(ConfigError, match=r"^judge\.generation\.temperature=-1 is not allowed"):
        JudgeSettings.parse(node(generation={"temperature": -1}))
    settings = JudgeSettings.parse(node(max_invalid=0.5, generation={"max_gen_toks": 7.0}))
    assert settings.max_invalid == 0.5 and settings.generation.max_gen_toks == 7
    assert settings.model == {"_target_": "mill.model.fake.FakeLM"}


TEXTS = {_concrete(k): r for k, r in SETTINGS.items() if isinstance(r, Text)}
TEXT_CASES = [(key, value) for key in TEXTS for value in (123, 1.5, math.nan, 0)]


@pytest.mark.parametrize(("key", "value"), TEXT_CASES, ids=[f"{k}={v!r}" for k, v in TEXT_CASES])
def test_a_number_where_text_is_meant_is_refused_with_the_quoted_form(key: str, value: Any):
    """Issue 35, item 1: ``model.name=nan`` became a float and ``model.name=123`` passed as
    an int where a name is meant. Every string setting refuses a number (its text may not
    be what was typed: ``1e3`` reads as 1000.0) in one line that says how to quote it;
    the quoted text passes, as text (a setting with a pattern, ``model.device``: its shape
    is what the message offers, and the quoted number does not match it)."""
    with pytest.raises(ConfigError) as info:
        check_settings(_nested(key, value))
    message = str(info.value)
    shape = TEXTS[key].shape or "a string"
    assert message.startswith(f"{key}={value!r} is not allowed: give {shape}"), message
    assert message.endswith(f"; {value} was read as a number: quote it (\"{key}='{value}'\")")
    if not TEXTS[key].pattern:
        assert check_number(key, str(value), TEXTS[key]) == str(value)


def _checked(overrides: list[str]) -> dict[str, Any]:
    """The run's config composed from ``overrides`` (as ``mill`` composes it) and checked as
    a run checks it before any data or model loads."""
    from omegaconf import OmegaConf

    import mill

    resolved = OmegaConf.to_container(mill.compose(overrides), resolve=True)
    assert isinstance(resolved, dict)
    check_settings(resolved)
    return resolved


def test_the_quoted_number_is_text_on_the_command_line() -> None:
    with pytest.raises(ConfigError, match=r"^model\.name=123 is not allowed: give a string; "):
        _checked(["task=arc_easy", "model=fake", "model.name=123"])
    assert _checked(["task=arc_easy", "model=fake", "model.name='123'"])["model"]["name"] == "123"


TASK_NUMBERS = {k: r for k, r in NUMBERS.items() if k.startswith("task.")}
MEMBER_CASES = [
    (where, key, value)
    for where in ("task.piqa", "task.tasks[0]")
    for key, rule in TASK_NUMBERS.items()
    for value in _refused(rule)
]


def _group(where: str, key: str, value: Any) -> dict[str, Any]:
    """A composed task group with ``value`` at ``key`` (``task.<k>``) of its member
    ``where``: ``task.piqa`` (``task=[arc_easy,piqa]``) or ``task.tasks[0]`` (``task=arc``)."""
    member: dict[str, Any] = {"_target_": "mill.tasks.piqa.PIQA", "name": "piqa"}
    member.update(_nested(key.removeprefix("task."), value))
    if where == "task.piqa":
        return {
            "task": {"_target_": "mill.task.TaskGroup", "name": "arc_easy+piqa", "piqa": member}
        }
    return {"task": {"_target_": "mill.task.TaskGroup", "name": "arc", "tasks": [member]}}


@pytest.mark.parametrize(
    ("where", "key", "value"), MEMBER_CASES, ids=[f"{w}:{k}={v!r}" for w, k, v in MEMBER_CASES]
)
def test_every_numeric_setting_of_a_group_member_is_checked_by_its_full_key(
    where: str, key: str, value: Any
) -> None:
    """Issue 35, item 1: the members of a group (``task=arc``'s ``tasks`` list) and of
    ``task=[arc_easy,piqa]`` (each under ``task.<name>``) are checked key by key at
    composition, the message naming the member's full key (``task.piqa.limit``)."""
    full = f"{where}.{key.removeprefix('task.')}"
    with pytest.raises(ConfigError) as info:
        check_settings(_group(where, key, value))
    message = str(info.value)
    assert message.startswith(f"{full}={value!r} is not allowed: give "), message
    assert TASK_NUMBERS[key].accepted() in message and "\n" not in message


def test_a_members_settings_on_the_command_line_are_refused_before_any_model() -> None:
    """``mill task=[arc_easy,piqa] task.piqa.limit=-1`` was refused by the task itself
    (naming ``task.limit``), ``task.piqa.fewshot_sampler=bogus`` ran; ``task.limit`` for
    every member names each member's key."""
    cases = {
        "task.piqa.limit=-1": r"^task\.piqa\.limit=-1 is not allowed: give a whole number >= 1",
        "task.piqa.num_fewshot=nan": r"^task\.piqa\.num_fewshot=nan is not allowed",
        "task.piqa.fewshot_sampler=bogus": r"^task\.piqa\.fewshot_sampler='bogus' is unknown",
        "task.limit=2.5": r"^task\.arc_easy\.limit=2\.5 is not allowed",
        "task.piqa.name=7": r"^task\.piqa\.name=7 is not allowed: give a string; 7 was read",
    }
    for override, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            _checked(["task=[arc_easy,piqa]", "model=fake", override])
    with pytest.raises(ConfigError, match=r"^task\.tasks\[0\]\.limit=0 is not allowed"):
        check_settings(_group("task.tasks[0]", "task.limit", 0))
    check_settings(_group("task.piqa", "task.limit", 3))


def test_a_fraction_of_docs_is_lm_evals_limit_and_no_native_tasks() -> None:
    """``task.limit`` is a whole number of docs for Mill's tasks; lm-eval's suite also
    takes a fraction below 1 (lm-eval's --limit), by the rule of its ``_target_``."""
    suite = {"_target_": "mill.lm_eval.bridge.LMEvalSuite", "limit": 0.5}
    check_settings({"task": suite})
    with pytest.raises(
        ConfigError, match=r"^task\.limit=0 is not allowed: give a finite number > 0"
    ):
        check_settings({"task": {**suite, "limit": 0}})
    with pytest.raises(ConfigError, match=r"^task\.limit=0\.5 is not allowed: give a whole"):
        check_settings({"task": {"_target_": "mill.tasks.arc.ArcEasy", "limit": 0.5}})


def test_settings_are_key_for_key_and_rule_for_rule_what_the_rule_table_declared() -> None:
    """Every group is declared by typed fields now (mill/schema/groups.py, components.py,
    commands.py); SETTINGS, BY_TARGET, MODEL_KEYS and COMMANDS built from them are, in order,
    what main's rule tables declared at 7adc9bf (tests/support/settings_7adc9bf.json, written
    from that commit)."""
    import json

    from mill.schema import BY_TARGET, COMMANDS, MODEL_KEYS

    frozen = json.loads((Path(__file__).parent / "support/settings_7adc9bf.json").read_text())
    assert [[k, repr(r)] for k, r in SETTINGS.items()] == frozen["settings"]
    by_target = {p: [[k, repr(r)] for k, r in rules.items()] for p, rules in BY_TARGET.items()}
    assert by_target == frozen["by_target"]
    assert list(MODEL_KEYS) == frozen["model_keys"]
    commands = {c: [[k, repr(r)] for k, r in rules.items()] for c, rules in COMMANDS.items()}
    assert commands == frozen["commands"]


def test_no_rule_is_declared_beside_the_fields() -> None:
    """mill/schema/__init__.py builds SETTINGS, COMMANDS and BY_TARGET from fields only: it
    constructs no rule of a setting of its own."""
    import inspect

    import mill.schema

    source = inspect.getsource(mill.schema)
    declarations = source[source.index("SETTINGS: dict") : source.index("def typed_command")]
    declarations += source[source.index("BY_TARGET: dict") : source.index("def _places")]
    for rule in ("Number(", "Choice(", "Flag(", "Text(", "Nested("):
        assert rule not in declarations
