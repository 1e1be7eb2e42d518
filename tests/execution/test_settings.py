"""The execution settings and verdicts: validation, config, cache identity (no processes)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from mill.errors import ConfigError, MillError
from mill.execution import ExecutionSettings, Verdict, check_sandbox, verdict_key
from mill.execution.settings import default_python


def test_config_group_builds_the_settings():
    import importlib.resources as resources

    folder = resources.files("mill.conf") / "execution"
    bwrap = OmegaConf.to_container(OmegaConf.load(str(folder / "bwrap.yaml")))
    settings = ExecutionSettings.from_config(bwrap)
    assert settings == ExecutionSettings()  # the YAML states the defaults, no others
    assert OmegaConf.load(str(folder / "none.yaml")).sandbox == "none"


@pytest.mark.parametrize(
    "values",
    [
        {"timeout_s": 0},
        {"timeout_s": -1.0},
        {"memory_gb": 0},
        {"workers": 0},
        {"sandbox": "docker"},
        {"max_processes": 0},
        {"python": "/nonexistent/python"},
        {"no_such_key": 1},
    ],
)
def test_bad_settings_are_one_line_config_errors(values):
    with pytest.raises(ConfigError) as err:
        ExecutionSettings.from_config(values)
    message = str(err.value)
    assert "\n" not in message
    assert next(iter(values)) in message


def test_none_without_allow_unsafe_is_refused():
    with pytest.raises(MillError, match="allow_unsafe=true"):
        check_sandbox(ExecutionSettings(sandbox="none"))
    check_sandbox(ExecutionSettings(sandbox="none", allow_unsafe=True))


def test_identity_keys_what_changes_a_verdict_and_nothing_else():
    base = ExecutionSettings()
    assert base.identity()["python"]  # resolved interpreter, never None
    assert verdict_key("x=1", base) == verdict_key("x=1", ExecutionSettings(workers=7))
    assert verdict_key("x=1", base) != verdict_key("x=2", base)
    for changed in (
        ExecutionSettings(timeout_s=10.0),
        ExecutionSettings(memory_gb=1.0),
        ExecutionSettings(sandbox="none", allow_unsafe=True),
        ExecutionSettings(max_output_bytes=10),
    ):
        assert verdict_key("x=1", base) != verdict_key("x=1", changed)


def test_default_python_is_the_base_interpreter():
    import sys

    assert default_python().startswith(sys.base_prefix)


def test_verdict_round_trip_and_status_check():
    verdict = Verdict("failed", "AssertionError: x", 0.25, "tail")
    assert Verdict.from_dict(verdict.to_dict()) == verdict
    assert not verdict.passed and Verdict("passed").passed
    with pytest.raises(ValueError):
        Verdict("maybe")


def test_the_command_line_composes_the_execution_group(compose):
    from omegaconf import OmegaConf

    default = ExecutionSettings.from_config(OmegaConf.to_container(compose().execution))
    assert default.sandbox == "bwrap" and not default.allow_unsafe
    unsafe = compose("execution=none", "execution.allow_unsafe=true", "execution.timeout_s=3")
    settings = ExecutionSettings.from_config(OmegaConf.to_container(unsafe.execution))
    assert (settings.sandbox, settings.allow_unsafe, settings.timeout_s) == ("none", True, 3)
    check_sandbox(settings)  # no process: none with allow_unsafe passes without a probe
