"""The report commands' settings (mill report, mill compare, mill runs) are typed by their
declarations in mill.schema.COMMANDS: every key of their configs is declared, every numeric
one refuses what makes no sense, and a flag that is not a boolean is refused (it was read
with bool(), so ``trust_edited=no`` trusted edited files)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf

from mill.errors import ConfigError
from mill.report.settings import command_settings
from mill.schema import COMMANDS, Number

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_key_of_a_commands_config_is_declared_and_its_default_passes(command: str):
    data = yaml.safe_load((CONF / f"{command}.yaml").read_text())
    keys = {k for k in data if k not in ("defaults", "hydra", "command")}
    assert keys == set(COMMANDS[command]), "declare in mill.schema.COMMANDS"
    command_settings({k: data[k] for k in keys}, command)


def _refused(rule: Number) -> list[Any]:
    """Non-finite numbers, text, a bool, a fraction of a whole number, and the numbers
    below the range (zero where it starts above it)."""
    values: list[Any] = [math.inf, math.nan, -1, "abc", True]
    if rule.minimum is not None and (rule.minimum > 0 or rule.above):
        values.append(0)
    return values + ([2.5] if rule.whole else [])


CASES = [
    (command, key, value)
    for command, rules in COMMANDS.items()
    for key, rule in rules.items()
    if isinstance(rule, Number)
    for value in _refused(rule)
]


@pytest.mark.parametrize(("command", "key", "value"), CASES)
def test_every_numeric_command_setting_refuses_what_makes_no_sense(
    command: str, key: str, value: Any
) -> None:
    with pytest.raises(ConfigError) as info:
        command_settings({key: value}, command)
    assert str(info.value).startswith(f"{key}={value!r} is not allowed: give ")


@pytest.mark.parametrize("command", ["report", "compare"])
def test_trust_edited_is_a_boolean_never_any_word(command: str) -> None:
    with pytest.raises(ConfigError, match=r"^trust_edited='no' is not allowed: give true or false"):
        command_settings(OmegaConf.create({"trust_edited": "no"}), command)
    assert command_settings({"trust_edited": "false"}, command).trust_edited is False


def test_the_commands_refuse_a_bad_setting_before_reading_any_folder(tmp_path: Path) -> None:
    from mill.report.compare import compare_command
    from mill.report.rebuild import report_command
    from mill.report.runs import runs_command

    missing = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match=r"^iters=0 is not allowed"):
        compare_command(OmegaConf.create({"a": missing, "b": missing, "iters": 0}))
    with pytest.raises(ConfigError, match=r"^alpha=nan is not allowed"):
        compare_command(OmegaConf.create({"a": missing, "b": missing, "alpha": math.nan}))
    with pytest.raises(ConfigError, match=r"^trust_edited='yes' is not allowed"):
        report_command(OmegaConf.create({"runs": [missing], "out": missing, "trust_edited": "yes"}))
    with pytest.raises(ConfigError, match=r"^limit=0 is not allowed"):
        runs_command(OmegaConf.create({"dir": missing, "limit": 0}))
    with pytest.raises(ConfigError, match=r"^open=-1 is not allowed"):
        runs_command(OmegaConf.create({"dir": missing, "open": -1}))
