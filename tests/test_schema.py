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
from mill.schema import SETTINGS, Number, check_number


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
    if rule.minimum > 0 or rule.above:
        values.append(0 if rule.whole else 0.0)
    if rule.minimum >= 0:
        values.append(-1)
    if rule.whole:
        values.append(rule.minimum + 0.5)
    return values


CASES = [(key, value) for key, rule in SETTINGS.items() for value in _refused(rule)]


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v!r}" for k, v in CASES])
def test_every_numeric_setting_refuses_what_makes_no_sense(key: str, value: Any) -> None:
    """Issue 35, item 1: the table of every declared setting (runner, execution, model,
    report, metrics) x inf, nan, text, a bool, a list, zero and negatives where the range
    excludes them; refused at composition (check_settings, before any data or model)."""
    with pytest.raises(ConfigError) as info:
        check_settings(_nested(key, value))
    message = str(info.value)
    assert message.startswith(f"{key}={value!r} is not allowed: give "), message
    assert SETTINGS[key].accepted() in message and "\n" not in message


def test_sensible_values_pass_and_whole_numbers_come_back_as_int() -> None:
    for key, rule in SETTINGS.items():
        good = rule.minimum + (1 if rule.above or rule.whole else 0.5)
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
